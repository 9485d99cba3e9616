"""THE registry of what compare, gate and history can measure in a run folder: one ``Family`` per kind.

A *measure* has one value per case (the mean over the case's repeats), read from ``cases.jsonl``:

- retrieval: ``mrr@k``, ``map@k``, ``ndcg@k``, ``p@k``, ``recall@k``, ``hit@k`` — the names of
  ``evaluations.results.retrieval_metrics.METRICS`` at every cut-off the run has; a failed case scores 0 (the
  summary's averaging rule); ``hit@k`` is a binary verdict.
- judges: every name in the cases' ``judges`` (``keyword_correct``, ``token_f1``, ``offline_correct`` …);
  boolean verdicts are binary; ``context_waste`` (share of context tokens from non-relevant documents) is the
  one score where lower is better.
- ``latency_ms`` (the case's total), ``latency_<stage>_ms`` (embed, retrieve, rerank, llm, judge);
  ``tokens_per_query`` (input + output), ``input_tokens_per_query``, ``output_tokens_per_query``;
  ``cost_per_query`` = (input × price_in + output × price_out) / 1e6, prices from the summary;
  ``failure_rate`` (1 when the case's system failed), ``qa_failure_rate`` (1 when its QA failed).

A *run-level value* (what gate rules and history use) of a measure is its mean over cases; in addition
``latency_p50_ms``, ``latency_p95_ms``, ``latency_p99_ms`` (and ``latency_mean_ms``) are percentiles of the
per-case ``latency_ms`` (linear interpolation, numpy's default), compared for significance through
``latency_ms``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluations.core.errors import EvaluationsError
from evaluations.results.retrieval_metrics import METRICS, metric_key
from evaluations.results.rundata import RunFolder

Record = dict[str, Any]

_RETRIEVAL = re.compile(
    r"^(%s)@(\d+)$" % "|".join(re.escape(metric_key(m, 1)[:-2]) for m in METRICS)
)
_HIT_PREFIX = metric_key("hit", 1)[:-2]
_STAGE = re.compile(r"^latency_([a-z]+)_ms$")
_PERCENTILE = re.compile(r"^latency_p(\d{1,2})_ms$")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and np.isfinite(value):
        return float(value)
    return None


def _has_relevant(record: Record) -> bool:
    return any((grade or 0) > 0 for grade in (record.get("relevant") or {}).values())


def _retrieval_value(name: str, record: Record, run: RunFolder) -> float | None:
    if not _has_relevant(record):
        return None
    if record.get("status") == "failed":
        return 0.0  # a failed case counts as an empty result list
    return _number((record.get("metrics") or {}).get(name))


def _judge_value(name: str, record: Record, run: RunFolder) -> float | None:
    """A verdict judge's value is the case's contribution to its accuracy (``runs.summary.verdict_outcome``:
    a failed or empty answer, or a missing verdict on a case to answer, is 0), so compare, gate, matrix and
    history agree with the summary's accuracy; a score judge's value is its score on the cases it scored."""
    from evaluations.results.records import CaseRecord
    from evaluations.results.summary import is_verdict_name, verdict_outcome

    if is_verdict_name(name) and (record.get("qa") or {}).get("status") is not None:
        outcome = verdict_outcome(CaseRecord.model_validate(record), name)
        return None if outcome is None else float(outcome)
    return _number((record.get("judges") or {}).get(name))


def _latency_value(name: str, record: Record, run: RunFolder) -> float | None:
    if record.get("status") == "failed":
        return None
    stage = "total" if name == "latency_ms" else _STAGE.match(name).group(1)  # type: ignore[union-attr]
    return _number((record.get("latency_ms") or {}).get(stage))


def _usage(record: Record) -> tuple[float, float] | None:
    usage = record.get("usage") or {}
    if not usage or (record.get("qa") or {}).get("status") == "skipped":
        return None
    return float(usage.get("input_tokens") or 0), float(usage.get("output_tokens") or 0)


_TOKEN_PARTS: dict[str, Callable[[float, float], float]] = {
    "tokens_per_query": lambda i, o: i + o,
    "input_tokens_per_query": lambda i, o: i,
    "output_tokens_per_query": lambda i, o: o,
}


def _token_value(name: str, record: Record, run: RunFolder) -> float | None:
    usage = _usage(record)
    return None if usage is None else _TOKEN_PARTS[name](*usage)


def price(run: RunFolder) -> tuple[float, float]:
    """USD per 1M input/output tokens recorded in the run's summary (0, 0 when absent)."""
    prices = (((run.summary.get("answers") or {}).get("cost_usd") or {}).get("price_per_1m_tokens")) or {}
    return float(prices.get("input") or 0.0), float(prices.get("output") or 0.0)


def _cost_value(name: str, record: Record, run: RunFolder) -> float | None:
    usage = _usage(record)
    if usage is None:
        return None
    p_in, p_out = price(run)
    return (usage[0] * p_in + usage[1] * p_out) / 1e6


_FAILURE_TEST: dict[str, Callable[[Record], bool]] = {
    "failure_rate": lambda r: r.get("status") == "failed",
    "qa_failure_rate": lambda r: (r.get("qa") or {}).get("status") == "failed",
}


def _failure_value(name: str, record: Record, run: RunFolder) -> float | None:
    return 1.0 if _FAILURE_TEST[name](record) else 0.0


def _records(run: RunFolder) -> Iterable[Record]:
    for records in run.cases.values():
        yield from records


def _retrieval_names(run: RunFolder) -> list[str]:
    names = {k for r in _records(run) for k in (r.get("metrics") or {}) if _RETRIEVAL.match(k)}
    order = {metric_key(m, 1)[:-2]: i for i, m in enumerate(METRICS)}

    def key(n: str) -> tuple[int, int]:
        prefix, k = _RETRIEVAL.match(n).groups()  # type: ignore[union-attr]
        return int(k), order[prefix]

    return sorted(names, key=key)


#: per-case scores (in a case's ``judges``) where less is better
LOWER_IS_BETTER = frozenset({"context_waste"})


def _scores(run: RunFolder) -> set[str]:
    return {k for r in _records(run) for k, v in (r.get("judges") or {}).items() if _number(v) is not None}


def _judge_names(run: RunFolder) -> list[str]:
    return sorted(_scores(run) - LOWER_IS_BETTER)


def _waste_names(run: RunFolder) -> list[str]:
    return sorted(_scores(run) & LOWER_IS_BETTER)


def _stage_names(run: RunFolder) -> list[str]:
    stages = {k for r in _records(run) for k in (r.get("latency_ms") or {}) if k != "total"}
    return [f"latency_{s}_ms" for s in sorted(stages)]


@dataclass(frozen=True)
class Family:
    """A kind of measure: which names it has in a run, how to read one case's value, its direction.

    ``binary(name, run)``: the measure is a pass/fail verdict (McNemar; regressions; zero tolerance).
    ``default``: part of compare's default set (otherwise only on request with ``--metrics``).
    """

    name: str
    higher_is_better: bool
    names: Callable[[RunFolder], list[str]]
    owns: Callable[[str, RunFolder], bool]
    value: Callable[[str, Record, RunFolder], float | None]
    binary: Callable[[str, RunFolder], bool]
    default: bool = True


def _judge_is_binary(name: str, run: RunFolder) -> bool:
    return any(isinstance((r.get("judges") or {}).get(name), bool) for r in _records(run))


FAMILIES: list[Family] = [
    Family("retrieval", True, _retrieval_names, lambda n, r: bool(_RETRIEVAL.match(n)), _retrieval_value,
           lambda n, r: n.startswith(_HIT_PREFIX + "@")),
    Family("judge", True, _judge_names, lambda n, r: n in _judge_names(r), _judge_value, _judge_is_binary),
    Family("context waste", False, _waste_names, lambda n, r: n in LOWER_IS_BETTER, _judge_value, lambda n, r: False),
    Family("latency", False, lambda r: ["latency_ms"], lambda n, r: n == "latency_ms", _latency_value,
           lambda n, r: False),
    Family("stage latency", False, _stage_names, lambda n, r: bool(_STAGE.match(n)) and not _PERCENTILE.match(n)
           and n != "latency_mean_ms", _latency_value, lambda n, r: False, default=False),
    Family("tokens", False, lambda r: list(_TOKEN_PARTS), lambda n, r: n in _TOKEN_PARTS, _token_value,
           lambda n, r: False),
    Family("cost", False, lambda r: ["cost_per_query"], lambda n, r: n == "cost_per_query", _cost_value,
           lambda n, r: False),
    Family("failures", False, lambda r: list(_FAILURE_TEST), lambda n, r: n in _FAILURE_TEST, _failure_value,
           lambda n, r: True, default=False),
]


def family_of(name: str, run: RunFolder) -> Family | None:
    return next((f for f in FAMILIES if f.owns(name, run)), None)


def per_case(name: str, run: RunFolder) -> dict[str, float]:
    """case name -> the measure's value, the mean over the case's repeats (cases without a value omitted)."""
    family = family_of(name, run)
    if family is None:
        raise unknown_metric(name, [run])
    out: dict[str, float] = {}
    for case, records in run.cases.items():
        values = [v for v in (family.value(name, r, run) for r in records) if v is not None]
        if values:
            out[case] = sum(values) / len(values)
    return out


def available(run: RunFolder, *, defaults_only: bool = False) -> list[str]:
    """Every per-case measure that has at least one value in ``run``, in registry order."""
    names: list[str] = []
    for family in FAMILIES:
        if defaults_only and not family.default:
            continue
        names += [n for n in family.names(run) if any(
            family.value(n, r, run) is not None for r in _records(run))]
    return names


# Run-level values that are not a mean of a per-case measure: name -> (per-case measure, reducer).
def _percentile_reducer(q: float) -> Callable[[list[float]], float]:
    return lambda values: float(np.percentile(values, q))


def aggregate_parts(name: str) -> tuple[str, Callable[[list[float]], float]]:
    """(per-case measure, reducer) of a run-level value: ``latency_p95_ms`` -> (latency_ms, 95th percentile)."""
    match = _PERCENTILE.match(name)
    if match:
        return "latency_ms", _percentile_reducer(float(match.group(1)))
    if name == "latency_mean_ms":
        return "latency_ms", lambda values: float(np.mean(values))
    return name, lambda values: float(np.mean(values))


def run_value(name: str, run: RunFolder, cases: set[str] | None = None) -> float | None:
    """The run-level value of ``name`` (see module docstring), over ``cases`` when given; None without values."""
    measure, reduce = aggregate_parts(name)
    values = [v for c, v in per_case(measure, run).items() if cases is None or c in cases]
    return reduce(values) if values else None


def run_values(run: RunFolder) -> dict[str, float]:
    """Every run-level value the run has (history records these)."""
    out = {}
    for name in available(run):
        out[name] = run_value(name, run)
        if name == "latency_ms":
            for extra in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms"):
                out[extra] = run_value(extra, run)
    return {k: v for k, v in out.items() if v is not None}


def known_names(runs: list[RunFolder]) -> list[str]:
    names: list[str] = []
    for run in runs:
        for n in available(run) + ["latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_mean_ms"]:
            if n not in names:
                names.append(n)
    return names


def unknown_metric(name: str, runs: list[RunFolder], where: str = "metric") -> EvaluationsError:
    return EvaluationsError(
        f"unknown metric {name!r}", where=where,
        fix="use one of: " + ", ".join(known_names(runs)) + " (retrieval metrics at the run's cut-offs, the run's "
            "judges, latency_pNN_ms, tokens_per_query, cost_per_query, failure_rate)",
    )


def check_metric(name: str, runs: list[RunFolder], where: str = "metric", *, per_case_only: bool = False) -> None:
    """EvaluationsError naming ``name`` unless every run has values for it (``per_case_only``: no run-level
    percentiles, which have no per-case values to pair)."""
    measure = aggregate_parts(name)[0]
    if per_case_only and measure != name:
        raise EvaluationsError(f"{name!r} is a run-level value with no per-case values to pair", where=where,
                               fix=f"compare {measure!r} (per case) instead")
    for run in runs:
        if family_of(measure, run) is None or not per_case(measure, run):
            raise unknown_metric(name, runs, where)
