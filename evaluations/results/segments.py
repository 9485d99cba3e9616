"""Metrics per segment: every tag the cases carry (``category:x``, ``difficulty:y``, ``topic:z`` …) is a
segment; its values are the run-level values (``measures.run_value``) over the cases with that tag.

``segment_metrics(records)`` is what a run's summary reports under ``segments``; ``compare`` runs its
statistics per segment the same way (``compare.json`` ``segments``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaluations.results import measures
from evaluations.results.rundata import RunFolder


def run_from_records(records: Iterable[dict[str, Any]], summary: dict[str, Any] | None = None) -> RunFolder:
    """An in-memory run (no folder) from case records, e.g. the pipeline's before it writes them."""
    cases: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        cases.setdefault(str(record.get("case") or record["name"]), []).append(record)
    return RunFolder(path=Path("."), summary=summary or {}, cases=cases)


def segment_metrics(source: RunFolder | Iterable[dict[str, Any]],
                    summary: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """``{tag: {"cases": n, "metrics": {name: value}}}`` for every tag, over the cases carrying it.

    ``source``: a loaded run folder or the case records (``summary`` supplies the prices for cost).
    """
    run = source if isinstance(source, RunFolder) else run_from_records(source, summary)
    names = measures.available(run, defaults_only=True)
    out = {}
    for tag, cases in sorted(run.tags().items()):
        values = {name: measures.run_value(name, run, cases) for name in names}
        out[tag] = {"cases": len(cases), "metrics": {k: v for k, v in values.items() if v is not None}}
    return out
