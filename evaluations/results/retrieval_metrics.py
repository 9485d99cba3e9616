"""Retrieval metrics: one metric, one pure function, equal to trec_eval's on the same ranked list.

A *ranking* is a sequence of document ids, best first, without duplicates.
*qrels* maps document id -> graded relevance; grade > 0 means relevant (trec_eval relevance_level 1).
Notation in the docstrings: ``d_i`` is the document at rank i (1-based), ``rel(d) = 1 if qrels[d] > 0``,
``g(d) = qrels[d] if qrels[d] > 0 else 0``, ``R = |{d : rel(d)}|``.

Conventions shared by every metric:
- an empty ranking scores 0.0 (trec_eval ``-c``: a query with nothing retrieved counts as 0);
- qrels without any relevant document give ``None``: the query has no defined score; callers exclude it
  from means and count it (never NaN). trec_eval instead scores such a query 0 and averages it in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from evaluations.core.errors import EvaluationsError

Ranking = Sequence[str]
Qrels = Mapping[str, int]


def canonical_order(scores: Mapping[str, float]) -> list[str]:
    """THE tie rule of the project: document ids sorted by score descending, ties by document id descending.

    This is trec_eval's order (``form_res_rels.c``: ``sim`` descending, then ``strcmp(docno2, docno1)``),
    checked against pytrec_eval in ``tests/test_metrics_oracle.py``: with equal scores "b" ranks before "a"
    and "9" before "10" (plain string order, not numeric). Applying it to every scored list makes our metrics
    equal trec_eval's on the same run, ties included. Python compares ``str`` by code point, which is the
    same order as ``strcmp`` on UTF-8 bytes.
    """
    for doc_id, score in scores.items():
        if math.isnan(score):
            raise EvaluationsError(
                f"document {doc_id!r} has a NaN score, so the ranking is undefined",
                where=f"scores[{doc_id!r}]",
                fix="make the retriever return finite scores (or -inf for 'not retrieved')",
            )
    return [doc_id for doc_id, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def _relevant(qrels: Qrels) -> set[str]:
    return {doc_id for doc_id, grade in qrels.items() if grade > 0}


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise EvaluationsError(
            f"cutoff k={k!r} is not a positive integer", where="ks", fix="use cutoffs like 1, 3, 5, 10, 100"
        )


def reciprocal_rank(ranking: Ranking, qrels: Qrels, k: int) -> float | None:
    """MRR@k for one query (trec_eval ``recip_rank`` on the ranking cut to k).

    RR@k = 1 / min{i <= k : rel(d_i)}, or 0 when no relevant document is in the top k.
    """
    _check_k(k)
    relevant = _relevant(qrels)
    if not relevant:
        return None
    for rank, doc_id in enumerate(ranking[:k], start=1):
        if doc_id in relevant:
            return 1.0 / rank
    return 0.0


def average_precision(ranking: Ranking, qrels: Qrels, k: int) -> float | None:
    """MAP@k for one query (trec_eval ``map_cut_k``).

    AP@k = (1 / R) * sum_{i <= k, rel(d_i)} P@i,  with P@i = |{j <= i : rel(d_j)}| / i.
    The divisor is R, all relevant documents in the qrels, not only those retrieved or min(R, k).
    """
    _check_k(k)
    relevant = _relevant(qrels)
    if not relevant:
        return None
    hits, total = 0, 0.0
    for rank, doc_id in enumerate(ranking[:k], start=1):
        if doc_id in relevant:
            hits += 1
            total += hits / rank
    return total / len(relevant)


def ndcg(ranking: Ranking, qrels: Qrels, k: int) -> float | None:
    """nDCG@k for one query (trec_eval ``ndcg_cut_k``: linear gain, log2 discount).

    DCG@k = sum_{i <= k} g(d_i) / log2(i + 1);  nDCG@k = DCG@k / IDCG@k,
    where IDCG@k is the DCG@k of the qrels' positive grades sorted descending (the ideal ranking).
    """
    _check_k(k)
    gains = sorted((grade for grade in qrels.values() if grade > 0), reverse=True)
    if not gains:
        return None
    dcg = sum(max(qrels.get(doc_id, 0), 0) / math.log2(rank + 1) for rank, doc_id in enumerate(ranking[:k], start=1))
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(gains[:k], start=1))
    return dcg / idcg


def precision(ranking: Ranking, qrels: Qrels, k: int) -> float | None:
    """P@k for one query (trec_eval ``P_k``).

    P@k = |{i <= k : rel(d_i)}| / k  (divided by k even when fewer than k documents were retrieved).
    """
    _check_k(k)
    relevant = _relevant(qrels)
    if not relevant:
        return None
    return sum(doc_id in relevant for doc_id in ranking[:k]) / k


def recall(ranking: Ranking, qrels: Qrels, k: int) -> float | None:
    """Recall@k for one query (trec_eval ``recall_k``).

    Recall@k = |{i <= k : rel(d_i)}| / R.
    """
    _check_k(k)
    relevant = _relevant(qrels)
    if not relevant:
        return None
    return sum(doc_id in relevant for doc_id in ranking[:k]) / len(relevant)


def hit(ranking: Ranking, qrels: Qrels, k: int) -> float | None:
    """Hit@k (success@k) for one query (trec_eval ``success_k``).

    Hit@k = 1 if some i <= k has rel(d_i), else 0.
    """
    _check_k(k)
    relevant = _relevant(qrels)
    if not relevant:
        return None
    return 1.0 if any(doc_id in relevant for doc_id in ranking[:k]) else 0.0


MetricFn = Callable[[Ranking, Qrels, int], "float | None"]

METRICS: dict[str, MetricFn] = {
    "mrr": reciprocal_rank,
    "map": average_precision,
    "ndcg": ndcg,
    "precision": precision,
    "recall": recall,
    "hit": hit,
}

# Prefix of the metric in result keys ("p@10", "ndcg@10", ...); these names appear in summary.json.
_KEY_PREFIX: dict[str, str] = {"precision": "p"}


def metric_key(metric: str, k: int) -> str:
    """The result key of ``metric`` at cutoff ``k``, e.g. ``metric_key("precision", 10) == "p@10"``."""
    return f"{_KEY_PREFIX.get(metric, metric)}@{k}"


#: result-key prefix -> metric, in ``METRICS`` order ("p" -> "precision", "ndcg" -> "ndcg", ...)
_METRIC_OF_PREFIX: dict[str, str] = {_KEY_PREFIX.get(m, m): m for m in METRICS}
METRIC_ORDER: dict[str, int] = {m: i for i, m in enumerate(METRICS)}


def parse_metric_name(name: str) -> tuple[str, str, int] | None:
    """THE parser of retrieval metric names: ``"p@10"`` -> ``("precision", "p", 10)``; None for any other name
    (a judge, a latency, ``p@x``, ``p@0``)."""
    prefix, at, k = name.partition("@")
    if not at or prefix not in _METRIC_OF_PREFIX or not k.isdigit() or int(k) < 1:
        return None
    return _METRIC_OF_PREFIX[prefix], prefix, int(k)


def is_retrieval_metric(name: str) -> bool:
    return parse_metric_name(name) is not None


def _check_ranking(ranking: Ranking) -> None:
    if len(set(ranking)) != len(ranking):
        seen: set[str] = set()
        duplicate = next(doc_id for doc_id in ranking if doc_id in seen or seen.add(doc_id))
        raise EvaluationsError(
            f"document {duplicate!r} appears more than once in the ranking",
            where="ranking",
            fix="collapse chunks to their document at its best rank before computing metrics",
        )


def compute(metric: str, ranking: Ranking, qrels: Qrels, ks: Iterable[int]) -> dict[str, float] | None:
    """One metric at every cutoff: ``{"ndcg@1": v, "ndcg@10": v, ...}``; None when qrels have no relevant doc."""
    if metric not in METRICS:
        raise EvaluationsError(f"unknown metric {metric!r}", where="metrics", fix=f"use one of {sorted(METRICS)}")
    _check_ranking(ranking)
    if not _relevant(qrels):
        return None
    fn = METRICS[metric]
    return {metric_key(metric, k): fn(ranking, qrels, k) for k in ks}  # type: ignore[misc]


def compute_all(ranking: Ranking, qrels: Qrels, ks: Iterable[int]) -> dict[str, float] | None:
    """Every metric at every cutoff, keys like "ndcg@10", "mrr@10", "map@10", "p@10", "recall@10", "hit@10".

    Returns None when the qrels have no relevant document (the query is excluded from means).
    """
    ks = tuple(ks)
    values: dict[str, float] = {}
    for metric in METRICS:
        part = compute(metric, ranking, qrels, ks)
        if part is None:
            return None
        values.update(part)
    return values
