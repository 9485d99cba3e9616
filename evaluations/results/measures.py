"""THE measure registry: every number the summary, segments, compare, gate, history, matrix, reports and scoring
show is read from a ``CaseRecord`` here, with one failure rule. One ``Family`` per kind of measure.

A *measure* has one value per record (``value(name, record, run)``, None when the record has none):

- retrieval: ``mrr@k``, ``map@k``, ``ndcg@k``, ``p@k``, ``recall@k``, ``hit@k`` (names parsed only by
  ``retrieval_metrics.parse_metric_name``) at every cut-off the run has; a case without relevant documents has
  no value; a case whose retrieval failed scores 0 (an empty result list); ``hit@k`` is a binary verdict.
- reference-free: ``faithfulness`` (alias ``groundedness``), ``answer_relevance`` and ``context_relevance``
  (``records.REFERENCE_FREE_SCORES``; their kinds in ``REFERENCE_FREE``), scores in [0, 1] where higher is better, on
  the cases the judge applies to (none where it does not: a refusal, no answer, no context); ``answer_relevance``
  is a binary verdict (1 or 0);
- judges: every other name in the records' ``judges``. A verdict judge (``is_verdict_name``) counts as accuracy counts
  it (``verdict_outcome``: a failed case or answer, an empty or unjudged answer on a case to answer is 0); a
  score judge (token F1, similarity …) has its score on the cases it scored. ``context_waste`` (share of context
  tokens from non-relevant documents) is the one score where lower is better.
- ``latency_ms`` (the case's total), ``latency_<stage>_ms`` (embed, retrieve, rerank, llm, …): none for a failed case;
- ``tokens_per_query`` (input + output), ``input_tokens_per_query``, ``output_tokens_per_query`` (cases whose
  answer stage ran; missing usage counts 0, but a user's system that answered without reporting usage has no value:
  not reported, never 0 tokens); ``cost_per_query`` = (input × price_in + output × price_out) / 1e6, prices from
  the summary (``RunSummary.price_of``: the model or tier a system's reply named, else the QA agent's), on the same
  cases (no known tokens or no known price: no cost, never 0 USD);
- ``failure_rate`` (1 when the case's system failed), ``qa_failure_rate`` (1 when its answer failed).

Per case (``per_case``: compare, gate) a measure is the mean over the case's repeats; a *run-level value*
(``run_value``: gate rules, history, OTel) is its mean over cases, plus ``latency_p50_ms``, ``latency_p95_ms``,
``latency_p99_ms`` and ``latency_mean_ms`` over the per-case ``latency_ms`` (``results.stats.percentile``).
The summary's means (``record_means``) average the same per-record values over records (each repeat once).

A *pass/fail rule* (``Verdict``, ``Family.verdict``) says when a case's value of a higher-is-better measure passes
and when it fails: 1 / 0 for a binary verdict (``hit@k``, a true/false judge, ``answer_relevance``), every claim
supported (1) / not (< 1) for ``faithfulness``, some retrieved chunk relevant (> 0) / none (0) for
``context_relevance``. Compare's regressions and the gate's zero tolerance are cases passing in the baseline that
fail in the other run. The *headline* (``headline``) is the few run-level values a table of runs shows by default
(history). Names are looked up through ``canonical`` (``ALIASES``: ``groundedness`` is ``faithfulness``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.results.records import REFERENCE_FREE_SCORES, SYSTEM_ANSWER, VERDICT_NAMES, CaseRecord
from evaluations.results.retrieval_metrics import METRIC_ORDER, metric_key, METRICS, parse_metric_name
from evaluations.results.rundata import RunData
from evaluations.results.stats import percentile

_STAGE = re.compile(r"^latency_([a-z]+)_ms$")
_PERCENTILE = re.compile(r"^latency_p(\d{1,2})_ms$")
PERCENTILES = ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms")

#: per-case scores (in a case's ``judges``) where less is better
LOWER_IS_BETTER = frozenset({"context_waste"})


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and value == value and abs(value) != float("inf"):
        return float(value)
    return None


# --- the answer failure rule: which cases count for accuracy, and how -------------------------------------------

def is_verdict_name(name: str) -> bool:
    """A correctness verdict's name: in ``VERDICT_NAMES`` or ending in ``_correct`` (boolean values only count)."""
    return name in VERDICT_NAMES or name.endswith("_correct")


def verdict_names(records: Iterable[CaseRecord]) -> list[str]:
    """The verdict judges of these records: names passing ``is_verdict_name`` with a boolean value somewhere."""
    return sorted({k for r in records for k, v in r.judges.items() if isinstance(v, bool) and is_verdict_name(k)})


def to_answer(record: CaseRecord) -> bool:
    """The run had to answer this case: its answer stage ran (ok or failed), or the case failed before it."""
    return record.qa.status != "skipped" or record.status == "failed"


def has_gold(record: CaseRecord) -> bool:
    return any(isinstance(a, str) and a.strip() for a in record.gold_answers)


def answer_kind(record: CaseRecord) -> str:
    """How a case to answer counts in accuracy: "gold" (answerable, with gold answers: always counts),
    "unanswerable" (``answerable`` false: counts for a judge only where that judge gave a verdict) or "no_gold"
    (answerable but without gold answers: no judge can judge it, never counts)."""
    if not record.answerable:
        return "unanswerable"
    return "gold" if has_gold(record) else "no_gold"


def non_empty_answer(record: CaseRecord) -> bool:
    return bool(record.answer) and bool(str(record.answer.get("answer") or "").strip())


def verdict_outcome(record: CaseRecord, name: str) -> bool | None:
    """The record's contribution to judge ``name``'s accuracy: True (correct), False (incorrect: a failed
    case or answer stage, an empty answer the judge did not pass, a judge failure, no verdict on a gold case),
    or None (not counted: not a case to answer, no gold, or an unanswerable case without a verdict)."""
    if not to_answer(record):
        return None
    value = record.judges.get(name)
    verdict = value if isinstance(value, bool) else None
    kind = answer_kind(record)
    if kind == "gold":
        return verdict is True
    if kind == "unanswerable" and verdict is not None:
        return verdict
    return None


def answer_accuracy(records: list[CaseRecord], name: str) -> dict[str, Any]:
    """Accuracy of verdict judge ``name`` over all the cases the run had to answer.

    With C = the cases to answer (``to_answer``) that are answerable with gold answers, U_J = the unanswerable
    cases to answer that ``name`` gave a verdict for (a refusal can be correct there), and v_J(c) its verdict::

        accuracy = |{c ∈ C ∪ U_J : v_J(c) is True}| / |C ∪ U_J|

    so a failed case or answer stage, an empty answer, a judge failure or a missing verdict on a case of C is
    incorrect. ``n_cases`` = |C ∪ U_J|, ``judged`` = the cases of C ∪ U_J with a verdict,
    ``unanswerable_left_out`` = unanswerable cases to answer without a verdict (not in the denominator).
    """
    outcomes = [verdict_outcome(r, name) for r in records]
    counted = [o for o in outcomes if o is not None]
    unanswerable = [r for r in records if to_answer(r) and answer_kind(r) == "unanswerable"]
    included = sum(1 for r in unanswerable if isinstance(r.judges.get(name), bool))
    correct = sum(counted)
    return {
        "accuracy": correct / len(counted) if counted else None,
        "correct": correct,
        "n_cases": len(counted),
        "judged": sum(1 for r, o in zip(records, outcomes) if o is not None and isinstance(r.judges.get(name), bool)),
        "unanswerable_included": included,
        "unanswerable_left_out": len(unanswerable) - included,
    }


# --- per-record values, one reader per family ------------------------------------------------------------------

def _retrieval_value(name: str, record: CaseRecord, run: RunData) -> float | None:
    if not record.has_relevant:
        return None
    if record.status == "failed":
        return 0.0  # a failed case counts as an empty result list
    return _number(record.metrics.get(name))


def _judge_value(name: str, record: CaseRecord, run: RunData) -> float | None:
    """A verdict judge's value (a verdict name with boolean values) is the case's contribution to its accuracy
    (``verdict_outcome``); a score judge's value (``offline_p_correct`` too) is its score on the cases it scored."""
    value = record.judges.get(name)
    if is_verdict_name(name) and (isinstance(value, bool) or (value is None and _judge_is_binary(name, run))):
        outcome = verdict_outcome(record, name)
        return None if outcome is None else float(outcome)
    return _number(value)


def _latency_value(name: str, record: CaseRecord, run: RunData) -> float | None:
    if record.status == "failed":
        return None
    stage = "total" if name == "latency_ms" else _STAGE.match(name).group(1)  # type: ignore[union-attr]
    return _number(record.latency_ms.get(stage))


def usage(record: CaseRecord) -> tuple[float, float] | None:
    """(input, output) tokens of a case whose answer stage ran (missing counts 0); None when it did not run."""
    if record.qa.status == "skipped":
        return None
    return float(record.usage.get("input_tokens") or 0), float(record.usage.get("output_tokens") or 0)


def token_usage(record: CaseRecord) -> tuple[float, float] | None:
    """``usage`` of a case whose token counts are known: also None when a user's system answered without reporting
    usage (``records.SYSTEM_ANSWER``, no token counts): not reported, where ``usage`` counts 0. A system that
    reports 0 tokens has 0."""
    if record.qa.mode == SYSTEM_ANSWER and not {"input_tokens", "output_tokens"} & record.usage.keys():
        return None
    return usage(record)


_TOKEN_PARTS: dict[str, Callable[[float, float], float]] = {
    "tokens_per_query": lambda i, o: i + o,
    "input_tokens_per_query": lambda i, o: i,
    "output_tokens_per_query": lambda i, o: o,
}


def _token_value(name: str, record: CaseRecord, run: RunData) -> float | None:
    used = token_usage(record)
    return None if used is None else _TOKEN_PARTS[name](*used)


def cost(used: tuple[float, float], price: tuple[float, float]) -> float:
    """USD of (input, output) tokens at ``price`` USD per 1M (input, output) tokens."""
    return (used[0] * price[0] + used[1] * price[1]) / 1e6


def _cost_value(name: str, record: CaseRecord, run: RunData) -> float | None:
    used, price = token_usage(record), run.summary.price_of(record)
    return None if used is None or price is None else cost(used, price)


_FAILURE_TEST: dict[str, Callable[[CaseRecord], bool]] = {
    "failure_rate": lambda r: r.status == "failed",
    "qa_failure_rate": lambda r: r.qa.status == "failed",
}


def _failure_value(name: str, record: CaseRecord, run: RunData) -> float | None:
    return 1.0 if _FAILURE_TEST[name](record) else 0.0


# --- the names each family has in a run ------------------------------------------------------------------------

def retrieval_names(run: RunData) -> list[str]:
    """The run's retrieval metrics (the records' and, via ``run.ks``, every metric at the run's cut-offs), ordered
    by cut-off, then ``METRICS`` order."""
    names = {k for r in run.records for k in r.metrics if parse_metric_name(k)}
    names |= {metric_key(m, k) for m in METRICS for k in run.ks}

    def key(n: str) -> tuple[int, int]:
        metric, _, k = parse_metric_name(n)  # type: ignore[misc]
        return k, METRIC_ORDER[metric]

    return sorted(names, key=key)


def _scores(run: RunData) -> set[str]:
    return {k for r in run.records for k, v in r.judges.items() if _number(v) is not None}


def _judge_names(run: RunData) -> list[str]:
    return sorted(_scores(run) - LOWER_IS_BETTER - set(REFERENCE_FREE_SCORES))


def _reference_free_names(run: RunData) -> list[str]:
    scored = _scores(run)
    return [n for n in REFERENCE_FREE_SCORES if n in scored]


def _score_value(name: str, record: CaseRecord, run: RunData) -> float | None:
    return _number(record.judges.get(name))


def _waste_names(run: RunData) -> list[str]:
    return sorted(_scores(run) & LOWER_IS_BETTER)


def _stage_names(run: RunData) -> list[str]:
    stages = {k for r in run.records for k in r.latency_ms if k != "total"}
    return [f"latency_{s}_ms" for s in sorted(stages)]


def _judge_is_binary(name: str, run: RunData) -> bool:
    return any(isinstance(r.judges.get(name), bool) for r in run.records)


@dataclass(frozen=True)
class Verdict:
    """A pass/fail rule over a case's value (module docstring): a value that neither passes nor fails (the mean of
    a passing and a failing repeat) gives no verdict."""

    rule: str  # for people
    passes: Callable[[float], bool]
    fails: Callable[[float], bool]


#: the rule of a binary verdict (hit@k, a true/false judge, answer_relevance)
PASS_FAIL = Verdict("1 passes, 0 fails", lambda v: v == 1.0, lambda v: v == 0.0)


@dataclass(frozen=True)
class ReferenceFree:
    """A reference-free score's kind: ``binary`` (0/1 per case: McNemar), its pass/fail rule, what it needs to
    have values and when it does not apply (the errors of a run without values)."""

    binary: bool
    verdict: Verdict
    needs: str
    applies: str


REFERENCE_FREE: dict[str, ReferenceFree] = {
    "faithfulness": ReferenceFree(
        False, Verdict("every claim supported (1) passes, an unsupported claim (< 1) fails", lambda v: v == 1.0,
                       lambda v: v < 1.0),
        "it needs answers (a run without --skip-qa) with retrieved passages",
        "an answer that states something checkable: not to an empty, refused or echoed answer, an answer without "
        "claims, or one without retrieved passages"),
    "answer_relevance": ReferenceFree(True, PASS_FAIL, "it needs answers (a run without --skip-qa)",
                                      "every case the run answered"),
    "context_relevance": ReferenceFree(
        False, Verdict("a relevant chunk retrieved (> 0) passes, none (0) fails", lambda v: v > 0.0,
                       lambda v: v == 0.0),
        "it needs retrieved passages; judge.reference_free 'auto' leaves it out on a dataset with relevance labels",
        "a case with retrieved chunks"),
}

#: measures a model judged, so a change of judge moves them whatever the system did: the reference-free scores the
#: checker model reads (answer relevance reads no model of the run's choosing), and the LLM judge's verdict and the
#: combined judge's (offline features + the LLM judge's P(yes))
CHECKER_JUDGED = ("faithfulness", "context_relevance")
LLM_JUDGED = ("llm_judge", "combined_correct")
MODEL_JUDGED = (*CHECKER_JUDGED, *LLM_JUDGED)


def judged_by(name: str, run: RunData) -> str | None:
    """Who judged measure ``name`` in ``run``: the checker model of the reference-free judges (with the model their
    parameters were fitted through, when the run names it), or the LLM judge's model; None for a measure no model
    judges, or a run that does not say (a folder from before judges were recorded)."""
    name = canonical(name)
    info = {**(run.summary.model_extra or {}), **run.summary.run.model_dump()}
    if name in CHECKER_JUDGED:
        checker = info.get("reference_free_judge")
        if not checker:
            return None
        fitted = ((info.get("judge_parameters") or {}).get(name) or {}).get("fitted_through")
        same = not fitted or str(checker).split(":")[0] == fitted or checker == fitted
        return str(checker) if same else f"{checker} (parameters fitted through {fitted})"
    if name in LLM_JUDGED:  # the run's judge_model: {provider, name, ...} (``judging.correctness.llm.describe_judge``)
        judge = info.get("judge_model")
        if isinstance(judge, dict):
            return f"{judge.get('provider')}:{judge.get('name')}" if judge.get("provider") else None
        return str(judge) if judge else None
    return None


def judges_differ(name: str, a: RunData, b: RunData) -> tuple[str, str] | None:
    """(a's judge, b's judge) of ``name`` when both runs name theirs and they differ, else None."""
    ja, jb = judged_by(name, a), judged_by(name, b)
    return (ja, jb) if ja and jb and ja != jb else None


def judge_change_text(change: dict[str, str]) -> str:
    """One line for people on a measure judged by another model in two runs (compare's ``judges_differ`` rows:
    metric, a, b, judge_a, judge_b)."""
    return (f"{change['metric']} was judged by {change['judge_a']} in {change['a']} but by {change['judge_b']} in "
            f"{change['b']}: its difference is the judges' as much as the systems' (judge both runs with one judge)")


#: the verdict judges a table of runs shows by default: those a run may choose as its primary judge by default
#: (``pipeline.plan.VERDICTS`` with ``default``; tests/test_reference_free_runs.py checks they agree)
HEADLINE_JUDGES = ("llm_judge", "combined_correct", "offline_correct")
#: retrieval metrics a table of runs shows by default, at cut-off ``HEADLINE_K``
HEADLINE_RETRIEVAL, HEADLINE_K = ("ndcg", "recall", "mrr"), 10


def _retrieval_headline(name: str) -> bool:
    parsed = parse_metric_name(name)
    return parsed is not None and parsed[0] in HEADLINE_RETRIEVAL and parsed[2] == HEADLINE_K


def _never(name: str, run: RunData) -> Verdict | None:
    return None


@dataclass(frozen=True)
class Family:
    """A kind of measure: which names it has in a run, how to read one record's value, its direction.

    ``binary(name, run)``: the measure is 0/1 per case (McNemar's test).
    ``verdict(name, run)``: its pass/fail rule (regressions; zero tolerance), None when it has none.
    ``default``: part of compare's default set (otherwise only on request with ``--metrics``).
    ``segments``: averaged per tag in the summary's ``segments``.
    ``headline(name)``: a run-level value of this family that a table of runs shows by default (``headline``).
    """

    name: str
    higher_is_better: bool
    names: Callable[[RunData], list[str]]
    owns: Callable[[str, RunData], bool]
    value: Callable[[str, CaseRecord, RunData], float | None]
    binary: Callable[[str, RunData], bool]
    verdict: Callable[[str, RunData], Verdict | None] = _never
    default: bool = True
    segments: bool = False
    headline: Callable[[str], bool] = lambda name: False


FAMILIES: list[Family] = [
    Family("retrieval", True, retrieval_names, lambda n, r: parse_metric_name(n) is not None, _retrieval_value,
           lambda n, r: parse_metric_name(n)[0] == "hit",  # type: ignore[index]
           lambda n, r: PASS_FAIL if parse_metric_name(n)[0] == "hit" else None,  # type: ignore[index]
           segments=True, headline=_retrieval_headline),
    Family("judge", True, _judge_names, lambda n, r: n in _judge_names(r), _judge_value, _judge_is_binary,
           lambda n, r: PASS_FAIL if _judge_is_binary(n, r) else None, segments=True,
           headline=lambda n: n in HEADLINE_JUDGES),
    Family("reference-free", True, _reference_free_names, lambda n, r: n in REFERENCE_FREE, _score_value,
           lambda n, r: REFERENCE_FREE[n].binary, lambda n, r: REFERENCE_FREE[n].verdict, segments=True,
           headline=lambda n: n in REFERENCE_FREE),
    Family("context waste", False, _waste_names, lambda n, r: n in LOWER_IS_BETTER, _judge_value, lambda n, r: False,
           segments=True),
    Family("latency", False, lambda r: ["latency_ms"], lambda n, r: n == "latency_ms", _latency_value,
           lambda n, r: False, headline=lambda n: n == "latency_p95_ms"),
    Family("stage latency", False, _stage_names, lambda n, r: bool(_STAGE.match(n)) and not _PERCENTILE.match(n)
           and n != "latency_mean_ms", _latency_value, lambda n, r: False, default=False),
    Family("tokens", False, lambda r: list(_TOKEN_PARTS), lambda n, r: n in _TOKEN_PARTS, _token_value,
           lambda n, r: False, headline=lambda n: n == "tokens_per_query"),
    Family("cost", False, lambda r: ["cost_per_query"], lambda n, r: n == "cost_per_query", _cost_value,
           lambda n, r: False, headline=lambda n: n == "cost_per_query"),
    Family("failures", False, lambda r: list(_FAILURE_TEST), lambda n, r: n in _FAILURE_TEST, _failure_value,
           lambda n, r: True, default=False),
]


#: other names of measures -> the measure's own name (``groundedness``: faithfulness's other name, as in the judge
#: tools)
ALIASES: dict[str, str] = {"groundedness": "faithfulness"}


def canonical(name: str) -> str:
    """The measure's own name: an alias (``ALIASES``) resolved, any other name unchanged."""
    return ALIASES.get(name, name)


def headline(rows: Iterable[dict[str, float | None]]) -> list[str]:
    """The headline values recorded in ``rows`` (run-level values by name, e.g. a history's runs), by family in
    registry order (nDCG, recall and MRR at cut-off 10, the default-primary verdict judges, the reference-free
    scores, latency p95, tokens and cost per query), in the order recorded within a family. A lower-is-better one
    that is 0 in every row (a local model's tokens and cost) is left out, as compare leaves it out."""
    given: dict[str, list[float]] = {}
    for row in rows:
        for name, value in row.items():
            if value is not None:
                given.setdefault(canonical(name), []).append(value)
    return [n for family in FAMILIES for n, values in given.items() if family.headline(n)
            and (family.higher_is_better or any(v != 0 for v in values))]


def family_of(name: str, run: RunData) -> Family | None:
    name = canonical(name)
    return next((f for f in FAMILIES if f.owns(name, run)), None)


def _family(name: str, run: RunData) -> Family:
    family = family_of(name, run)
    if family is None:
        raise unknown_metric(name, [run])
    return family


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def per_case(name: str, run: RunData) -> dict[str, float]:
    """case name -> the measure's value, the mean over the case's repeats (cases without a value omitted)."""
    name = canonical(name)
    family = _family(name, run)
    out: dict[str, float] = {}
    for case, records in run.cases.items():
        values = [v for v in (family.value(name, r, run) for r in records) if v is not None]
        if values:
            out[case] = _mean(values)
    return out


def record_means(run: RunData, names: Iterable[str], records: Iterable[CaseRecord] | None = None) -> dict[str, float]:
    """name -> the mean of its per-record values over ``records`` (default: all; every repeat counts once);
    names without a value are left out. The summary's, segments' and repeat spreads' averaging."""
    chosen = list(run.records if records is None else records)
    out = {}
    for name in names:
        family = _family(name, run)
        values = [v for v in (family.value(name, r, run) for r in chosen) if v is not None]
        if values:
            out[name] = _mean(values)
    return out


def available(run: RunData, *, defaults_only: bool = False, segments_only: bool = False) -> list[str]:
    """Every per-case measure that has at least one value in ``run``, in registry order."""
    names: list[str] = []
    for family in FAMILIES:
        if (defaults_only and not family.default) or (segments_only and not family.segments):
            continue
        names += [n for n in family.names(run) if any(family.value(n, r, run) is not None for r in run.records)]
    return names


# Run-level values that are not a mean of a per-case measure: name -> (per-case measure, reducer).
def aggregate_parts(name: str) -> tuple[str, Callable[[list[float]], float]]:
    """(per-case measure, reducer) of a run-level value: ``latency_p95_ms`` -> (latency_ms, 95th percentile)."""
    match = _PERCENTILE.match(name)
    if match:
        q = float(match.group(1))
        return "latency_ms", lambda values: float(percentile(values, q))  # type: ignore[arg-type]
    if name == "latency_mean_ms":
        return "latency_ms", _mean
    return canonical(name), _mean


def run_value(name: str, run: RunData, cases: set[str] | None = None) -> float | None:
    """The run-level value of ``name`` (see module docstring), over ``cases`` when given; None without values."""
    measure, reduce = aggregate_parts(name)
    values = [v for c, v in per_case(measure, run).items() if cases is None or c in cases]
    return reduce(values) if values else None


def run_values(run: RunData) -> dict[str, float]:
    """Every run-level value the run has (history and OTel record these)."""
    out = {}
    for name in available(run):
        out[name] = run_value(name, run)
        if name == "latency_ms":
            for extra in PERCENTILES:
                out[extra] = run_value(extra, run)
    return {k: v for k, v in out.items() if v is not None}


def known_names(runs: list[RunData]) -> list[str]:
    """The names every one of ``runs`` has values for (a metric is read from each of them), in the first's order."""
    common = set.intersection(*(set(available(run)) for run in runs)) if runs else set()
    return [n for n in available(runs[0]) if n in common] + [*PERCENTILES, "latency_mean_ms"] if runs else []


def _not_applicable(name: str, run: RunData) -> Counter[str]:
    """Why reference-free score ``name`` did not apply to the run's cases: its ``<name>_kind`` labels (none: the
    judge did not run)."""
    return Counter(r.judge_labels[f"{name}_kind"] for r in run.records if f"{name}_kind" in r.judge_labels)


def unknown_metric(name: str, runs: list[RunData], where: str = "metric",
                   run: RunData | None = None) -> EvaluationsError:
    """The error of a metric without values in ``run`` (default: the first of ``runs``): a reference-free score
    that ran but applied to no case, one that did not run, or a name no run knows."""
    measure, lacking = canonical(name), run or runs[0]
    spec = REFERENCE_FREE.get(measure)
    if spec is not None and (kinds := _not_applicable(measure, lacking)):
        listed = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
        return EvaluationsError(
            f"{name!r} ran on {lacking.path} but applied to none of its cases: n 0, "
            f"{kinds.total()} not applicable ({listed}); it applies to {spec.applies}", where=where,
            fix=f"see why in the run's answers (report.html, or judge_labels.{measure}_kind in cases.jsonl); a rule "
                f"on {name} needs a run with answers it applies to: fix the system, or drop the rule")
    if measure == "cost_per_query" and (counted := [r for r in lacking.records if token_usage(r) is not None]):
        named = sorted({r.model or r.tier for r in counted if r.model or r.tier})
        return EvaluationsError(
            f"the run has no {name!r} values: no price is known for the tokens of {lacking.path} (its model "
            + (f"named {', '.join(map(repr, named))} is" if named else "is not named and") + " not in its "
            "config's prices; not 0 USD)", where=where,
            fix="price the model in the config (prices: {'provider:name': {input: USD per 1M, output: ...}}; a "
                "system names its model in its replies' \"model\" or \"tier\") and re-run, or leave "
                f"{name} out")
    if measure in (*_TOKEN_PARTS, "cost_per_query") and any(usage(r) is not None for r in lacking.records):
        return EvaluationsError(
            f"the run has no {name!r} values: the system answered on {lacking.path} without reporting token usage "
            "(not reported, not 0 tokens)", where=where,
            fix=f"have the system return \"usage\": {{\"input_tokens\", \"output_tokens\"}} with its answer, or "
                f"leave {name} out")
    having = [r for r in runs if r is not lacking and family_of(measure, r) is not None and per_case(measure, r)]
    if having:  # another run has it: runs scored at other cut-offs, or with other judges
        ks = sorted({parsed[2] for r in lacking.records for k in r.metrics if (parsed := parse_metric_name(k))})
        cut_offs = f" (its cut-offs: {', '.join(map(str, ks))})" if ks and parse_metric_name(measure) else ""
        return EvaluationsError(
            f"{name!r} has values in {having[0].path} but none in {lacking.path}{cut_offs}", where=where,
            fix="use a metric every run has: " + ", ".join(known_names(runs)) + "; or re-run so that both have it")
    asked = ((lacking.summary.model_extra or {}).get("reference_free") or {}).get("metrics") or {}
    if spec is not None and measure in asked and (failed := sum(r.status == "failed" for r in lacking.records)):
        return EvaluationsError(  # the judge was on, and the cases it would have judged failed
            f"the run has no {name!r} values: {failed} of {len(lacking.records)} cases of {lacking.path} failed "
            "(the system or a stage raised) and no other case has a value", where=where,
            fix="see each case's error (report.html, or error in cases.jsonl), fix the system and re-run")
    if spec is not None and measure in asked:  # the judge was on: the run gave it nothing to judge
        return EvaluationsError(
            f"the run has no {name!r} values: its judge ran on {lacking.path} but had nothing to judge; {spec.needs}",
            where=where, fix=f"re-run so that the cases have what {measure} reads (answers: not --skip-qa, or a "
                             "--system that returns an answer; retrieved passages), or use one of: "
                             + ", ".join(known_names(runs)))
    if spec is not None:
        return EvaluationsError(
            f"the run has no {name!r} values: {spec.needs}", where=where,
            fix=f"re-run with judge.reference_free listing {measure} (or EVALUATIONS_REFERENCE_FREE={measure}), or "
                "use one of: " + ", ".join(known_names(runs)))
    return EvaluationsError(
        f"unknown metric {name!r}", where=where,
        fix="use one of: " + ", ".join(known_names(runs)) + " (retrieval metrics at the run's cut-offs, the run's "
            "judges, latency_pNN_ms, tokens_per_query, cost_per_query, failure_rate; groundedness = faithfulness)",
    )


def check_metric(name: str, runs: list[RunData], where: str = "metric", *, per_case_only: bool = False) -> None:
    """EvaluationsError naming ``name`` unless every run has values for it (``per_case_only``: no run-level
    percentiles, which have no per-case values to pair)."""
    measure = aggregate_parts(name)[0]
    if per_case_only and measure != canonical(name):
        raise EvaluationsError(f"{name!r} is a run-level value with no per-case values to pair", where=where,
                               fix=f"compare {measure!r} (per case) instead")
    for run in runs:
        if family_of(measure, run) is None or not per_case(measure, run):
            raise unknown_metric(name, runs, where, run)
