"""Score what already happened, without running anything: ``evaluations score FILE``.

Three formats, one module each, chosen by ``--format`` or detected from the file (``detect_format``):

* ``classic`` (``classic.py``): labelled answers (``query``, ``context``, ``generated_answer``,
  ``reference_answer``, optional human ``label``) -> keyword correctness, coverage, judge-vs-label agreement;
* ``trec`` (``trec.py``): a TREC run file plus ``--qrels`` -> every retrieval metric (equal to trec_eval's);
* ``log`` (``logs.py``): JSONL logs of a production system -> retrieval metrics against a golden set, tokens
  per correct answer, cost, context waste, tier usage and escalation rate, confidence calibration.
"""

from __future__ import annotations

import json
from pathlib import Path

from evaluations.core.errors import EvaluationsError

FORMATS = ("classic", "trec", "log")


def _first_line(path: Path) -> tuple[int, str]:
    """(number, stripped text) of the first non-blank line. Checked (``utf8_lines``): the file is UTF-8 text, its
    gzip stream (.gz) valid and whole, and it has such a line; else one error naming the file (and line)."""
    from evaluations.datasets.rows import utf8_lines

    for number, line in utf8_lines(path):
        if line.strip():
            return number, line.strip()
    raise EvaluationsError("the file is empty", where=str(path), fix="give a non-empty file")


def detect_format(path: str | Path) -> str:
    """``trec`` for whitespace-separated ``qid Q0 docid rank score tag`` lines (not a TSV whose header names
    ``generated_answer``, a classic file of 6 columns); for JSON/JSONL/CSV/TSV/parquet rows
    ``classic`` when the first row has ``generated_answer``, ``log`` when it has ``query_id`` and one of
    ``retrieved``/``tier``/``answer``; else an error asking for ``--format``. A file of another type whose first
    line is not a JSON row nor 6 columns is an error naming that line and the 6 columns of a TREC run."""
    from evaluations.datasets.rows import SUFFIXES, iter_rows

    path = Path(path)
    if not path.is_file():
        raise EvaluationsError("file not found", where=str(path), fix="check the path")
    if not path.name.endswith(".parquet"):  # binary: rows only, read by iter_rows
        number, first = _first_line(path)
        columns = len(first.split())
        header = ".tsv" in path.name.lower() and "generated_answer" in first.split("\t")  # a classic TSV's header
        if not first.startswith(("{", "[")) and columns == 6 and ".csv" not in path.name.lower() and not header:
            return "trec"
        if not first.startswith(("{", "[")) and not path.name.endswith(SUFFIXES):
            raise EvaluationsError(
                f"not a TREC run: expected 6 columns (qid Q0 docid rank score tag), got {columns}",
                where=f"{path}:{number}", fix="write one 'qid Q0 docid rank score tag' per line; rows of answers or "
                f"logs go in a file named {', '.join(SUFFIXES)} (or pass --format)")

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
