"""THE segment rule: every tag the cases carry (``category:x``, ``difficulty:y``, ``system:z`` …) is a segment; its
values are the per-record means (``measures.record_means``, the summary's averaging and failure rule: a failed
case scores 0 on retrieval and counts as incorrect for a verdict judge) of the segment families (retrieval,
judges, context waste) over the records carrying it.

``segment_metrics(run)`` is what a run's summary reports under ``segments`` and what ``golden`` writes to
``by_tag.json``; ``compare`` runs its statistics per tag over the same cases (``RunData.tags``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evaluations.results import measures
from evaluations.results.records import CaseRecord
from evaluations.results.rundata import RunData, Segment


def segment_metrics(source: RunData | Iterable[CaseRecord | dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{tag: {"cases": n, "metrics": {name: value}}}`` (summary.json's ``segments``) for every tag, over the
    records carrying it. ``source``: a run, or its case records (as written to cases.jsonl)."""
    run = source if isinstance(source, RunData) else RunData(
        records=[r if isinstance(r, CaseRecord) else CaseRecord.model_validate(r) for r in source])
    names = measures.available(run, segments_only=True)
    by_tag: dict[str, list] = {}
    for record in run.records:
        for tag in record.tags:
            by_tag.setdefault(tag, []).append(record)
    return {tag: Segment(cases=len(records), metrics=measures.record_means(run, names, records)).model_dump()
            for tag, records in sorted(by_tag.items())}
