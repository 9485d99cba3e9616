"""The reference-free ``answer_relevance`` evaluator: does the answer address the question (``judging.relevance``)?

Runs on every case that has an answer, with or without gold answers: ``answer_relevance`` is a verdict (with the
rule that decided it as its reason) and ``answer_relevance_kind`` a label (``relevant`` or a ``relevance.KINDS``
key). No answer (QA skipped or failed) gives ``{}``: the summary counts those cases, as for every judge. The
context is the text of the chunks given to the QA model, or returned by the system (none when it returned ids only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from evaluations.core.types import CaseMetadata, CaseOutput, RetrievalInputs
from evaluations.judging.relevance import answer_relevance

__all__ = ["AnswerRelevance"]


@dataclass(repr=False)
class AnswerRelevance(Evaluator[RetrievalInputs, CaseOutput, CaseMetadata]):
    """``answer_relevance`` (verdict) and ``answer_relevance_kind`` (label) of the case's answer."""

    def evaluate(self, ctx: EvaluatorContext[RetrievalInputs, CaseOutput, CaseMetadata]) -> dict[str, Any]:
        answer = ctx.output.answer
        if answer is None:
            return {}
        context = "\n\n".join(c.text for c in ctx.output.chunks)
        answerable = ctx.metadata.answerable if ctx.metadata is not None else True
        result = answer_relevance(str(ctx.inputs.query), answer.answer, context, answerable=answerable)
        return {"answer_relevance": EvaluationReason(result.verdict, reason=result.reason),
                "answer_relevance_kind": result.kind}
