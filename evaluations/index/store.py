"""The LanceDB index: one ``chunks`` table (text, vector, chunk -> document mapping) with a BM25
full-text index, and a ``query_vectors`` cache.

Incremental by content: every document has a key = sha256(embedder id, chunking parameters, text).
Re-indexing embeds only documents whose key is not in the table and deletes rows whose key is no
longer wanted, so a re-run over unchanged data embeds nothing. Rows of one document are always
written together, so an interrupted run resumes cleanly. The FTS index is rebuilt whenever the
table's version differs from the one it was built for (recorded in ``state.json``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..errors import EvaluationsError
from ..types import Document
from .chunking import Chunk, chunk_document
from .embedders import Embedder

CHUNKS = "chunks"
QUERY_CACHE = "query_vectors"
_WRITE_BATCH = 2048  # chunks per table.add (whole documents only)


def doc_key(embedder_id: str, chunk_size: int, chunk_overlap: int, document: Document) -> str:
    payload = json.dumps([embedder_id, chunk_size, chunk_overlap, document.id, document.text], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def query_key(embedder_id: str, text: str) -> str:
    return hashlib.sha256(f"{embedder_id}\x00{text}".encode()).hexdigest()


@dataclass
class IndexStats:
    documents: int = 0
    chunks: int = 0
    embedded_documents: int = 0
    embedded_chunks: int = 0
    deleted_documents: int = 0
    fts_rebuilt: bool = False
    seconds: dict[str, float] = field(default_factory=dict)  # chunk, embed, write, fts


Progress = Callable[[int], None]


class Store:
    """A LanceDB folder holding one corpus indexed with one embedder."""

    def __init__(self, path: str | Path, embedder: Embedder):
        import lancedb

        self.path = str(path)
        self.embedder = embedder
        if "://" not in self.path:
            Path(self.path).mkdir(parents=True, exist_ok=True)
        try:
            self.db = lancedb.connect(self.path)
        except Exception as exc:
            raise EvaluationsError(f"cannot open the LanceDB index: {exc}", where=self.path,
                                   fix="check --db / lancedb.uri points at a writable folder") from None
        self._state_path = Path(self.path) / "state.json" if "://" not in self.path else None

    # -- state -------------------------------------------------------------------------------
    def _state(self) -> dict:
        if self._state_path and self._state_path.is_file():
            return json.loads(self._state_path.read_text())
        return {}

    def _save_state(self, state: dict) -> None:
        if self._state_path:
            self._state_path.write_text(json.dumps(state, indent=2))

    def _table_names(self) -> set[str]:
        result = self.db.list_tables()
        names = getattr(result, "tables", result)
        return set(names)

    def has_index(self) -> bool:
        return CHUNKS in self._table_names()

    @property
    def table(self):
        return self.db.open_table(CHUNKS)

    # -- indexing ----------------------------------------------------------------------------
    def _schema(self, dim: int) -> pa.Schema:
        return pa.schema([
            pa.field("chunk_id", pa.string()),
            pa.field("doc_id", pa.string()),
            pa.field("chunk_index", pa.int32()),
            pa.field("text", pa.string()),
            pa.field("doc_key", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ])

    def _existing_keys(self) -> set[str]:
        if not self.has_index():
            return set()
        return set(self.table.to_arrow().column("doc_key").to_pylist()) if self.table.count_rows() else set()

    def index(self, documents: Sequence[Document], chunk_size: int, chunk_overlap: int,
              progress: Progress | None = None, on_total: Callable[[int], None] | None = None) -> IndexStats:
        """Bring the table in line with ``documents``; embed only what is new or changed."""
        stats = IndexStats(documents=len(documents))
        started = time.perf_counter()
        keys = {doc_key(self.embedder.id, chunk_size, chunk_overlap, d): d for d in documents}
        existing = self._existing_keys()
        todo = [d for k, d in keys.items() if k not in existing]
        stale = sorted(existing - keys.keys())
        chunks_by_doc = [(k, chunk_document(d, chunk_size, chunk_overlap)) for k, d in keys.items()
                         if k not in existing]
        stats.seconds["chunk"] = time.perf_counter() - started
        stats.embedded_documents = len(todo)
        stats.embedded_chunks = sum(len(c) for _, c in chunks_by_doc)
        if on_total:
            on_total(stats.embedded_chunks)

        embed_s = write_s = 0.0
        batch: list[tuple[str, Chunk]] = []

        def flush() -> None:
            nonlocal embed_s, write_s
            if not batch:
                return
            t0 = time.perf_counter()
            vectors = self.embedder.embed([c.text for _, c in batch], kind="document")
            t1 = time.perf_counter()
            self._write(batch, vectors)
            embed_s += t1 - t0
            write_s += time.perf_counter() - t1
            if progress:
                progress(len(batch))
            batch.clear()

        for key, chunks in chunks_by_doc:
            if len(batch) + len(chunks) > _WRITE_BATCH:
                flush()
            batch.extend((key, c) for c in chunks)
        flush()

        t0 = time.perf_counter()
        if stale and self.has_index():
            for i in range(0, len(stale), 500):
                quoted = ", ".join(f"'{k}'" for k in stale[i : i + 500])
                self.table.delete(f"doc_key IN ({quoted})")
            stats.deleted_documents = len(stale)
        write_s += time.perf_counter() - t0
        stats.seconds["embed"] = embed_s
        stats.seconds["write"] = write_s

        t0 = time.perf_counter()
        stats.fts_rebuilt = self.ensure_fts()
        stats.seconds["fts"] = time.perf_counter() - t0
        stats.chunks = self.table.count_rows() if self.has_index() else 0
        stats.seconds["total"] = time.perf_counter() - started
        return stats

    def _write(self, batch: list[tuple[str, Chunk]], vectors: np.ndarray) -> None:
        dim = int(vectors.shape[1])
        data = pa.table({
            "chunk_id": [c.chunk_id for _, c in batch],
            "doc_id": [c.doc_id for _, c in batch],
            "chunk_index": pa.array([c.index for _, c in batch], pa.int32()),
            "text": [c.text for _, c in batch],
            "doc_key": [k for k, _ in batch],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.astype(np.float32).ravel()), dim),
        }, schema=self._schema(dim))
        if self.has_index():
            table = self.table
            existing_dim = table.schema.field("vector").type.list_size
            if existing_dim != dim:
                raise EvaluationsError(
                    f"the index holds {existing_dim}-d vectors but the embedder gives {dim}-d", where=self.path,
                    fix="use another --db for this embedder, or delete the folder to rebuild")
            table.add(data)
        else:
            self.db.create_table(CHUNKS, data)

    def ensure_fts(self) -> bool:
        """(Re)build the BM25 index when the table changed since it was built. True if rebuilt."""
        from lancedb.index import FTS

        if not self.has_index():
            return False
        table = self.table
        state = self._state()
        if state.get("fts_version") == table.version:
            return False
        table.create_index("text", config=FTS(), replace=True)
        state["fts_version"] = self.table.version
        state["embedder"] = self.embedder.id
        self._save_state(state)
        return True

    # -- query vectors -----------------------------------------------------------------------
    def query_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as queries, from the cache when present; new ones are cached."""
        keys = [query_key(self.embedder.id, t) for t in texts]
        cached: dict[str, np.ndarray] = {}
        if QUERY_CACHE in self._table_names():
            table = self.db.open_table(QUERY_CACHE).to_arrow()
            wanted = set(keys)
            for key, vec in zip(table.column("key").to_pylist(), table.column("vector").to_numpy_ndarray()
                                if hasattr(table.column("vector"), "to_numpy_ndarray") else
                                np.array(table.column("vector").to_pylist(), dtype=np.float32)):
                if key in wanted:
                    cached[key] = vec
        missing = [(k, t) for k, t in dict(zip(keys, texts)).items() if k not in cached]
        if missing:
            vectors = self.embedder.embed([t for _, t in missing], kind="query")
            dim = int(vectors.shape[1])
            data = pa.table({"key": [k for k, _ in missing],
                             "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim)})
            if QUERY_CACHE in self._table_names():
                self.db.open_table(QUERY_CACHE).add(data)
            else:
                self.db.create_table(QUERY_CACHE, data)
            cached.update({k: v for (k, _), v in zip(missing, vectors)})
        return np.stack([np.asarray(cached[k], dtype=np.float32) for k in keys]) if keys else np.zeros((0, 0))
