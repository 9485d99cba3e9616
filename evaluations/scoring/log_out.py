"""``score --format log --out DIR``: a scored log's per-query evidence as files.

- ``DIR/cases.jsonl``: one ``CaseRecord`` line per query (``results.records``, the record type of a run folder's
  ``cases.jsonl``): its last attempt's answer, context ids, retrieval metrics, the judges' values and labels, and
  the reference-free judges' evidence (``claims``, ``chunk_relevance``, ``first_relevant_rank``);
- ``DIR/summary.json``: the run summary of those records, made as a run's is (``results.summary.summarize``;
  cut-offs from the records' metrics), with the log's own summary (the JSON ``--json`` prints) under ``log``. The
  folder is then a run folder: compare, gate and report read it as any run's.

``open_out`` checks DIR before anything is scored: a DIR that exists and is not empty is refused, unless
``--overwrite`` and it holds only these files (as ``run --overwrite`` replaces only a run's own files); a DIR that
cannot be made or written is one error naming it. ``write_out`` writes both files together
(``core.fsutil.atomic_write_files``); ``discard`` removes the folders ``open_out`` made when scoring fails, so a
refused or failed command leaves nothing behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.core.fsutil import atomic_write_files, check_writable_dir
from evaluations.results.records import CaseRecord
from evaluations.results.retrieval_metrics import parse_metric_name
from evaluations.results.rundata import RunSummary
from evaluations.results.summary import summarize

OUT_FILES = ("cases.jsonl", "summary.json")
_FIX = "choose another --out folder"


def open_out(path: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Check (and make) the ``--out`` folder (module docstring); the folders made, for ``discard``."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise EvaluationsError("--out is a file, not a folder", where=str(path), fix="choose a folder path for --out")
    if path.is_dir():
        present = sorted(p.name for p in path.iterdir())
        others = [name for name in present if name not in OUT_FILES]
        if others:
            raise EvaluationsError(
                f"the output folder is not empty (it holds {', '.join(others[:5])})", where=str(path),
                fix=f"{_FIX} (--overwrite replaces only {' and '.join(OUT_FILES)})")
        if present and not overwrite:
            raise EvaluationsError("the output folder holds the files of an earlier --out", where=str(path),
                                   fix="use --overwrite to replace them, or " + _FIX)
    missing = [p for p in (path, *path.parents) if not p.exists()]
    check_writable_dir(path, fix=_FIX)
    return missing


def run_summary(log: dict[str, Any], records: list[CaseRecord], name: str) -> RunSummary:
    """The run summary of a scored log's case records (module docstring), named ``name``."""
    ks = sorted({parsed[2] for r in records for key in r.metrics if (parsed := parse_metric_name(key))})
    asked = ((log.get("reference_free") or {}).get("metrics") or {}).keys()
    return summarize(records, name=name, ks=ks or [1, 3, 5, 10], scored=bool(ks), reference_free=list(asked),
                     extra={"log": log})


def write_out(path: str | Path, records: list[CaseRecord], log: dict[str, Any]) -> None:
    """``cases.jsonl`` and ``summary.json`` (the run summary, ``log`` the log's summary), written together."""
    summary = run_summary(log, records, Path(path).name)
    atomic_write_files(Path(path), {
        "cases.jsonl": "".join(r.dump_line() for r in records).encode("utf-8"),
        "summary.json": (json.dumps(summary.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n").encode(),
    }, fix=_FIX)


def discard(made: list[Path]) -> None:
    """Remove the folders ``open_out`` made (deepest first), if they are still empty."""
    for folder in made:
        try:
            folder.rmdir()
        except OSError:
            pass
