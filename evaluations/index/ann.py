"""The ANN vector index of the ``vectors`` table: when it is built, how, and how good it is.

Below ``lancedb.ann.min_rows`` vectors every search is exact (LanceDB's flat scan). From there on a
LanceDB vector index is built (``lancedb.ann.type``: IVF-PQ or IVF-HNSW-SQ, parameters from the
config, cosine distance like every search here) and rebuilt when more than a tenth of the rows were
added after it (LanceDB searches such rows exactly until then, so results stay complete).

An ANN index misses some true neighbours, and a miss changes every retrieval metric. So every run
that searches one measures it (``recall``): on a sample of the run's queries, recall@k of the ANN
top-k against the exact top-k (``bypass_vector_index``), recorded in summary.json ``index.ann`` and
logged as a warning below ``min_recall``.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from evaluations.core.config import ANN

logger = logging.getLogger(__name__)

VECTOR_COLUMN = "vector"
INDEX_NAME = "vector_idx"
STALE_SHARE = 0.1  # rebuild when more than this share of the rows is not in the index


def _ivf_pq(settings: ANN) -> Any:
    from lancedb.index import IvfPq

    return IvfPq(distance_type="cosine", num_partitions=settings.num_partitions,
                 num_sub_vectors=settings.num_sub_vectors, num_bits=settings.num_bits)


def _ivf_hnsw_sq(settings: ANN) -> Any:
    from lancedb.index import HnswSq

    return HnswSq(distance_type="cosine", num_partitions=settings.num_partitions, m=settings.m,
                  ef_construction=settings.ef_construction)


#: ``lancedb.ann.type`` -> the LanceDB index configuration it builds
INDEX_TYPES: dict[str, Callable[[ANN], Any]] = {"ivf_pq": _ivf_pq, "ivf_hnsw_sq": _ivf_hnsw_sq}


class AnnInfo(BaseModel):
    """What summary.json ``index.ann`` records: the index, and the recall check of this run."""

    type: str
    rows: int
    unindexed_rows: int = 0
    built: bool = False  # built (or rebuilt) in this run
    build_seconds: float = 0.0
    params: dict[str, Any] = {}
    recall_k: int = 0
    recall_queries: int = 0
    recall: float | None = None  # mean recall@k against exact search; None until measured
    recall_seconds: float = 0.0  # the exact searches of the check (not in any case's latency)
    min_recall: float = 0.0
    recall_ok: bool | None = None


def has_index(table: Any) -> bool:
    return any(VECTOR_COLUMN in index.columns for index in table.list_indices())


def _unindexed(table: Any) -> int:
    stats = table.index_stats(INDEX_NAME)
    return int(stats.num_unindexed_rows) if stats is not None else 0


#: the settings each index type is built with (a change of one rebuilds the index)
BUILD_PARAMS: dict[str, tuple[str, ...]] = {"ivf_pq": ("num_partitions", "num_sub_vectors", "num_bits"),
                                            "ivf_hnsw_sq": ("num_partitions", "m", "ef_construction")}
SEARCH_PARAMS = ("nprobes", "refine_factor", "ef")


def build_params(settings: ANN) -> dict[str, Any]:
    return {"type": settings.type, **settings.model_dump(include=set(BUILD_PARAMS[settings.type]))}


def ensure_index(table: Any, settings: ANN, built_with: dict[str, Any] | None) -> AnnInfo | None:
    """Build the vector index when the table is big enough, rebuild it when ``built_with`` (the build
    parameters of the index there, as recorded) differs from the settings' or too many rows are new;
    drop it below the threshold. None while search stays exact."""
    rows = table.count_rows()
    if not settings.min_rows or rows < settings.min_rows:
        if has_index(table):  # shrunk below the threshold: exact search again
            table.drop_index(INDEX_NAME)
        return None
    params = {**build_params(settings), **settings.model_dump(include=set(SEARCH_PARAMS))}
    info = AnnInfo(type=settings.type, rows=rows, params=params, min_recall=settings.min_recall)
    if has_index(table) and built_with == build_params(settings) and _unindexed(table) <= STALE_SHARE * rows:
        info.unindexed_rows = _unindexed(table)
        return info
    started = time.perf_counter()
    table.create_index(VECTOR_COLUMN, config=INDEX_TYPES[settings.type](settings), replace=True, name=INDEX_NAME)
    info.built, info.build_seconds = True, round(time.perf_counter() - started, 3)
    info.unindexed_rows = _unindexed(table)
    return info


def tune(query: Any, settings: ANN) -> Any:
    """The search-time parameters of the index on a LanceDB vector query."""
    query = query.nprobes(settings.nprobes)
    if settings.refine_factor:
        query = query.refine_factor(settings.refine_factor)
    if settings.ef:
        query = query.ef(settings.ef)
    return query


def recall_at_k(approximate: Sequence[Sequence[str]], exact: Sequence[Sequence[str]], k: int) -> float:
    """Mean over queries of |ANN top-k ∩ exact top-k| / |exact top-k|."""
    shares = [len(set(a[:k]) & set(e[:k])) / len(e[:k]) for a, e in zip(approximate, exact) if e[:k]]
    return sum(shares) / len(shares) if shares else 1.0


def sample(queries: Sequence[Any], n: int, seed: int = 0) -> list[Any]:
    """Up to ``n`` of ``queries``, the same ones on every run of the same queries."""
    chosen = list(queries)
    if len(chosen) > n:
        chosen = random.Random(seed).sample(chosen, n)
    return chosen


def check_recall(info: AnnInfo, settings: ANN, ann_ids: Sequence[Sequence[str]],
                 exact_ids: Sequence[Sequence[str]]) -> AnnInfo:
    """Record the recall of the index on these queries, warning when it is below ``min_recall``."""
    info.recall_k, info.recall_queries = settings.recall_k, len(exact_ids)
    info.recall = round(recall_at_k(ann_ids, exact_ids, settings.recall_k), 6)
    info.recall_ok = info.recall >= settings.min_recall
    warn_low_recall(info, settings)
    return info


def warn_low_recall(info: AnnInfo, settings: ANN) -> None:
    """The warning of a recall below ``min_recall`` (a run that reads the rankings kept from a run that measured it
    warns again)."""
    if info.recall_ok is False:
        logger.warning(
            "ANN index recall@%d is %.4f on %d queries (below lancedb.ann.min_recall %.2f): retrieval metrics "
            "differ from exact search; raise lancedb.ann.nprobes / refine_factor, or lancedb.ann.min_rows to "
            "search exactly", info.recall_k, info.recall, info.recall_queries, settings.min_recall)
