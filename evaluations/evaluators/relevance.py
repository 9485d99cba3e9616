"""The reference-free ``answer_relevance`` evaluator: does the answer address the question (``judging.grounded.answer_relevance``)?

Runs on every case that has an answer, with or without gold answers: ``answer_relevance`` is a score, 1.0 or 0.0
(with the rule that decided it as its reason), and ``answer_relevance_kind`` a label (``relevant`` or a
``relevance.KINDS`` key). It is not a correctness verdict: never the primary judge, never in "judges disagree"
(``results.records.REFERENCE_FREE_SCORES``). No answer (QA skipped or failed) gives ``{}``: not applicable, counted
by the summary. The context is the text of the chunks given to the QA model, or returned by the system (for ids
only, the corpus text of those ids: ``pipeline.task``). Made by ``evaluators.reference_free.reference_free_evaluators``
with the other reference-free judges.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from evaluations.core.types import CaseMetadata, CaseOutput, RetrievalInputs
from evaluations.evaluators.answers import without_cache_dir
from evaluations.evaluators.cost import MeasuredJudge
from evaluations.judging.correctness.embedded import verdict_cache
from evaluations.judging.correctness.semantic import cache_file
from evaluations.judging.grounded.answer_relevance import judge_answer_relevance
from evaluations.judging.grounded.naming import Naming

__all__ = ["AnswerRelevance"]


@dataclass(repr=False)
class AnswerRelevance(MeasuredJudge, Evaluator[RetrievalInputs, CaseOutput, CaseMetadata]):
    """``answer_relevance`` (score 1/0) and ``answer_relevance_kind`` (label) of the case's answer: the rules, then
    the naming screen on the embedded judge model (``judging.grounded.answer_relevance.judge_answer_relevance``), run
    in a worker thread. ``cache``: the judge's embeddings (``judging.correctness.semantic``) and the screen's
    P(answers) (the verdict store) cached on disk in ``cache_dir`` (``Config.judge_cache_dir``; None: the default
    folder); ``data_dir``: where the embedded judge model's file is (None: the default). Its cost per case (texts
    embedded and model calls, 0 from the caches) is measured as each judge's is (``evaluators.cost.MeasuredJudge``)."""

    COST_NAME = "answer_relevance"
    cache: bool = True
    cache_dir: str | None = None
    data_dir: str | None = field(default=None, compare=False)

    async def judge_case(self, ctx: EvaluatorContext[RetrievalInputs, CaseOutput, CaseMetadata]) -> dict[str, Any]:
        answer = ctx.output.answer
        if answer is None:
            return {}
        context = "\n\n".join(c.text for c in ctx.output.chunks if c.text)
        answerable = ctx.metadata.answerable if ctx.metadata is not None else True
        naming = Naming(cache=verdict_cache(self.cache, self.cache_dir), data_dir=self.data_dir)
        [result] = await anyio.to_thread.run_sync(functools.partial(
            judge_answer_relevance, [(str(ctx.inputs.query), answer.answer, context, answerable)], naming,
            cache=cache_file(self.cache, self.cache_dir)))
        return {"answer_relevance": EvaluationReason(1.0 if result.verdict else 0.0, reason=result.reason),
                "answer_relevance_kind": result.kind}

    def build_serialization_arguments(self) -> dict[str, Any]:
        # local folders, not part of what it measures
        return {k: v for k, v in without_cache_dir(super().build_serialization_arguments()).items() if k != "data_dir"}

    def get_default_evaluation_name(self) -> str:
        return "answer_relevance"  # a failure is counted under the metric (``results.reference_free``)
