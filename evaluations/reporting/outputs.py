"""What a run leaves behind in its ``--out`` folder.

- ``report.json``: the pydantic-evals ``EvaluationReport`` (reload with ``load_report``).
- ``summary.json``: ``{"metrics", "answers", "latency_ms", "counts", "config", ...}`` for programs and CI gates.
- ``cases.jsonl``: one object per case (failed cases included, with their error).
- ``summary.md``: the same summary for people.

Averaging rule: a retrieval metric's mean is over the cases that have relevant documents; a case
whose task failed counts as 0 (as an empty result list would) and is counted in ``counts.failed``.
Cases without relevant documents carry no retrieval score and are counted in ``counts.no_relevant``.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic_evals.reporting import EvaluationReport, EvaluationReportAdapter

from ..retrieval.metrics import compute_all
from ..task import STAGES
from ..types import CaseMetadata, CaseOutput
from .stats import distribution

RETRIEVAL_PREFIXES = ("mrr@", "map@", "ndcg@", "p@", "recall@", "hit@")


def _metadata(case: Any) -> CaseMetadata:
    meta = case.metadata
    return meta if isinstance(meta, CaseMetadata) else CaseMetadata.model_validate(meta)


def _output(case: Any) -> CaseOutput:
    out = case.output
    return out if isinstance(out, CaseOutput) else CaseOutput.model_validate(out)


def _is_retrieval(name: str) -> bool:
    return name.startswith(RETRIEVAL_PREFIXES)


def case_records(report: EvaluationReport) -> list[dict[str, Any]]:
    records = []
    for case in report.cases:
        meta, out = _metadata(case), _output(case)
        scores = {k: v.value for k, v in case.scores.items()}
        records.append({
            "name": case.name,
            "query": case.inputs.query if hasattr(case.inputs, "query") else case.inputs["query"],
            "retrieved": out.documents,
            "scores": out.scores,
            "relevant": meta.relevant,
            "metrics": {k: v for k, v in scores.items() if _is_retrieval(k)},
            "answer": out.answer.model_dump() if out.answer else None,
            "gold_answers": meta.answers,
            "judges": {**{k: v for k, v in scores.items() if not _is_retrieval(k)},
                       **{k: v.value for k, v in case.assertions.items()},
                       **{k: v.value for k, v in case.labels.items()}},
            "judge_errors": [{"evaluator": f.name, "error": f.error_message} for f in case.evaluator_failures],
            "context": [c.chunk_id for c in out.chunks],
            "latency_ms": out.latency_ms,
            "usage": out.usage,
            "status": "ok",
        })
    for failure in report.failures:
        meta = _metadata(failure)
        records.append({
            "name": failure.name,
            "query": failure.inputs.query if hasattr(failure.inputs, "query") else failure.inputs["query"],
            "retrieved": [], "scores": [], "relevant": meta.relevant, "metrics": {}, "answer": None,
            "gold_answers": meta.answers, "judges": {}, "judge_errors": [], "context": [], "latency_ms": {},
            "usage": {}, "status": "failed", "error": failure.error_message,
        })
    return records


def _retrieval_means(records: list[dict[str, Any]], ks: list[int]) -> tuple[dict[str, float], int]:
    sums: dict[str, float] = defaultdict(float)
    n = 0
    for record in records:
        if record["status"] == "failed":
            metrics = compute_all([], record["relevant"], ks)  # failed = empty result list = 0
        else:
            metrics = record["metrics"] or None
        if metrics is None:
            continue
        n += 1
        for key, value in metrics.items():
            sums[key] += value
    return ({key: value / n for key, value in sums.items()} if n else {}), n


def _answer_summary(records: list[dict[str, Any]], primary_judge: str | None,
                    price: tuple[float, float]) -> dict[str, Any]:
    values: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for record in records:
        for name, value in record["judges"].items():
            if isinstance(value, bool) or isinstance(value, (int, float)):
                if isinstance(value, float) and not math.isfinite(value):
                    continue
                values[name].append(float(value))
        for err in record["judge_errors"]:
            errors[err["evaluator"]] += 1
    answered = [r for r in records if r["answer"] is not None]
    summary: dict[str, Any] = {
        name: {"mean": sum(v) / len(v), "n": len(v)} for name, v in sorted(values.items())
    }
    usage_in = [r["usage"].get("input_tokens", 0) for r in answered]
    usage_out = [r["usage"].get("output_tokens", 0) for r in answered]
    costs = [(i * price[0] + o * price[1]) / 1e6 for i, o in zip(usage_in, usage_out)]
    correct = sum(1 for r in answered if r["judges"].get(primary_judge) is True) if primary_judge else 0
    return {
        "judges": summary,
        "judge_errors": dict(errors),
        "answered": len(answered),
        "primary_judge": primary_judge,
        "correct": correct,
        "tokens": {"input": distribution(usage_in), "output": distribution(usage_out),
                   "total_input": sum(usage_in), "total_output": sum(usage_out),
                   "per_correct_answer": (sum(usage_in) + sum(usage_out)) / correct if correct else None},
        "cost_usd": {"per_query": sum(costs) / len(costs) if costs else 0.0, "total": sum(costs),
                     "price_per_1m_tokens": {"input": price[0], "output": price[1]}},
    }


def summarize(report: EvaluationReport, records: list[dict[str, Any]], *, ks: list[int],
              extra: dict[str, Any], primary_judge: str | None = None,
              price: tuple[float, float] = (0.0, 0.0)) -> dict[str, Any]:
    metrics, evaluated = _retrieval_means(records, ks)
    ok = [r for r in records if r["status"] == "ok"]
    totals = [r["latency_ms"].get("total") for r in ok]
    total_dist = distribution(totals)
    latency = {
        "p50": total_dist["p50"], "p95": total_dist["p95"], "p99": total_dist["p99"], "mean": total_dist["mean"],
        "by_stage": {stage: distribution(r["latency_ms"].get(stage, 0.0) for r in ok) for stage in STAGES},
    }
    counts = {
        "cases": len(records),
        "succeeded": len(ok),
        "failed": len(records) - len(ok),
        "evaluated_retrieval": evaluated,
        "no_relevant": sum(1 for r in records if not any(g > 0 for g in r["relevant"].values())),
        "evaluator_failures": sum(len(r["judge_errors"]) for r in records),
    }
    summary = {
        "name": report.name,
        "metrics": metrics,
        "latency_ms": latency,
        "counts": counts,
        "averaging": "retrieval means over cases with relevant documents; failed cases count as 0",
        "analyses": [a.model_dump(mode="json") for a in getattr(report, "analyses", [])],
    }
    if any(r["answer"] is not None or r["judges"] for r in records):
        summary["answers"] = _answer_summary(records, primary_judge, price)
    summary.update(extra)
    return summary


def _markdown(summary: dict[str, Any]) -> str:
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


def write_run(out_dir: Path, report: EvaluationReport, summary: dict[str, Any],
              records: list[dict[str, Any]]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_bytes(EvaluationReportAdapter.dump_json(report, indent=1))
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False, default=str))
    with (out_dir / "cases.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    (out_dir / "summary.md").write_text(_markdown(summary))


def load_report(path: Path) -> EvaluationReport:
    return EvaluationReportAdapter.validate_json(Path(path).read_bytes())
