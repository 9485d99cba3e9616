"""``summary.json`` from the case records alone (never from live objects), so a resumed run, a straight run and
a re-read of an old folder summarise the same way.

Averaging rules:
- a retrieval metric's mean is over the cases that have relevant documents; a case whose retrieval failed
  (``status == "failed"``) counts as 0, as an empty result list would, and is counted in ``counts.failed``;
  a case whose answer or judge stage failed keeps its retrieval scores;
- a judge's mean is over the cases it gave a verdict for; failures are counted per stage
  (``counts.qa_failed``, ``counts.judge_failed``), never dropped silently;
- with ``--repeat N`` every (case, repeat) record counts once; ``repeats`` gives the run-to-run spread of each
  metric's mean (standard deviation, min, max over the N repeat means).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ..reporting.stats import distribution
from ..retrieval.metrics import compute_all
from ..task import STAGES
from .records import CaseRecord

AVERAGING = ("retrieval means over cases with relevant documents; cases whose retrieval failed count as 0; "
             "answer/judge failures keep their retrieval scores")


def _retrieval_metrics(record: CaseRecord, ks: list[int]) -> dict[str, float] | None:
    if not record.has_relevant:
        return None
    if record.status == "failed":
        return compute_all([], record.relevant, ks)  # failed = empty result list = 0
    return record.metrics or None


def _means(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for key, value in row.items():
            if isinstance(value, bool) or (isinstance(value, (int, float)) and math.isfinite(value)):
                sums[key] += float(value)
                counts[key] += 1
    return {key: sums[key] / counts[key] for key in sums}


def retrieval_means(records: list[CaseRecord], ks: list[int], scored: bool = True) -> tuple[dict[str, float], int]:
    if not scored:
        return {}, 0
    rows = [m for r in records if (m := _retrieval_metrics(r, ks)) is not None]
    return _means(rows), len(rows)


def _answer_summary(records: list[CaseRecord], primary_judge: str | None,
                    price: tuple[float, float]) -> dict[str, Any]:
    values: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for record in records:
        for name, value in record.judges.items():
            if isinstance(value, (bool, int, float)) and math.isfinite(float(value)):
                values[name].append(float(value))
        for err in record.judge_errors:
            errors[err.evaluator] += 1
    answered = [r for r in records if r.answer is not None]
    attempted = [r for r in records if r.qa.status != "skipped"]
    usage_in = [r.usage.get("input_tokens", 0) for r in attempted]
    usage_out = [r.usage.get("output_tokens", 0) for r in attempted]
    costs = [(i * price[0] + o * price[1]) / 1e6 for i, o in zip(usage_in, usage_out)]
    correct = sum(1 for r in answered if r.judges.get(primary_judge) is True) if primary_judge else 0
    modes: dict[str, int] = defaultdict(int)
    for r in answered:
        modes[r.qa.mode or "unknown"] += 1
    return {
        "judges": {name: {"mean": sum(v) / len(v), "n": len(v)} for name, v in sorted(values.items())},
        "judge_errors": dict(errors),
        "attempted": len(attempted),
        "answered": len(answered),
        "qa_failed": sum(1 for r in records if r.qa.status == "failed"),
        "output_modes": dict(sorted(modes.items())),
        "primary_judge": primary_judge,
        "correct": correct,
        "tokens": {"input": distribution(usage_in), "output": distribution(usage_out),
                   "total_input": sum(usage_in), "total_output": sum(usage_out),
                   "per_query": (sum(usage_in) + sum(usage_out)) / len(attempted) if attempted else None,
                   "per_correct_answer": (sum(usage_in) + sum(usage_out)) / correct if correct else None},
        "cost_usd": {"per_query": sum(costs) / len(costs) if costs else 0.0, "total": sum(costs),
                     "price_per_1m_tokens": {"input": price[0], "output": price[1]}},
    }


def _case_values(record: CaseRecord, ks: list[int], scored: bool) -> dict[str, float]:
    """Every per-case number a summary averages: retrieval metrics and judge values."""
    row: dict[str, float] = {}
    if scored and (m := _retrieval_metrics(record, ks)) is not None:
        row.update(m)
    row.update({k: float(v) for k, v in record.judges.items()})
    return row


def _segments(records: list[CaseRecord], ks: list[int], scored: bool) -> dict[str, Any]:
    by_tag: dict[str, list[CaseRecord]] = defaultdict(list)
    for record in records:
        for tag in record.tags:
            by_tag[tag].append(record)
    return {tag: {"cases": len(rs), "metrics": _means(_case_values(r, ks, scored) for r in rs)}
            for tag, rs in sorted(by_tag.items())}


def _repeat_spread(records: list[CaseRecord], ks: list[int], scored: bool) -> dict[str, Any] | None:
    by_repeat: dict[int, list[CaseRecord]] = defaultdict(list)
    for record in records:
        by_repeat[record.repeat].append(record)
    if len(by_repeat) < 2:
        return None
    means = [_means(_case_values(r, ks, scored) for r in rs) for _, rs in sorted(by_repeat.items())]
    spread = {}
    for key in sorted(set().union(*means)):
        vals = [m[key] for m in means if key in m]
        spread[key] = {"sd": statistics.stdev(vals) if len(vals) > 1 else 0.0, "min": min(vals), "max": max(vals),
                       "identical": max(vals) == min(vals)}
    return {"n": len(by_repeat), "metrics": spread}


def id_mismatch(records: list[CaseRecord], examples: int = 5) -> dict[str, Any] | None:
    """When cases have relevant documents and results, but no retrieved id of any case is a relevant id, the ids
    of the system and of the dataset almost surely differ: say so, with a few of each."""
    judged = [r for r in records if r.has_relevant and r.retrieved]
    if not judged or any(set(r.retrieved) & {d for d, g in r.relevant.items() if g > 0} for r in judged):
        return None
    retrieved = list(dict.fromkeys(d for r in judged for d in r.retrieved))[:examples]
    relevant = list(dict.fromkeys(d for r in judged for d in r.relevant))[:examples]
    return {"message": f"no retrieved id of any of {len(judged)} cases is among its relevant ids: the system's "
                       "document ids and the dataset's probably differ",
            "retrieved_examples": retrieved, "relevant_examples": relevant}


def counts(records: list[CaseRecord]) -> dict[str, int]:
    return {
        "cases": len(records),
        "complete": sum(1 for r in records if not r.failed_stages),
        "incomplete": sum(1 for r in records if r.failed_stages),
        "failed": sum(1 for r in records if r.status == "failed"),
        "qa_failed": sum(1 for r in records if r.qa.status == "failed"),
        "judge_failed": sum(1 for r in records if r.judge_errors),
        "no_relevant": sum(1 for r in records if not r.has_relevant),
        "evaluator_failures": sum(len(r.judge_errors) for r in records),
    }


def summarize(records: list[CaseRecord], *, name: str, ks: list[int], extra: dict[str, Any],
              scored: bool = True, primary_judge: str | None = None, price: tuple[float, float] = (0.0, 0.0),
              analyses: list[Any] | None = None) -> dict[str, Any]:
    metrics, evaluated = retrieval_means(records, ks, scored)
    ok = [r for r in records if r.status == "ok"]
    total = distribution(r.latency_ms.get("total") for r in ok)
    stages = set(STAGES) | {k for r in ok for k in r.latency_ms}
    latency = {
        "p50": total["p50"], "p95": total["p95"], "p99": total["p99"], "mean": total["mean"],
        "by_stage": {stage: distribution(r.latency_ms.get(stage, 0.0) for r in ok)
                     for stage in [*STAGES, *sorted(stages - set(STAGES))]},
    }
    summary: dict[str, Any] = {
        "name": name,
        "metrics": metrics,
        "latency_ms": latency,
        "counts": {**counts(records), "evaluated_retrieval": evaluated},
        "averaging": AVERAGING,
        "analyses": analyses or [],
    }
    if any(r.qa.status != "skipped" or r.judges for r in records):
        summary["answers"] = _answer_summary(records, primary_judge, price)
    if any(r.tags for r in records):
        summary["segments"] = _segments(records, ks, scored)
    if (spread := _repeat_spread(records, ks, scored)) is not None:
        summary["repeats"] = spread
    if (mismatch := id_mismatch(records)) is not None:
        summary["warnings"] = [mismatch]
    tiers = [r.tier for r in records if r.tier]
    if tiers:
        summary["tiers"] = {t: tiers.count(t) for t in sorted(set(tiers))}
    summary.update(extra)
    return summary


def markdown(summary: dict[str, Any]) -> str:
    lines = [f"# {summary['name']}", ""]
    if summary["metrics"]:
        lines += ["| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4f} |" for k, v in summary["metrics"].items()]
        lines.append("")
    lat = summary["latency_ms"]
    if lat["p50"] is not None:
        lines += [f"Latency per case (ms): p50 {lat['p50']:.1f}, p95 {lat['p95']:.1f}, p99 {lat['p99']:.1f}", ""]
    answers = summary.get("answers")
    if answers:
        lines += ["| judge / answer metric | mean | n |", "|---|---|---|"]
        lines += [f"| {k} | {v['mean']:.4f} | {v['n']} |" for k, v in answers["judges"].items()]
        lines.append("")
    lines += ["Counts: " + ", ".join(f"{k} {v}" for k, v in summary["counts"].items()), "",
              f"Averaging: {summary['averaging']}.", ""]
    return "\n".join(lines)
