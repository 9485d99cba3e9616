"""Search the index: ``vector`` (cosine), ``fts`` (LanceDB native BM25) or ``hybrid`` (RRF).

Documents are ranked from chunks: each document takes the score of its best chunk (for hybrid,
reciprocal rank fusion runs over the two document-level lists:
``rrf(d) = sum_m 1 / (rrf_k + rank_m(d))``, ranks from 1). The final order is
``metrics.canonical_order`` (score descending, ties by document id descending, as trec_eval does),
so reported metrics equal trec_eval's on the scores we record.

The QA context is the top ``context_limit`` chunks (chunk-level RRF in hybrid mode).

Query embedding and vector search are batched over all queries in ``prepare`` (one encoder call,
one LanceDB multi-vector query); each query's share of that batch time is recorded as its
``embed``/``vector`` latency. BM25 runs per query in ``retrieve`` on the ``chunks`` table; vector
search runs on the ``vectors`` table, which ``prepare`` first brings up to date
(``Store.ensure_vectors``: a no-op when the index step already built them), so ``fts`` never embeds.

When ``vectors`` has an ANN index (``index/ann.py``) the search uses its ``nprobes`` /
``refine_factor`` / ``ef``, and the first ``prepare`` checks it: on a sample of the queries, the top
``recall_k`` chunks of this search against LanceDB's exact (flat) search, recorded in
``store.stats.ann`` (summary.json ``index.ann``), with a warning below ``lancedb.ann.min_recall``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from evaluations.results.retrieval_metrics import canonical_order
from evaluations.core.types import RetrievedChunk
from evaluations.index import ann
from evaluations.index.store import Store

Mode = Literal["vector", "fts", "hybrid"]
MODES: tuple[str, ...] = ("vector", "fts", "hybrid")


@dataclass
class Ranked:
    """One list of chunk hits, best first: (chunk_id, doc_id, text, score)."""

    hits: list[tuple[str, str, str, float]] = field(default_factory=list)

    def documents(self) -> dict[str, float]:
        best: dict[str, float] = {}
        for _, doc_id, _, score in self.hits:
            if doc_id not in best or score > best[doc_id]:
                best[doc_id] = score
        return best


@dataclass
class Retrieval:
    documents: list[str]
    scores: list[float]
    chunks: list[RetrievedChunk]
    latency_ms: dict[str, float]


def _rrf(rankings: Sequence[Sequence[str]], k: int) -> dict[str, float]:
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, 1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


class Retriever:
    def __init__(self, store: Store, mode: Mode = "hybrid", candidates: int = 100, rrf_k: int = 60,
                 context_limit: int = 5):
        self.store = store
        self.mode = mode
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.context_limit = context_limit
        # chunks fetched per list: enough that ``candidates`` distinct documents survive collapsing
        self.chunk_limit = max(candidates * 3, context_limit)
        self._vector: dict[str, Ranked] = {}
        self._batch_ms: dict[str, float] = {}
        self._table = store.table  # chunks: text + BM25
        self._vectors = None  # the vectors table, opened (and completed if needed) on first vector use
        self._ann: ann.AnnInfo | None = None  # its ANN index, None: exact search
        self._recall_checked = False

    # -- batched dense stage -------------------------------------------------------------------
    def prepare(self, queries: Sequence[str]) -> None:
        """Embed all queries and run the vector search for all of them in one batch."""
        if self.mode == "fts" or not queries:
            return
        if self._vectors is None:
            if not self.store.vectors_ready():
                self.store.ensure_vectors()
            self._vectors = self.store.vectors_table
            self._ann = self.store.ann_info()
        unique = list(dict.fromkeys(queries))
        t0 = time.perf_counter()
        vectors = self.store.query_vectors(unique)
        t1 = time.perf_counter()
        result = self._search(list(vectors), self.chunk_limit, ["chunk_id", "doc_id", "text", "_distance"])
        t2 = time.perf_counter()
        per_query: dict[int, Ranked] = {i: Ranked() for i in range(len(unique))}
        columns = result.to_pydict()
        if "query_index" not in columns:  # LanceDB omits it for a single query vector
            columns["query_index"] = [0] * result.num_rows
        for qi, cid, did, text, dist in zip(columns["query_index"], columns["chunk_id"], columns["doc_id"],
                                           columns["text"], columns["_distance"]):
            per_query[qi].hits.append((cid, did, text, 1.0 - float(dist)))
        for i, query in enumerate(unique):
            per_query[i].hits.sort(key=lambda h: -h[3])
            self._vector[query] = per_query[i]
        n = len(unique)
        self._batch_ms = {"embed": (t1 - t0) * 1000 / n, "vector": (t2 - t1) * 1000 / n}
        if self._ann is not None and not self._recall_checked:
            self._check_recall([self._vector[q] for q in unique], vectors)

    def _search(self, vectors: list, limit: int, columns: list[str], *, exact: bool = False):
        """One batched cosine search of ``vectors`` (the ANN index's parameters, or a flat scan)."""
        query = (self._vectors.search(vectors, vector_column_name="vector").distance_type("cosine").limit(limit)
                 .select(columns))
        if self._ann is not None:
            query = query.bypass_vector_index() if exact else ann.tune(query, self.store.settings.ann)
        return query.to_arrow()

    def _check_recall(self, found: list[Ranked], vectors) -> None:
        """Recall@k of this search against exact search on a sample of the queries, into the index stats."""
        settings = self.store.settings.ann
        started = time.perf_counter()
        chosen = ann.sample(range(len(found)), settings.recall_queries)
        exact = self._search([vectors[i] for i in chosen], settings.recall_k, ["chunk_id", "_distance"],
                             exact=True).to_pydict()
        exact_ids: list[list[str]] = [[] for _ in chosen]
        for qi, cid in zip(exact.get("query_index", [0] * len(exact["chunk_id"])), exact["chunk_id"]):
            exact_ids[qi].append(cid)
        ann_ids = [[h[0] for h in found[i].hits] for i in chosen]
        self._ann = ann.check_recall(self._ann, settings, ann_ids, exact_ids)
        self._ann.recall_seconds = round(time.perf_counter() - started, 3)
        self.store.stats.ann = self._ann.model_dump()
        self._recall_checked = True

    def _vector_hits(self, query: str) -> tuple[Ranked, dict[str, float]]:
        if query not in self._vector:
            self.prepare([query])
        return self._vector[query], dict(self._batch_ms)

    def _fts_hits(self, query: str) -> Ranked:
        result = (self._table.search(query, query_type="fts").limit(self.chunk_limit)
                  .select(["chunk_id", "doc_id", "text", "_score"]).to_arrow().to_pydict())
        return Ranked(list(zip(result["chunk_id"], result["doc_id"], result["text"],
                               (float(s) for s in result["_score"]))))

    # -- per query -----------------------------------------------------------------------------
    def retrieve(self, query: str) -> Retrieval:
        latency: dict[str, float] = {"embed": 0.0, "vector": 0.0, "fts": 0.0}
        lists: list[Ranked] = []
        if self.mode in ("vector", "hybrid"):
            ranked, batch = self._vector_hits(query)
            latency.update(batch)
            lists.append(ranked)
        if self.mode in ("fts", "hybrid"):
            t0 = time.perf_counter()
            lists.append(self._fts_hits(query))
            latency["fts"] = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        if len(lists) == 1:
            doc_scores = lists[0].documents()
            chunk_hits = lists[0].hits
        else:
            doc_scores = _rrf([canonical_order(r.documents()) for r in lists], self.rrf_k)
            texts = {cid: (did, text) for r in lists for cid, did, text, _ in r.hits}
            fused = _rrf([[h[0] for h in r.hits] for r in lists], self.rrf_k)
            chunk_hits = [(cid, *texts[cid], score) for cid, score in fused.items()]
            chunk_hits.sort(key=lambda h: (-h[3], h[0]))
        order = canonical_order(doc_scores)[: self.candidates]
        chunks = [RetrievedChunk(chunk_id=cid, doc_id=did, text=text, score=score)
                  for cid, did, text, score in chunk_hits[: self.context_limit]]
        latency["fuse"] = (time.perf_counter() - t0) * 1000
        latency["retrieve"] = latency["vector"] + latency["fts"] + latency["fuse"]
        return Retrieval(documents=order, scores=[doc_scores[d] for d in order], chunks=chunks, latency_ms=latency)
