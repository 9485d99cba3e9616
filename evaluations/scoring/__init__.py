"""Score what already happened, without running anything: ``evaluations score FILE``.

Three formats, one module each, chosen by ``--format`` or detected from the file (``detect_format``):

* ``classic`` (``classic.py``): labelled answers (``query``, ``context``, ``generated_answer``,
  ``reference_answer``, optional human ``label``) -> keyword correctness, coverage, judge-vs-label agreement;
* ``trec`` (``trec.py``): a TREC run file plus ``--qrels`` -> every retrieval metric (equal to trec_eval's);
* ``log`` (``logs.py``): JSONL logs of a production system -> retrieval metrics against a golden set, tokens
  per correct answer, cost, context waste, tier usage and escalation rate, confidence calibration.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from evaluations.core.errors import EvaluationsError

FORMATS = ("classic", "trec", "log")


def _first_line(path: Path) -> str:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    return line.strip()
    except OSError as exc:
        raise EvaluationsError(f"cannot read file: {exc}", where=str(path), fix="check the path") from None
    raise EvaluationsError("the file is empty", where=str(path), fix="give a non-empty file")


def detect_format(path: str | Path) -> str:
    """``trec`` for whitespace-separated ``qid Q0 docid rank score tag`` lines; for JSON/JSONL/CSV rows
    ``classic`` when the first row has ``generated_answer``, ``log`` when it has ``query_id`` and one of
    ``retrieved``/``tier``/``answer``; else an error asking for ``--format``."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationsError("file not found", where=str(path), fix="check the path")
    first = _first_line(path)
    if not first.startswith(("{", "[")) and len(first.split()) == 6 and ".csv" not in path.name:
        return "trec"
    from evaluations.datasets.rows import iter_rows

    try:
        _, row = next(iter(iter_rows(path)))
    except StopIteration:
        raise EvaluationsError("no rows in the file", where=str(path), fix="give a non-empty file") from None
    if "generated_answer" in row:
        return "classic"
    if "query_id" in row and any(key in row for key in ("retrieved", "tier", "answer")):
        return "log"
    raise EvaluationsError(
        f"cannot tell the format from the first row (keys: {sorted(row)[:8]})", where=f"{path}:1",
        fix="pass --format classic|trec|log (classic rows have 'generated_answer', log rows 'query_id')")


def json_ready(value):
    """NaN -> None, numpy scalars -> Python, recursively (JSON output never carries NaN)."""
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def dumps(payload: dict) -> str:
    return json.dumps(json_ready(payload), indent=2)


__all__ = ["FORMATS", "detect_format", "json_ready", "dumps"]
