"""``summary.json`` from the case records alone (never from live objects), so a resumed run, a straight run and
a re-read of an old folder summarise the same way. Every per-case value, failure rule and mean comes from the
measure registry (``results.measures``); segments from the one segment rule (``results.segments``).

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
- a reference-free score (``records.REFERENCE_FREE_SCORES``: ``faithfulness``, ``answer_relevance``,
  ``context_relevance``; no gold needed) is a mean over the cases it applies to, beside ``n``, ``not_applicable``
  and a 95% ``ci95`` (``results.reference_free``: Wilson for 0/1 values, Student t otherwise); the answer judges
  have these in ``answers.judges``, all three are in the ``reference_free`` section (with the qrels agreement of
  context relevance) and their means in ``metrics`` (compare, gate, matrix and history read them through the
  measure registry). They are not verdicts, and never in ``disagreements`` (correctness judges only);
- tokens (``answers.tokens``) are over the cases whose answer stage ran and whose token counts are known
  (``measures.token_usage``): a user's system that answers without reporting usage gives ``per_query`` null (not
  reported), never 0; one that reports 0 tokens gives 0;
- cost (``answers.cost_usd``) is over the cases whose tokens and price are known (``RunSummary.price_of``): the
  price of the model or tier a system's reply names (the config's ``prices``), else for the built-in QA agent's
  answers its model's (an embedded model or a local Ollama one costs 0 unless priced, ``plan.runs_locally``; a
  served one without a price is unknown); a user's system's answer naming no priced model is unknown too: null,
  never 0 USD (``total`` null too when no case has a known cost); ``unpriced`` counts the cases with tokens and
  no price (present when there are any; the report's cost row says how many were left out);
- judging's cost (``judging``: per judge, wall seconds and model calls per case, beside the answer stage's seconds)
  is over the cases each judge measured itself on (``results.judging``);
- with ``--repeat N`` every (case, repeat) record counts once; ``repeats`` gives the run-to-run spread of each
  metric's mean (standard deviation, min, max over the N repeat means).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from evaluations.results import measures
from evaluations.results.calibration import calibration_summary
from evaluations.results.judging import judging_summary
from evaluations.results.measures import answer_accuracy, answer_kind, non_empty_answer, to_answer, verdict_names
from evaluations.results.records import REFERENCE_FREE_SCORES, STAGES, SYSTEM_ANSWER, CaseRecord
from evaluations.results.reference_free import language_warning, reference_free_summary, score_summary
from evaluations.results.retrieval_metrics import METRIC_ORDER, parse_metric_name
from evaluations.results.rundata import AnswersSummary, Cost, RunData, RunSummary
from evaluations.results.segments import segment_metrics
from evaluations.results.stats import distribution

AVERAGING = ("retrieval means over cases with relevant documents; cases whose retrieval failed count as 0; "
             "answer/judge failures keep their retrieval scores; answer accuracy over every case to answer with "
             "gold answers (failed, empty or unjudged answers count as incorrect) plus the unanswerable cases the "
             "judge gave a verdict for")


def _metric_order(name: str) -> tuple[int, int]:
    """summary.json lists retrieval metrics by metric (``METRICS`` order), then cut-off."""
    metric, _, k = parse_metric_name(name)  # type: ignore[misc]
    return METRIC_ORDER[metric], k


def retrieval_means(run: RunData) -> tuple[dict[str, float], int]:
    """The run's retrieval means (``measures``: over the cases with relevant documents, a failed case 0) and how
    many cases they average."""
    names = sorted(measures.retrieval_names(run), key=_metric_order)
    evaluated = sum(1 for r in run.records if r.has_relevant and (r.status == "failed" or r.metrics))
    return measures.record_means(run, names), evaluated


#: per-case judges of the retrieved context, not of the answer: not in ``answers``
RETRIEVAL_JUDGES = frozenset({"context_relevance"})

#: the correctness judges compared for "judges disagree on N of M answers" (boolean verdicts; a run computes some)
DISAGREEMENT_JUDGES = ("offline_correct", "llm_judge", "combined_correct", "semantic_correct", "keyword_correct")


def disagreements(records: list[CaseRecord], judges: tuple[str, ...] = DISAGREEMENT_JUDGES) -> dict[str, Any]:
    """Answers on which the ``judges`` present (boolean verdicts) do not all agree.

    ``of`` = records with verdicts of at least two of ``judges``; ``n`` = those whose verdicts are not all
    equal; ``cases`` = their record names, in record order."""
    compared = [r for r in records if sum(isinstance(r.judges.get(j), bool) for j in judges) >= 2]
    split = [r.name for r in compared if len({r.judges[j] for j in judges if isinstance(r.judges.get(j), bool)}) > 1]
    return {"n": len(split), "of": len(compared), "judges": list(judges), "cases": split}


def _answer_summary(run: RunData, primary_judge: str | None, primary_validation: dict[str, Any] | None = None,
                    primary_chosen_by: str | None = None) -> dict[str, Any]:
    records, cost_usd = run.records, run.summary.answers.cost_usd if run.summary.answers else None
    values: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for record in records:
        for name, value in record.judges.items():
            if name in RETRIEVAL_JUDGES:
                continue  # a judge of the retrieved context, not of the answer (``reference_free``)
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
        elif name in REFERENCE_FREE_SCORES:
            judges[name].update(score_summary(run, name))
    answered = [r for r in records if r.answer is not None]
    used = [u for r in records if (u := measures.usage(r)) is not None]  # the cases whose answer stage ran
    known = [u for r in records if (u := measures.token_usage(r)) is not None]  # ... and whose tokens are known
    due = [r for r in records if to_answer(r)]
    kinds = [answer_kind(r) for r in due]
    usage_in, usage_out = [int(i) for i, _ in known], [int(o) for _, o in known]
    # a case has a known cost when its tokens and its price are known (``RunSummary.price_of``)
    priced = [(u, p) for r in records if (u := measures.token_usage(r)) is not None
              and (p := run.summary.price_of(r)) is not None]
    costs = [measures.cost(u, p) for u, p in priced]
    correct = sum(1 for r in answered if r.judges.get(primary_judge) is True) if primary_judge else 0
    non_empty = sum(1 for r in due if non_empty_answer(r))
    modes: dict[str, int] = defaultdict(int)
    for r in answered:
        modes[r.qa.mode or "unknown"] += 1
    return {
        "judges": judges,
        "judge_errors": dict(errors),
        "attempted": len(used),
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
                   "per_query": (sum(usage_in) + sum(usage_out)) / len(known) if known else None,
                   "per_correct_answer": (sum(usage_in) + sum(usage_out)) / correct if correct and known else None},
        "cost_usd": {"per_query": sum(costs) / len(costs) if costs else None, "total": sum(costs) if costs else None,
                     "price_per_1m_tokens": cost_usd.price_per_1m_tokens if cost_usd else None,
                     **({"prices": cost_usd.prices} if cost_usd and cost_usd.prices else {}),
                     # said only when some are: a summary of priced runs reads as it always did
                     **({"unpriced": len(known) - len(priced)} if len(known) > len(priced) else {})},
    }


def _repeat_spread(run: RunData) -> dict[str, Any] | None:
    by_repeat: dict[int, list[CaseRecord]] = defaultdict(list)
    for record in run.records:
        by_repeat[record.repeat].append(record)
    if len(by_repeat) < 2:
        return None
    names = measures.available(run, segments_only=True)
    means = [measures.record_means(run, names, rs) for _, rs in sorted(by_repeat.items())]
    spread = {}
    for key in sorted(set().union(*means)):
        vals = [m[key] for m in means if key in m]
        spread[key] = {"sd": statistics.stdev(vals) if len(vals) > 1 else 0.0, "min": min(vals), "max": max(vals),
                       "identical": max(vals) == min(vals)}
    return {"n": len(by_repeat), "metrics": spread}


def nothing_measured(summary: dict[str, Any]) -> dict[str, Any] | None:
    """A run whose cases completed and that has no metric (no relevant documents, no reference-free value) and no
    judged answer: it reports latency and tokens alone, which a user should hear of rather than read an exit 0."""
    if summary["metrics"] or (summary.get("answers") or {}).get("judges") or not summary["counts"]["complete"]:
        return None
    return {"kind": "nothing_measured", "message": (
        "the run measured no quality: its queries have no relevant documents, no answer was judged and no "
        "reference-free judge gave a value (only latency and tokens are reported); give the rows "
        "relevant_doc_ids or answers, or let the reference-free judges run (drop --skip-qa / --no-reference-free)")}


def repeated_questions(records: list[CaseRecord]) -> dict[str, Any] | None:
    """Cases asking the same question (the same words, case and spacing aside) under different ids: each is scored
    on its own, so the question weighs more in the means, and where their gold differs (relevant documents or
    answers) no system can satisfy both. Said, with the first repeat, rather than left for a user to find."""
    first: dict[str, CaseRecord] = {}
    repeats: list[tuple[CaseRecord, CaseRecord]] = []
    for record in records:
        key = " ".join(record.query.casefold().split())
        if not key or record.repeat:  # --repeat runs a case again under its own name
            continue
        if key in first:
            repeats.append((first[key], record))
        else:
            first[key] = record
    if not repeats:
        return None
    differ = sum(a.relevant != b.relevant or sorted(a.gold_answers) != sorted(b.gold_answers) for a, b in repeats)
    earlier, later = repeats[0]
    return {"kind": "repeated_questions", "message": (
        f"{len(repeats)} case(s) ask a question an earlier case asks (e.g. {later.name!r} asks what "
        f"{earlier.name!r} asks), {differ} of them with other gold (relevant documents or answers): each case is "
        "scored on its own, and where the gold differs no system can get both right; merge or reword them if they "
        "are one question")}


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


def rising_scores(records: list[CaseRecord]) -> dict[str, Any] | None:
    """When a user's system's scores rise along its ranked list in some case (distances, or a list not sorted best
    first), say so: the list's order is the ranking the metrics score (``systems.base``), never the scores."""
    scored = [[v for v in r.scores if v is not None] for r in records if r.unknown_ids is not None]
    rising = sum(1 for s in scored if any(b > a for a, b in zip(s, s[1:])))
    if not rising:
        return None
    return {"kind": "rising_scores", "cases": rising,
            "message": f"the system's scores rise along its ranked list in {rising} of {len(scored)} cases: the list's "
                       "order is the ranking scored (best first), the scores are only recorded; fine if they are "
                       "distances, otherwise return the list sorted best first"}


def unknown_ids(records: list[CaseRecord], examples: int = 5) -> dict[str, Any] | None:
    """A user's system's retrieved ids that are not in the corpus (``CaseRecord.unknown_ids``), over the run: how
    many of how many retrieved ids, in how many cases, a few examples and one message; None when every record
    predates the count (or the run is the built-in pipeline's)."""
    counted = [r for r in records if r.unknown_ids is not None]
    if not counted:
        return None
    unknown = [d for r in counted for d in r.unknown_ids or []]
    retrieved = sum(len(r.retrieved) for r in counted)
    cases = sum(1 for r in counted if r.unknown_ids)
    return {"count": len(unknown), "retrieved": retrieved, "cases": cases,
            "examples": list(dict.fromkeys(unknown))[:examples],
            "message": f"{len(unknown)} of {retrieved} retrieved ids are not in the corpus"}


def mixed_answers(records: list[CaseRecord], examples: int = 3) -> dict[str, Any] | None:
    """A warning when a user's system answered some cases and the built-in QA model the others (the system returned
    no answer for them): every answer judge then mixes two sources, and the run's ``qa_model`` names only one."""
    answered = [r for r in records if r.qa.status == "ok" and r.answer is not None]
    agent = [r.name for r in answered if r.qa.mode != SYSTEM_ANSWER]
    if not agent or len(agent) == len(answered):
        return None
    return {"kind": "mixed_answers", "cases": len(agent), "examples": agent[:examples],
            "message": f"{len(agent)} of {len(answered)} answers are the built-in QA model's (the system returned no "
                       f"answer for those cases, e.g. {', '.join(map(repr, agent[:examples]))}), the others the "
                       "system's: the answer judges mix the two; return an answer for every case (\"\" for none) to "
                       "judge the system alone"}


def nothing_retrieved(records: list[CaseRecord], examples: int = 3) -> dict[str, Any] | None:
    """A warning when some cases that ran retrieved nothing while others retrieved documents: their retrieval
    metrics are 0 and context relevance does not apply, which a mean shows no more plainly than a bad ranking (a
    query of stopwords only, or in a script a full-text index does not split, finds nothing by keywords). None
    when no case or every case retrieved nothing (a system that only answers)."""
    ran = [r for r in records if r.status == "ok"]
    empty = [r.name for r in ran if not r.retrieved]
    if not empty or len(empty) == len(ran):
        return None
    named = ", ".join(map(repr, empty[:examples]))
    return {"kind": "nothing_retrieved", "cases": len(empty), "examples": empty[:examples],
            "message": f"{len(empty)} of {len(ran)} cases retrieved nothing (e.g. {named}): their retrieval metrics are 0 and context relevance does not apply to them; a query of "
                       "stopwords only, or in a language a keyword index does not split (Chinese, Japanese), finds "
                       "nothing by keywords: try search.mode hybrid or vector, or check the system's retriever"}


def counts(records: list[CaseRecord]) -> dict[str, int]:
    """The run's counts. ``no_relevant`` (cases the qrels give no relevant document, left out of the retrieval
    means) only for a run with relevance judgements: a run of questions alone has none to lack."""
    judged = any(r.relevant for r in records)
    return {
        "cases": len(records),
        "complete": sum(1 for r in records if not r.failed_stages),
        "incomplete": sum(1 for r in records if r.failed_stages),
        "failed": sum(1 for r in records if r.status == "failed"),
        "qa_failed": sum(1 for r in records if r.qa.status == "failed"),
        "judge_failed": sum(1 for r in records if r.judge_errors),
        **({"no_relevant": sum(1 for r in records if not r.has_relevant)} if judged else {}),
        "evaluator_failures": sum(len(r.judge_errors) for r in records),
    }


def summarize(records: list[CaseRecord], *, name: str, ks: list[int], extra: dict[str, Any],
              scored: bool = True, primary_judge: str | None = None, price: tuple[float, float] | None = (0.0, 0.0),
              prices: dict[str, tuple[float, float]] | None = None,
              analyses: list[Any] | None = None, primary_validation: dict[str, Any] | None = None,
              primary_chosen_by: str | None = None, calibrate: bool = False,
              dataset_warnings: Sequence[str] = (), reference_free: Sequence[str] = ()) -> RunSummary:
    """The run's summary (module docstring). ``primary_validation``: the primary judge's entry of the shipped
    validation file (``JudgeValidation`` as a dict; None: not validated), recorded as ``answers.primary_validation``
    for the headline; ``primary_chosen_by`` says how the primary judge was chosen (``pipeline.plan``); ``calibrate``
    (a run that answers): the calibration of its probabilities (``results.calibration``). ``price``: USD per 1M
    input/output tokens of the run's model (None: unknown); ``prices``: by the model or tier a system's reply names
    (the config's ``prices``; those no case named are left out). ``dataset_warnings``: what the dataset's adapter
    accepted and a user should know (``Corpus.warnings``: BEIR's empty documents, judged ids it lacks), first among
    the ``warnings``. ``reference_free``: the reference-free judges the run asked for (their section is written
    even when no case got a verdict, e.g. every case failed)."""
    named = {key for r in records for key in (r.model, r.tier) if key}
    priced = RunSummary(answers=AnswersSummary(cost_usd=Cost(
        price_per_1m_tokens=None if price is None else {"input": price[0], "output": price[1]},
        prices={k: {"input": v[0], "output": v[1]} for k, v in (prices or {}).items() if k in named})))
    run = RunData(records=records, summary=priced, ks=ks if scored else [])
    metrics, evaluated = retrieval_means(run) if scored else ({}, 0)
    ok = [r for r in records if r.status == "ok"]
    total = distribution(r.latency_ms.get("total") for r in ok)
    stages = set(STAGES) | {k for r in ok for k in r.latency_ms}
    latency = {
        "p50": total["p50"], "p95": total["p95"], "p99": total["p99"], "mean": total["mean"],
        "by_stage": {stage: distribution(r.latency_ms[stage] for r in ok if stage in r.latency_ms)
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
    if primary_judge and all(answer_kind(r) == "no_gold" for r in records if to_answer(r)):
        # no case can be judged correct or not (no gold answers, e.g. a questions-only run): no primary judge
        primary_judge = primary_validation = primary_chosen_by = None
    if any(r.qa.status != "skipped" or set(r.judges) - RETRIEVAL_JUDGES for r in records):
        summary["answers"] = _answer_summary(run, primary_judge, primary_validation, primary_chosen_by)
    if (judging := judging_summary(records)) is not None:
        summary["judging"] = judging
    if (free := reference_free_summary(run, asked=reference_free)) is not None:
        summary["reference_free"] = free
        summary["metrics"].update({name: entry["mean"] for name, entry in free["metrics"].items()
                                   if entry["mean"] is not None})
    if any(r.tags for r in records):
        summary["segments"] = segment_metrics(run)
    if (spread := _repeat_spread(run)) is not None:
        summary["repeats"] = spread
    warnings = [*({"kind": "dataset", "message": w} for w in dataset_warnings),
                *(w for w in (repeated_questions(records), id_mismatch(records), rising_scores(records),
                             nothing_measured(summary)) if w)]
    warnings += [w for w in (mixed_answers(records), nothing_retrieved(records)) if w is not None]
    if free is not None and (foreign := language_warning(records)):
        warnings.append({"kind": "language", "message": foreign})
    if warnings:
        summary["warnings"] = warnings
    if (unknown := unknown_ids(records)) is not None:
        summary["unknown_ids"] = unknown
    tiers = [r.tier for r in records if r.tier]
    if tiers:
        summary["tiers"] = {t: tiers.count(t) for t in sorted(set(tiers))}
    if calibrate:
        summary["calibration"] = calibration_summary(records, primary_judge)
    summary.update(extra)
    return RunSummary.model_validate(summary)
