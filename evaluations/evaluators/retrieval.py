"""pydantic-evals evaluators for retrieval: one per metric, each scoring every cutoff in ``ks``.

Each evaluator scores ``ctx.output.documents`` (ranked document ids, already in the project's canonical
order) against ``ctx.metadata.relevant`` and returns ``{"ndcg@1": v, "ndcg@10": v, ...}``.
A case without any relevant document returns ``{}``: pydantic-evals then records no score for it and its
``ReportCaseAggregate.average`` divides each score by the number of cases that carry it, so the case is
excluded from the means instead of counting as 0 or NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from pydantic_evals.evaluators import Evaluator, EvaluatorContext

from evaluations.core.errors import EvaluationsError
from evaluations.results.retrieval_metrics import compute
from evaluations.core.types import CaseMetadata, CaseOutput, RetrievalInputs

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 100)


@dataclass
class _RetrievalMetric(Evaluator[RetrievalInputs, CaseOutput, CaseMetadata]):
    """Shared body: ``metric`` names an entry of ``evaluations.results.retrieval_metrics.METRICS``."""

    ks: tuple[int, ...] = DEFAULT_KS
    metric: ClassVar[str]

    def evaluate(self, ctx: EvaluatorContext[RetrievalInputs, CaseOutput, CaseMetadata]) -> dict[str, float]:
        if ctx.metadata is None:
            raise EvaluationsError(
                f"case {ctx.name!r} has no metadata, so its relevant documents are unknown",
                where=f"case {ctx.name!r}",
                fix="build cases with metadata=CaseMetadata(query_id=..., relevant={doc_id: grade})",
            )
        return compute(self.metric, ctx.output.documents, ctx.metadata.relevant, self.ks) or {}


@dataclass
class MRR(_RetrievalMetric):
    """Reciprocal rank of the first relevant document within k ("mrr@k")."""

    metric: ClassVar[str] = "mrr"


@dataclass
class MAP(_RetrievalMetric):
    """Average precision cut at k, divided by all relevant documents ("map@k")."""

    metric: ClassVar[str] = "map"


@dataclass
class NDCG(_RetrievalMetric):
    """Normalised discounted cumulative gain at k, graded ("ndcg@k")."""

    metric: ClassVar[str] = "ndcg"


@dataclass
class Precision(_RetrievalMetric):
    """Relevant documents in the top k divided by k ("p@k")."""

    metric: ClassVar[str] = "precision"


@dataclass
class Recall(_RetrievalMetric):
    """Relevant documents in the top k divided by all relevant documents ("recall@k")."""

    metric: ClassVar[str] = "recall"


@dataclass
class Hit(_RetrievalMetric):
    """1 if any relevant document is in the top k, else 0 ("hit@k")."""

    metric: ClassVar[str] = "hit"


def retrieval_evaluators(ks: Sequence[int] = DEFAULT_KS) -> list[Evaluator[RetrievalInputs, CaseOutput, CaseMetadata]]:
    """All six retrieval evaluators at cutoffs ``ks``."""
    ks = tuple(ks)
    return [cls(ks=ks) for cls in (MRR, MAP, NDCG, Precision, Recall, Hit)]
