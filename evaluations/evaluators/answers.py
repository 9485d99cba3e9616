"""pydantic-evals evaluators for the answer judges, and the ``JudgeAgreement`` report evaluator.

Each case evaluator reads the generated answer from ``ctx.output.answer.answer`` and the gold
alternatives from ``ctx.metadata.answers``. Without gold answers or without an answer (QA skipped
or failed) it returns ``{}``: no score, rather than a misleading 0.

Result names are chosen so pass rates read well: ``keyword_correct``, ``exact_match``,
``contains_gold``, ``semantic_correct``, ``offline_correct`` are assertions (verdicts);
``keyword_overlap``, ``token_f1``, ``semantic_similarity``, ``offline_p_correct`` are scores.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext, ReportEvaluator
from pydantic_evals.evaluators import ReportEvaluatorContext
from pydantic_evals.reporting.analyses import ConfusionMatrix, ReportAnalysis, TableResult

from evaluations.evaluators.cost import MeasuredJudge
from evaluations.results.records import VERDICT_NAMES
from evaluations.judging.correctness import lexical
from evaluations.judging.validation.agreement import METRICS, bootstrap_ci, confusion, metrics

__all__ = [
    "KeywordOverlap",
    "TokenF1",
    "ExactMatch",
    "Containment",
    "SemanticSimilarity",
    "OfflineJudge",
    "JudgeAgreement",
    "JudgedCase",
    "judged_case",
    "screened",
    "without_cache_dir",
]



def _field(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def without_cache_dir(arguments: dict[str, Any]) -> dict[str, Any]:
    """An evaluator's serialized arguments without ``cache_dir``: a local folder, not part of what it measures
    (reports read the same on every machine)."""
    return {k: v for k, v in arguments.items() if k != "cache_dir"}


def _gold_and_answer(ctx: EvaluatorContext) -> tuple[list[str], str] | None:
    """(gold alternatives, generated answer), or None when either is missing."""
    refs = [r for r in (_field(ctx.metadata, "answers") or []) if isinstance(r, str) and r.strip()]
    answer = _field(_field(ctx.output, "answer"), "answer")
    if not refs or answer is None:
        return None
    return refs, answer


@dataclass(frozen=True)
class JudgedCase:
    """What a correctness judge needs of a case: question, gold alternatives (empty when unanswerable), answer."""

    question: str
    refs: list[str]
    answer: str
    answerable: bool


def judged_case(ctx: EvaluatorContext) -> JudgedCase | None:
    """The case as a correctness judge sees it, or None when there is nothing to judge: no answer (QA skipped
    or failed: counted by the summary, not judged here), or an answerable question without gold answers."""
    answer = _field(_field(ctx.output, "answer"), "answer")
    if answer is None:
        return None
    refs = [r for r in (_field(ctx.metadata, "answers") or []) if isinstance(r, str) and r.strip()]
    answerable = bool(_field(ctx.metadata, "answerable", True))
    if answerable and not refs:
        return None
    question = _field(ctx.inputs, "query", "") or ""
    return JudgedCase(str(question), refs, str(answer), answerable)


def screened(case: JudgedCase, name: str, p_name: str | None = None) -> dict[str, Any] | None:
    """The non-answer screen's verdict (``judging.correctness.nonanswer``) as evaluator results, or None to let the judge
    decide: ``{name: EvaluationReason(verdict, reason), p_name: 0.0 / 1.0, "answer_kind": kind}``."""
    from evaluations.judging.correctness.nonanswer import screen

    result = screen(case.question, case.refs, case.answer, answerable=case.answerable)
    if result.decided is None:
        return None
    out: dict[str, Any] = {name: EvaluationReason(result.decided, reason=f"screen: {result.reason}")}
    if p_name:
        out[p_name] = float(result.decided)
    if result.kind:
        out["answer_kind"] = result.kind
    return out


@dataclass(repr=False)
class KeywordOverlap(Evaluator):
    """keyword_overlap = |kw(gold) ∩ kw(answer)| / |kw(gold)| (max over alternatives); correct iff > threshold."""

    threshold: float = lexical.KEYWORD_THRESHOLD

    def evaluate(self, ctx: EvaluatorContext) -> dict[str, float | EvaluationReason]:
        pair = _gold_and_answer(ctx)
        if pair is None:
            return {}
        overlap = lexical.keyword_overlap(*pair)
        verdict = overlap > self.threshold
        reason = f"keyword overlap {overlap:.2f} {'>' if verdict else '<='} {self.threshold:g}"
        return {"keyword_overlap": overlap, "keyword_correct": EvaluationReason(verdict, reason=reason)}


@dataclass(repr=False)
class TokenF1(Evaluator):
    """SQuAD token F1 between the answer and the best gold alternative."""

    def evaluate(self, ctx: EvaluatorContext) -> dict[str, float]:
        pair = _gold_and_answer(ctx)
        return {} if pair is None else {"token_f1": lexical.token_f1(*pair)}


@dataclass(repr=False)
class ExactMatch(Evaluator):
    """The normalised answer equals a normalised gold alternative."""

    def evaluate(self, ctx: EvaluatorContext) -> dict[str, bool]:
        pair = _gold_and_answer(ctx)
        return {} if pair is None else {"exact_match": lexical.exact_match(*pair)}


@dataclass(repr=False)
class Containment(Evaluator):
    """A normalised gold alternative occurs (on word boundaries) in the normalised answer."""

    def evaluate(self, ctx: EvaluatorContext) -> dict[str, bool]:
        pair = _gold_and_answer(ctx)
        return {} if pair is None else {"contains_gold": lexical.containment(*pair)}


@dataclass(repr=False)
class SemanticSimilarity(MeasuredJudge, Evaluator):
    """max cosine(all-MiniLM-L6-v2(gold), all-MiniLM-L6-v2(answer)); with a threshold, also a verdict. Its cost per
    case: ``semantic_similarity_cost`` (``evaluators.cost``)."""

    COST_NAME = "semantic_similarity"

    threshold: float | None = None
    #: embeddings from/to the on-disk judge-embedding cache (``semantic.default_cache_path``), so a re-run of
    #: the same answers never loads the model; False recomputes them (``--no-cache``)
    cache: bool = True
    cache_dir: str | None = None  # the cache's folder (``Config.judge_cache_dir``); None: the default one

    async def judge_case(self, ctx: EvaluatorContext) -> dict[str, float | bool]:
        from evaluations.judging.correctness.semantic import cache_file, semantic_similarity

        pair = _gold_and_answer(ctx)
        if pair is None:
            return {}
        # the model (loaded on the first cache miss) runs in a worker thread, not on the event loop of the cases
        similarity = await anyio.to_thread.run_sync(
            functools.partial(semantic_similarity, *pair, cache_path=cache_file(self.cache, self.cache_dir)))
        result: dict[str, float | bool] = {"semantic_similarity": similarity}
        if self.threshold is not None:
            result["semantic_correct"] = similarity >= self.threshold
        return result

    def build_serialization_arguments(self) -> dict[str, Any]:
        return without_cache_dir(super().build_serialization_arguments())


@dataclass(repr=False)
class OfflineJudge(MeasuredJudge, Evaluator):
    """The calibrated offline judge (``judges/offline_judge.json`` unless ``params`` names another file), after
    the non-answer screen (``judging.correctness.nonanswer``: a non-answer is incorrect, ``answer_kind`` says which kind).
    Its cost per case: ``offline_judge_cost`` (``evaluators.cost``)."""

    COST_NAME = "offline_judge"

    params: str | None = None
    cache: bool = True  # as ``SemanticSimilarity.cache``: its semantic-similarity feature
    cache_dir: str | None = None  # as ``SemanticSimilarity.cache_dir``

    async def judge_case(self, ctx: EvaluatorContext) -> dict[str, Any]:
        from evaluations.judging.correctness.offline import load_model
        from evaluations.judging.correctness.semantic import cache_file

        case = judged_case(ctx)
        if case is None:
            return {}
        decided = screened(case, "offline_correct", "offline_p_correct")
        if decided is not None:
            return decided
        model = load_model(self.params)
        probability, verdict = await anyio.to_thread.run_sync(
            functools.partial(model.judge, case.refs, case.answer, question=case.question,
                              cache_path=cache_file(self.cache, self.cache_dir)))
        reason = f"p(correct) = {probability:.2f}, threshold {model.threshold:g}"
        return {"offline_p_correct": probability, "offline_correct": EvaluationReason(verdict, reason=reason)}

    def build_serialization_arguments(self) -> dict[str, Any]:
        return without_cache_dir(super().build_serialization_arguments())


@dataclass(repr=False)
class JudgeAgreement(ReportEvaluator):
    """Judge verdicts vs the human reference-correctness label (``ctx.metadata.label``).

    With labelled cases: accuracy, precision, recall, F1, Cohen's κ per judge (positive = correct,
    formulas in ``judging.validation.agreement``) with 95% bootstrap CIs over questions, plus a confusion
    matrix per judge. Without labels: the pass rate of each judge. ``judges`` names the verdict
    assertions to compare; default: ``VERDICT_NAMES`` and every other ``*_correct`` assertion present.
    """

    judges: Sequence[str] | None = None
    resamples: int = 1000
    seed: int = 0

    def _names(self, cases: Sequence[Any]) -> list[str]:
        if self.judges is not None:
            return list(self.judges)
        present = {name for case in cases for name in case.assertions}
        known = [n for n in VERDICT_NAMES if n in present]
        return known + sorted(n for n in present if n.endswith("_correct") and n not in known)

    def evaluate(self, ctx: ReportEvaluatorContext) -> list[ReportAnalysis]:
        cases = list(ctx.report.cases)
        n_failed = len(ctx.report.failures)
        names = self._names(cases)
        if not names:  # no verdict in any case (questions without gold): no table, not an empty one
            return []
        labelled = [c for c in cases if _field(c.metadata, "label") is not None]
        if not labelled:
            rows = []
            for name in names:
                verdicts = [bool(c.assertions[name].value) for c in cases if name in c.assertions]
                rate = float(np.mean(verdicts)) if verdicts else float("nan")
                rows.append([name, len(verdicts), len(cases) + n_failed - len(verdicts), round(rate, 4)])
            columns = ["judge", "judged", "not judged", "pass rate"]
            return [TableResult(title="Judge pass rates", columns=columns, rows=rows)]

        analyses: list[ReportAnalysis] = []
        rows = []
        for name in names:
            pairs = [
                (
                    bool(_field(c.metadata, "label")),
                    bool(c.assertions[name].value),
                    str(_field(c.metadata, "query_id") or c.name),
                )
                for c in labelled
                if name in c.assertions
            ]
            not_judged = len(labelled) - len(pairs)
            if not pairs:
                rows.append([name, 0, not_judged] + [None] * len(METRICS))
                continue
            labels, verdicts, groups = (np.array(x) for x in zip(*pairs))
            counts = confusion(labels, verdicts)
            values = metrics(counts)
            ci = bootstrap_ci(labels, verdicts, groups, resamples=self.resamples, seed=self.seed)
            rows.append(
                [name, len(pairs), not_judged]
                + [_with_ci(float(values[m]), ci[m]) for m in METRICS]
            )
            tp, fp, fn, tn = (int(x) for x in counts)
            analyses.append(
                ConfusionMatrix(
                    title=f"{name} vs human label",
                    class_labels=["correct", "incorrect"],
                    matrix=[[tp, fn], [fp, tn]],  # rows: human (expected), columns: judge (predicted)
                )
            )
        table = TableResult(
            title="Judge agreement with human labels (95% bootstrap CI over questions)",
            description=f"{len(labelled)} labelled cases, {n_failed} failed cases (no verdict)",
            columns=["judge", "judged", "not judged", *METRICS],
            rows=rows,
        )
        return [table, *analyses]


def _with_ci(value: float, ci: tuple[float, float]) -> str | None:
    if value != value:
        return None
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
