"""Answer-side evaluators that need the retrieved context: coverage and context waste."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_evals.evaluators import Evaluator, EvaluatorContext

from evaluations.core.types import CaseMetadata, CaseOutput, RetrievalInputs
from evaluations.judging.grounded.grounding import context_waste, coverage


@dataclass(repr=False)
class Coverage(Evaluator[RetrievalInputs, CaseOutput, CaseMetadata]):
    """How much of the answer is grounded in the context given to the model.

    ``coverage = |context_kw ∩ answer_kw| / |answer_kw|`` with ``kw`` = ``judging.basics.text.keywords``
    (lowercased words minus punctuation and stopwords). No score when there is no answer or it has
    no keywords.
    """

    def evaluate(self, ctx: EvaluatorContext[RetrievalInputs, CaseOutput, CaseMetadata]) -> dict[str, float]:
        answer = ctx.output.answer
        if answer is None:
            return {}
        value = coverage(answer.answer, [chunk.text for chunk in ctx.output.chunks])
        return {} if value is None else {"coverage": value}


@dataclass(repr=False)
class ContextWaste(Evaluator[RetrievalInputs, CaseOutput, CaseMetadata]):
    """Share of the QA context spent on documents that are not relevant.

    ``waste = tokens(chunks of non-relevant docs) / tokens(all context chunks)``; tokens are words
    and punctuation marks (``\\w+|[^\\w\\s]``). No score without context or without relevance labels.
    """

    def evaluate(self, ctx: EvaluatorContext[RetrievalInputs, CaseOutput, CaseMetadata]) -> dict[str, float]:
        relevant = {d for d, g in (ctx.metadata.relevant if ctx.metadata else {}).items() if g > 0}
        if not relevant or not ctx.output.chunks or ctx.output.answer is None:
            return {}
        value = context_waste([(c.text, c.doc_id in relevant) for c in ctx.output.chunks])
        return {} if value is None else {"context_waste": value}

