"""``summary.json`` ``judging``: what judging cost, per judge, from the records' ``judge_cost`` alone.

Per judge (``judges[J]``): ``cases`` = cases J measured itself on (it gave a result; a case it does not apply to
costs nothing and is not counted); ``seconds`` = the distribution of its wall seconds per case (``n``, ``mean``,
``p50``, ``p95``, ``p99``, ``max``; waiting for a model another case holds included, so with concurrent cases the
judges' seconds add up to more than the run took); ``calls`` = its model calls per case (``mean``) and in all
(``total``): forward passes of an embedded model, requests sent to a served one, texts embedded; 0 when answered
from a cache (``results.records.JudgeCost``). Over the run:

- ``seconds``: the wall time judging took, case by case: the judges of one case run at once, so a case's judging
  took the time its judges' intervals [started, started + seconds] cover together (their union), summed over the
  cases (a record without ``started``, written before it was kept, counts its judges' seconds added up);
- ``judge_seconds``: every judge's seconds added up (more than ``seconds`` where judges overlapped);
- ``calls``: every judge's model calls;
- ``answering_seconds``: the answer stage's (latency stage ``llm``) seconds over the completed cases (None when no
  case timed that stage, e.g. a user's system that answers itself), and ``judging_per_answering`` = ``seconds``
  over it.

Absent from a run whose records carry no cost (older runs, runs without a timed judge).
"""

from __future__ import annotations

from typing import Any

from evaluations.results.records import CaseRecord, JudgeCost
from evaluations.results.stats import distribution

__all__ = ["case_span", "judging_summary"]


def _judge_entry(costs: list[JudgeCost]) -> dict[str, Any]:
    calls = [c.calls for c in costs]
    return {"cases": len(costs), "seconds": distribution(c.seconds for c in costs),
            "calls": {"mean": sum(calls) / len(calls), "total": sum(calls)}}


def case_span(costs: list[JudgeCost]) -> float:
    """Seconds the union of one case's judge intervals covers (module docstring); the sum without start times."""
    if any(c.started is None for c in costs):
        return sum(c.seconds for c in costs)
    covered, reached = 0.0, float("-inf")
    for start, end in sorted((c.started, c.started + c.seconds) for c in costs):
        if end > reached:
            covered += end - max(start, reached)
            reached = end
    return covered


def judging_summary(records: list[CaseRecord]) -> dict[str, Any] | None:
    """The ``judging`` section (module docstring), or None when no record has a judge's cost."""
    by_judge: dict[str, list[JudgeCost]] = {}
    for record in records:
        for judge, cost in (record.judge_cost or {}).items():
            by_judge.setdefault(judge, []).append(cost)
    if not by_judge:
        return None
    seconds = sum(case_span(list(r.judge_cost.values())) for r in records if r.judge_cost)
    answering = [r.latency_ms["llm"] for r in records if r.status == "ok" and "llm" in r.latency_ms]
    answering_seconds = sum(answering) / 1000 if answering else None
    return {
        "judges": {judge: _judge_entry(costs) for judge, costs in by_judge.items()},
        "seconds": seconds,
        "judge_seconds": sum(c.seconds for costs in by_judge.values() for c in costs),
        "calls": sum(c.calls for costs in by_judge.values() for c in costs),
        "answering_seconds": answering_seconds,
        "judging_per_answering": seconds / answering_seconds if answering_seconds else None,
    }
