"""``summary.json`` from the case records alone (never from live objects), so a resumed run, a straight run and
a re-read of an old folder summarise the same way.

Averaging rules:
- a retrieval metric's mean is over the cases that have relevant documents; a case whose retrieval failed
  (``status == "failed"``) counts as 0, as an empty result list would, and is counted in ``counts.failed``;
  a case whose answer or judge stage failed keeps its retrieval scores;
- answer accuracy (``answers.judges[J].accuracy``, for every verdict judge J: a boolean verdict whose name is in
  ``evaluations.results.records.VERDICT_NAMES`` or ends in ``_correct``) is over all the cases the run had to
  answer, failures included (see ``answer_accuracy``); ``mean``/``n`` beside it are the old pass rate over the
  cases J gave a verdict for, kept for continuity; a score judge (token F1, similarity, …) has ``mean``/``n`` only.
  Failures are counted per stage (``counts.qa_failed``, ``counts.judge_failed``), never dropped silently;
- segments and repeat spreads average the same per-case values: retrieval as above, a verdict judge's value on a
  case it should have judged but did not is 0 (so a segment's verdict mean is its accuracy), scores over the
  cases that have them;
- with ``--repeat N`` every (case, repeat) record counts once; ``repeats`` gives the run-to-run spread of each
  metric's mean (standard deviation, min, max over the N repeat means).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from evaluations.results.records import VERDICT_NAMES
from evaluations.results.headline import answer_headline, disagreement_line
from evaluations.results.stats import distribution
from evaluations.results.retrieval_metrics import compute_all
from evaluations.results.records import STAGES
from evaluations.results.records import CaseRecord

AVERAGING = ("retrieval means over cases with relevant documents; cases whose retrieval failed count as 0; "
             "answer/judge failures keep their retrieval scores; answer accuracy over every case to answer with "
             "gold answers (failed, empty or unjudged answers count as incorrect) plus the unanswerable cases the "
             "judge gave a verdict for")


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


#: the correctness judges compared for "judges disagree on N of M answers" (boolean verdicts; a run computes some)
DISAGREEMENT_JUDGES = ("offline_correct", "llm_judge", "combined_correct", "semantic_correct", "keyword_correct")


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


def disagreements(records: list[CaseRecord], judges: tuple[str, ...] = DISAGREEMENT_JUDGES) -> dict[str, Any]:
    """Answers on which the ``judges`` present (boolean verdicts) do not all agree.

    ``of`` = records with verdicts of at least two of ``judges``; ``n`` = those whose verdicts are not all
    equal; ``cases`` = their record names, in record order."""
    compared = [r for r in records if sum(isinstance(r.judges.get(j), bool) for j in judges) >= 2]
    split = [r.name for r in compared if len({r.judges[j] for j in judges if isinstance(r.judges.get(j), bool)}) > 1]
    return {"n": len(split), "of": len(compared), "judges": list(judges), "cases": split}


def _answer_summary(records: list[CaseRecord], primary_judge: str | None, price: tuple[float, float],
                    primary_validation: dict[str, Any] | None = None,
                    primary_chosen_by: str | None = None) -> dict[str, Any]:
    values: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for record in records:
        for name, value in record.judges.items():
            if isinstance(value, (bool, int, float)) and math.isfinite(float(value)):
                values[name].append(float(value))
        for err in record.judge_errors:
            errors[err.evaluator] += 1
    verdicts = set(verdict_names(records))
    judges: dict[str, dict[str, Any]] = {}
    for name, v in sorted(values.items()):
        judges[name] = {"mean": sum(v) / len(v), "n": len(v)}
        if name in verdicts:
            judges[name].update(answer_accuracy(records, name))
    answered = [r for r in records if r.answer is not None]
    attempted = [r for r in records if r.qa.status != "skipped"]
    due = [r for r in records if to_answer(r)]
    kinds = [answer_kind(r) for r in due]
    usage_in = [r.usage.get("input_tokens", 0) for r in attempted]
    usage_out = [r.usage.get("output_tokens", 0) for r in attempted]
    costs = [(i * price[0] + o * price[1]) / 1e6 for i, o in zip(usage_in, usage_out)]
    correct = sum(1 for r in answered if r.judges.get(primary_judge) is True) if primary_judge else 0
    non_empty = sum(1 for r in due if non_empty_answer(r))
    modes: dict[str, int] = defaultdict(int)
    for r in answered:
        modes[r.qa.mode or "unknown"] += 1
    return {
        "judges": judges,
        "judge_errors": dict(errors),
        "attempted": len(attempted),
        "answered": len(answered),
        "to_answer": len(due),
        "answered_non_empty": non_empty,
        "answered_rate": non_empty / len(due) if due else None,
        "cases_to_answer": {kind: kinds.count(kind) for kind in ("gold", "unanswerable", "no_gold")},
        "qa_failed": sum(1 for r in records if r.qa.status == "failed"),
        "output_modes": dict(sorted(modes.items())),
        "primary_judge": primary_judge,
        "primary_chosen_by": primary_chosen_by,
        "primary_validation": primary_validation,
        "disagreements": disagreements(records),
        "correct": correct,
        "tokens": {"input": distribution(usage_in), "output": distribution(usage_out),
                   "total_input": sum(usage_in), "total_output": sum(usage_out),
                   "per_query": (sum(usage_in) + sum(usage_out)) / len(attempted) if attempted else None,
                   "per_correct_answer": (sum(usage_in) + sum(usage_out)) / correct if correct else None},
        "cost_usd": {"per_query": sum(costs) / len(costs) if costs else 0.0, "total": sum(costs),
                     "price_per_1m_tokens": {"input": price[0], "output": price[1]}},
    }


def _case_values(record: CaseRecord, ks: list[int], scored: bool, verdicts: Iterable[str] = ()) -> dict[str, float]:
    """Every per-case number a summary averages: retrieval metrics, judge scores, and the ``verdicts``' outcomes
    as accuracy counts them (``verdict_outcome``: 1 correct, 0 incorrect or missing, absent when not counted)."""
    verdicts = set(verdicts)
    row: dict[str, float] = {}
    if scored and (m := _retrieval_metrics(record, ks)) is not None:
        row.update(m)
    row.update({k: float(v) for k, v in record.judges.items() if k not in verdicts})
    for name in verdicts:
        if (outcome := verdict_outcome(record, name)) is not None:
            row[name] = float(outcome)
    return row


def _segments(records: list[CaseRecord], ks: list[int], scored: bool) -> dict[str, Any]:
    verdicts = verdict_names(records)
    by_tag: dict[str, list[CaseRecord]] = defaultdict(list)
    for record in records:
        for tag in record.tags:
            by_tag[tag].append(record)
    return {tag: {"cases": len(rs), "metrics": _means(_case_values(r, ks, scored, verdicts) for r in rs)}
            for tag, rs in sorted(by_tag.items())}


def _repeat_spread(records: list[CaseRecord], ks: list[int], scored: bool) -> dict[str, Any] | None:
    verdicts = verdict_names(records)
    by_repeat: dict[int, list[CaseRecord]] = defaultdict(list)
    for record in records:
        by_repeat[record.repeat].append(record)
    if len(by_repeat) < 2:
        return None
    means = [_means(_case_values(r, ks, scored, verdicts) for r in rs) for _, rs in sorted(by_repeat.items())]
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
              analyses: list[Any] | None = None, primary_validation: dict[str, Any] | None = None,
              primary_chosen_by: str | None = None) -> dict[str, Any]:
    """The run's summary (module docstring). ``primary_validation``: the primary judge's entry of the shipped
    validation file (``JudgeValidation`` as a dict; None: not validated), recorded as ``answers.primary_validation``
    for the headline; ``primary_chosen_by`` says how the primary judge was chosen (``qa.plan``)."""
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
        summary["answers"] = _answer_summary(records, primary_judge, price, primary_validation, primary_chosen_by)
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
        lines += _answers_markdown(answers)
    lines += ["Counts: " + ", ".join(f"{k} {v}" for k, v in summary["counts"].items()), "",
              f"Averaging: {summary['averaging']}.", ""]
    return "\n".join(lines)


DISAGREEMENTS_LISTED = 20  # case names summary.md lists (report.md lists them all)


def _number_text(value: Any, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _answers_markdown(answers: dict[str, Any]) -> list[str]:
    """The answers part of summary.md: the headline, the disagreement line and one row per judge."""
    lines = []
    if (headline := answer_headline(answers)) is not None:
        lines += [f"**{headline}**", ""]
    if (line := disagreement_line(answers)) is not None:
        cases = answers["disagreements"]["cases"]
        shown = ", ".join(cases[:DISAGREEMENTS_LISTED]) + (f", … ({len(cases) - DISAGREEMENTS_LISTED} more)"
                                                           if len(cases) > DISAGREEMENTS_LISTED else "")
        lines += [f"{line[0].upper()}{line[1:]}" + (f": {shown}" if shown else "") + ".", ""]
    lines += ["| judge / answer metric | accuracy (all cases to answer) | correct / cases | mean over judged | "
              "judged |", "|---|---|---|---|---|"]
    for name, value in answers["judges"].items():
        counted = f"{value['correct']} / {value['n_cases']}" if "n_cases" in value else "—"
        lines.append(f"| {name} | {_number_text(value.get('accuracy'))} | {counted} | {value['mean']:.4f} | "
                     f"{value['n']} |")
    return lines + ["", "Accuracy counts a failed or empty answer, a judge failure and a missing verdict as "
                        "incorrect; \"mean over judged\" is the pass rate over the answers the judge gave a verdict "
                        "for.", ""]
