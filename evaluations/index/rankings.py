"""Rankings kept beside a local index: a re-run of the same search over the same index opens no LanceDB.

A warm re-run of a retrieval run repeats work whose result is already known: it opens the index (importing LanceDB
costs about 2 s), finds it up to date, and runs every query again. The rankings of a run are kept in
``<db>/rankings.sqlite`` (the one cache store, ``models.cache``), under a key of everything they depend on:

- the index's state: every file of its ``chunks``, ``vectors`` and ``meta`` tables (``<table>.lance/``) with its size
  and modification time, listed without opening LanceDB (a write adds files; a damaged file changes its time);
- the corpus fingerprint (``store.corpus_fingerprint``: documents and chunking), the embedder's id;
- the retriever's parameters (mode, candidates, RRF k, context limit) and the ANN search settings.

Per query the entry is its ranked documents, their scores and the context chunks; one more entry holds the index
statistics of the run that searched. A run takes its rankings from here only when every query it has to run is there
(all or nothing); otherwise it indexes and searches as before and writes what it found. On a hit the latency
recorded is the lookup's (``rankings_cached`` in the run's index entry says so), never the first run's. Remote
indexes (``s3://``...) and ``--no-cache`` (``cache.enabled: false``) do not use it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evaluations.core.types import RetrievedChunk

FILE = "rankings.sqlite"
KIND = "ranking"
#: the tables whose content the rankings depend on (``query_vectors`` only caches query embeddings)
TABLES = ("chunks", "vectors", "meta")


class _Entry(BaseModel):
    documents: list[str]
    scores: list[float]
    chunks: list[RetrievedChunk]


def index_state(folder: Path) -> list[tuple[str, int, int]] | None:
    """Every file of the tables (path, size, modification time in ns), None when there is no index there yet: a
    write adds files, and a file changed in place (a damaged manifest) changes its time."""
    if not (folder / "chunks.lance").is_dir():
        return None
    state = []
    for table in TABLES:
        for root, _, files in os.walk(folder / f"{table}.lance"):
            for name in files:
                path = Path(root, name)
                info = path.stat()
                state.append((str(path.relative_to(folder)), info.st_size, info.st_mtime_ns))
    return sorted(state)


class Rankings:
    """The rankings of one search configuration over one state of the index in ``folder``."""

    def __init__(self, folder: Path, parameters: dict[str, Any]):
        from evaluations.models.cache import open_store

        self.folder = Path(folder)
        self.parameters = parameters
        self.store = open_store(self.folder / FILE, what="the rankings kept beside the index")
        self.key = ""

    def _rekey(self) -> bool:
        from evaluations.models.cache import sha256_key

        state = index_state(self.folder)
        self.key = sha256_key({"index": state, **self.parameters}) if state is not None else ""
        return bool(self.key)

    def _query_key(self, query: str) -> str:
        return f"{self.key}:q:{query}"

    def lookup(self, queries: Sequence[str]) -> tuple[CachedRetriever, dict[str, Any]] | None:
        """A retriever answering every query from here and the index statistics, or None unless all are here."""
        if not self._rekey():
            return None
        stats = self.store.get(f"{self.key}:stats")
        unique = list(dict.fromkeys(queries))
        found = self.store.get_many([self._query_key(q) for q in unique])
        if stats is None or len(found) < len(unique):
            return None
        entries = {q: _Entry.model_validate_json(found[self._query_key(q)]) for q in unique}
        return CachedRetriever(entries), json.loads(stats)

    def record(self, retriever: Any, stats: dict[str, Any]) -> Any:
        """``retriever`` writing each ranking it makes here, under the index's state now (after indexing); as it is
        when there is no index to key them by."""
        if not self._rekey():
            return retriever
        self.store.put(KIND, f"{self.key}:stats", json.dumps(stats))
        return RecordingRetriever(retriever, self)

    def put(self, query: str, retrieval: Any) -> None:
        entry = _Entry(documents=retrieval.documents, scores=retrieval.scores, chunks=retrieval.chunks)
        self.store.put(KIND, self._query_key(query), entry.model_dump_json())


class CachedRetriever:
    """``index.search.Retriever``'s interface over kept rankings; its latency is the lookup's."""

    def __init__(self, entries: dict[str, _Entry]):
        self.entries = entries

    def prepare(self, queries: Sequence[str]) -> None:
        """Nothing to embed or search."""

    def retrieve(self, query: str) -> Any:
        from evaluations.index.search import Retrieval

        started = time.perf_counter()
        entry = self.entries[query]
        chunks = [chunk.model_copy() for chunk in entry.chunks]
        ms = (time.perf_counter() - started) * 1000
        return Retrieval(documents=list(entry.documents), scores=list(entry.scores), chunks=chunks,
                         latency_ms={"embed": 0.0, "vector": 0.0, "fts": 0.0, "fuse": 0.0, "retrieve": ms})


class RecordingRetriever:
    """A retriever whose rankings are kept (``Rankings.put``) as it makes them."""

    def __init__(self, retriever: Any, rankings: Rankings):
        self.retriever, self.rankings = retriever, rankings

    def prepare(self, queries: Sequence[str]) -> None:
        self.retriever.prepare(queries)

    def retrieve(self, query: str) -> Any:
        retrieval = self.retriever.retrieve(query)
        self.rankings.put(query, retrieval)
        return retrieval
