"""Answer-side evaluators that need the retrieved context: coverage and context waste."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic_evals.evaluators import Evaluator, EvaluatorContext

from ..judges.text import keywords
from ..types import CaseMetadata, CaseOutput, RetrievalInputs

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(repr=False)
class Coverage(Evaluator[RetrievalInputs, CaseOutput, CaseMetadata]):
    """How much of the answer is grounded in the context given to the model.

    ``coverage = |context_kw ∩ answer_kw| / |answer_kw|`` with ``kw`` = ``judges.text.keywords``
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


def coverage(answer: str, contexts: list[str]) -> float | None:
    """``|context_kw ∩ answer_kw| / |answer_kw|`` (see ``Coverage``); None when the answer has no keywords."""
    answer_kw = keywords(answer)
    if not answer_kw:
        return None
    context_kw: set[str] = set()
    for text in contexts:
        context_kw |= keywords(text)
    return len(answer_kw & context_kw) / len(answer_kw)


def context_waste(chunks: list[tuple[str, bool]]) -> float | None:
    """``tokens(non-relevant chunks) / tokens(all chunks)`` over (text, is_relevant) pairs; None without tokens."""
    sizes = [(len(_TOKEN.findall(text)), relevant) for text, relevant in chunks]
    total = sum(n for n, _ in sizes)
    if total == 0:
        return None
    return sum(n for n, rel in sizes if not rel) / total
