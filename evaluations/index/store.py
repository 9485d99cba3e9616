"""The LanceDB index of one corpus: text chunks with a BM25 index, and chunk vectors built lazily.

Tables (all in one LanceDB database, local folder or ``s3://``/``gs://``/``db://`` URI):

- ``chunks``: chunk_id, doc_id, chunk_index, text, doc_key, with LanceDB's ``FTS()`` index on text.
  ``doc_key = sha256(chunk_size, chunk_overlap, doc id, text)``: re-indexing writes only documents
  whose key is new and deletes rows whose key is no longer wanted. No embedder is involved, so a
  BM25-only (``fts``) run never embeds.
- ``vectors``: the same rows plus a ``vector`` column, keyed by
  ``vector_key = sha256(embedder id, doc_key)``. Built from ``chunks`` when a vector mode first
  needs them (``need_vectors`` / ``ensure_vectors``): only documents without vectors are embedded,
  vectors of documents no longer in ``chunks`` are deleted.
- ``query_vectors``: cached query embeddings, keyed by sha256(embedder id, text).
- ``meta``: key -> JSON value: ``format``, ``corpus`` (fingerprint of the corpus the index holds,
  its size and chunking) and ``fts_version`` (the ``chunks`` version the BM25 index was built for).
  A LanceDB table rather than a side file, so it works on object stores and LanceDB Cloud too.

Corpus fingerprint: ``sha256`` over the sorted ``(doc id, sha256(text))`` pairs and the chunking
parameters (``corpus_fingerprint``). ``use_existing`` (``--skip-db``) refuses an index whose recorded
fingerprint differs from the corpus being evaluated.

Concurrency: every write to a local folder happens under an exclusive lock file in the folder
(``filelock``), and the reading of what exists is done inside it, so two runs indexing one folder at
once never duplicate chunks: the second finds the first one's work done. Remote URIs cannot hold a
file lock; there chunks and vectors are written with ``merge_insert`` keyed on (key, chunk_id), so a
concurrent writer's rows are never inserted twice.

Object stores (``s3://``): credentials, region and endpoint come from ``lancedb.storage_options`` and
the usual AWS variables (``index/objectstore.py``); the store is listed when opened, so a wrong
endpoint, credential or bucket is one clear error before any work.

ANN: once ``vectors`` holds ``lancedb.ann.min_rows`` rows a vector index is built on it
(``index/ann.py``); ``IndexStats.ann`` records it, and the retriever adds its measured recall.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from evaluations.core.config import LanceDB
from evaluations.core.errors import EvaluationsError
from evaluations.core.types import Document
from evaluations.datasets.chunking import Chunk, chunk_document
from evaluations.index import ann, objectstore
from evaluations.models.embedders import Embedder

CHUNKS = "chunks"
VECTORS = "vectors"
QUERY_CACHE = "query_vectors"
META = "meta"
FORMAT = 2  # 1: vectors inside ``chunks`` and a state.json file (evaluations <= issue 5)
LOCK_FILE = ".evaluations.lock"
_WRITE_BATCH = 2048  # chunks per write / per embedder call (whole documents only)


def doc_key(chunk_size: int, chunk_overlap: int, document: Document) -> str:
    """Content key of one document's chunks: sha256 of the chunking parameters, its id and text."""
    payload = json.dumps([chunk_size, chunk_overlap, document.id, document.text], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def vector_key(embedder_id: str, key: str) -> str:
    """Key of one document's vectors: sha256(embedder id, doc_key)."""
    return hashlib.sha256(f"{embedder_id}\x00{key}".encode()).hexdigest()


def query_key(embedder_id: str, text: str) -> str:
    return hashlib.sha256(f"{embedder_id}\x00{text}".encode()).hexdigest()


def corpus_fingerprint(documents: Sequence[Document], chunk_size: int, chunk_overlap: int) -> str:
    """sha256 over the sorted (doc id, sha256(text)) pairs and the chunking parameters."""
    pairs = sorted({(d.id, hashlib.sha256(d.text.encode("utf-8")).hexdigest()) for d in documents})
    payload = json.dumps({"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "documents": pairs})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def is_local(uri: str) -> bool:
    """A plain path (or ``file://``) is a local folder; any other ``scheme://`` goes to LanceDB as is."""
    return "://" not in uri or uri.startswith("file://")


@dataclass
class IndexStats:
    documents: int = 0
    chunks: int = 0
    fingerprint: str = ""  # corpus_fingerprint of the indexed corpus
    chunked_documents: int = 0  # documents (re)written to ``chunks`` in this run
    embedded_documents: int = 0
    embedded_chunks: int = 0
    vectors: int = 0  # chunks that have a vector of this embedder (0 in a BM25-only index)
    deleted_documents: int = 0
    fts_rebuilt: bool = False
    seconds: dict[str, float] = field(default_factory=dict)  # chunk, write, fts, embed, vectors, ann, total
    # the ANN vector index (``ann.AnnInfo`` as a dict; the retriever adds its recall), None: exact search
    ann: dict | None = None


Progress = Callable[[int], None]
#: texts of each write batch -> their vectors, batch by batch in the same order (``Store(embed_batches=…)``)
EmbedBatches = Callable[[list[list[str]]], Iterator[np.ndarray]]


class Store:
    """A LanceDB database holding one corpus; vectors of one embedder are added when needed.

    ``uri`` is a local folder or a LanceDB URI string (``s3://bucket/db``, ``gs://…``, ``db://name``
    for LanceDB Cloud with ``api_key``/``region``); it is never turned into a ``Path``. ``settings`` is
    the config's ``lancedb`` section (storage options, ANN index); ``api_key``/``region`` override its own.
    ``stats`` is the ``IndexStats`` of the last ``index``/``use_existing`` call.
    """

    def __init__(self, uri: str | os.PathLike[str], embedder: Embedder, *, settings: LanceDB | None = None,
                 api_key: str = "", region: str = "", embed_batches: EmbedBatches | None = None):
        import lancedb

        self.path = uri if isinstance(uri, str) else os.fspath(uri)
        self.embedder = embedder
        self.settings = settings or LanceDB()
        self.stats = IndexStats()
        # how document chunks are embedded: the texts of every write batch in, their vectors out in the same
        # order (default: ``embedder.embed`` here; ``--executor ray``: Ray Data actors, pipeline.ray_executor)
        self.embed_batches = embed_batches or self._embed_here
        self.local = is_local(self.path)
        self._folder = Path(self.path.removeprefix("file://")) if self.local else None
        options: dict = {}
        if self.path.startswith("db://"):
            options = {k: v for k, v in (("api_key", api_key or self.settings.api_key),
                                         ("region", region or self.settings.region)) if v}
        store = objectstore.resolve(self.path, self.settings.storage_options)
        if store.options:
            options["storage_options"] = store.options
        try:
            if self._folder is not None:
                self._folder.mkdir(parents=True, exist_ok=True)
            self.db = lancedb.connect(self.path, **options)
            if not self.local and not self.path.startswith("db://"):
                self.db.list_tables()  # an object store: reach it now, not halfway through a run
        except Exception as exc:
            if not self.local and not self.path.startswith("db://"):
                raise objectstore.explain(exc, store) from None
            raise EvaluationsError(f"cannot open the LanceDB index: {exc}", where=self.path,
                                   fix="check --db / lancedb.uri (and lancedb.api_key/region for db://) "
                                       "points at a writable folder or a reachable database") from None

    # -- tables, state, lock -------------------------------------------------------------------
    def _corrupt(self, what: str, exc: BaseException) -> EvaluationsError:
        where = str(self._folder / f"{what}.lance") if self._folder else f"{self.path} (table {what!r})"
        return EvaluationsError(f"the index is unreadable ({what}: {type(exc).__name__}: {exc})", where=where,
                                fix=f"delete {self.path} and re-run without --skip-db to rebuild the index")

    def _table_names(self) -> set[str]:
        try:
            result = self.db.list_tables()
        except Exception as exc:
            raise EvaluationsError(f"cannot list the LanceDB tables: {exc}", where=self.path,
                                   fix="check --db / lancedb.uri and its credentials") from None
        names = getattr(result, "tables", result)
        return set(names)

    def _open(self, name: str):
        try:
            return self.db.open_table(name)
        except Exception as exc:
            raise self._corrupt(name, exc) from None

    def has_index(self) -> bool:
        return CHUNKS in self._table_names()

    @property
    def table(self):
        """The ``chunks`` table (text, BM25 index)."""
        return self._open(CHUNKS)

    @property
    def vectors_table(self):
        """The ``vectors`` table; call ``ensure_vectors`` first."""
        if VECTORS not in self._table_names():
            raise EvaluationsError("the index has no vectors: no chunk was indexed", where=self.path,
                                   fix="check the corpus has documents with text, and run without --skip-db")
        return self._open(VECTORS)

    def _meta(self) -> dict:
        if META not in self._table_names():
            return {}
        try:
            rows = self._open(META).to_arrow().to_pylist()
            return {row["key"]: json.loads(row["value"]) for row in rows}
        except EvaluationsError:
            raise
        except Exception as exc:
            raise self._corrupt(META, exc) from None

    def _set_meta(self, **values) -> None:
        current = self._meta()
        values = {k: v for k, v in values.items() if k not in current or current[k] != v}
        if not values:
            return
        data = pa.table({"key": list(values), "value": [json.dumps(v) for v in values.values()]})
        if META in self._table_names():
            (self._open(META).merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
             .execute(data))
        else:
            self.db.create_table(META, data)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Exclusive write access: a lock file in a local folder; remote writes rely on merge_insert."""
        if self._folder is None:
            self._check_format()
            yield
            return
        from filelock import FileLock

        lock = FileLock(str(self._folder / LOCK_FILE))
        try:
            lock.acquire()
        except OSError as exc:
            raise EvaluationsError(f"cannot lock the index for writing: {exc}", where=lock.lock_file,
                                   fix="make the --db folder writable, or pass another --db") from None
        try:
            self._check_format()
            yield
        finally:
            lock.release()

    def _check_format(self) -> None:
        names = self._table_names()
        if CHUNKS not in names:
            return
        try:
            has_vectors_inside = "vector" in self._open(CHUNKS).schema.names
        except EvaluationsError:
            raise
        except Exception as exc:
            raise self._corrupt(CHUNKS, exc) from None
        version = self._meta().get("format")
        if has_vectors_inside or version not in (None, FORMAT):
            raise EvaluationsError(
                f"the index was built by another version of evaluations (format {version or 1}, this one "
                f"reads format {FORMAT})", where=self.path,
                fix=f"delete {self.path} to rebuild it, or pass another --db")

    def _keys(self, name: str, column: str) -> set[str]:
        if name not in self._table_names():
            return set()
        rows = self._open(name).search().select([column]).limit(None).to_arrow()
        return set(rows.column(column).to_pylist())

    def _append(self, name: str, data: pa.Table, key: str) -> None:
        """Add rows; on a remote URI insert only rows whose (key, chunk_id) is not there yet."""
        if name not in self._table_names():
            if self.local:
                self.db.create_table(name, data)
                return
            self.db.create_table(name, schema=data.schema, exist_ok=True)
        table = self._open(name)
        if self.local:
            table.add(data)
        else:
            table.merge_insert([key, "chunk_id"]).when_not_matched_insert_all().execute(data)

    def _delete_keys(self, name: str, column: str, keys: Sequence[str]) -> None:
        table = self._open(name)
        for i in range(0, len(keys), 500):
            quoted = ", ".join(f"'{k}'" for k in keys[i : i + 500])
            table.delete(f"{column} IN ({quoted})")

    # -- indexing ------------------------------------------------------------------------------
    def index(self, documents: Sequence[Document], chunk_size: int, chunk_overlap: int, *,
              need_vectors: bool = True, progress: Progress | None = None,
              on_total: Callable[[int], None] | None = None) -> IndexStats:
        """Bring ``chunks`` in line with ``documents`` and record their fingerprint; with
        ``need_vectors`` also embed the chunks that have no vector yet (``on_total`` gets how many,
        ``progress`` each batch embedded). Without it nothing is embedded."""
        started = time.perf_counter()
        stats = IndexStats(documents=len(documents),
                           fingerprint=corpus_fingerprint(documents, chunk_size, chunk_overlap))
        with self._writing():
            keys = {doc_key(chunk_size, chunk_overlap, d): d for d in documents}
            existing = self._keys(CHUNKS, "doc_key")
            new = [(k, chunk_document(d, chunk_size, chunk_overlap)) for k, d in keys.items() if k not in existing]
            stale = sorted(existing - keys.keys())
            stats.seconds["chunk"] = time.perf_counter() - started

            t0 = time.perf_counter()
            for batch in _batches(new):
                self._append(CHUNKS, _chunk_rows(batch), "doc_key")
            if stale:
                self._delete_keys(CHUNKS, "doc_key", stale)
            if stale and VECTORS in self._table_names():  # never leave vectors of deleted chunks
                self._delete_keys(VECTORS, "vector_key", [vector_key(self.embedder.id, k) for k in stale])
            stats.chunked_documents, stats.deleted_documents = len(new), len(stale)
            self._set_meta(format=FORMAT, corpus={"fingerprint": stats.fingerprint, "documents": len(documents),
                                                  "chunk_size": chunk_size, "chunk_overlap": chunk_overlap})
            stats.seconds["write"] = time.perf_counter() - t0
            self._finish(stats, need_vectors, progress, on_total)
        stats.seconds["total"] = time.perf_counter() - started
        self.stats = stats
        return stats

    def check_corpus(self, fingerprint: str, documents: int) -> None:
        """Raise unless the index was built from the corpus with this fingerprint."""
        recorded = self._meta().get("corpus")
        if recorded is None:
            raise EvaluationsError(
                "the index records no corpus fingerprint (its indexing was interrupted, or another tool "
                "wrote it)", where=self.path, fix="run once without --skip-db to bring the index up to date")
        if recorded.get("fingerprint") != fingerprint:
            raise EvaluationsError(
                f"the index was built from another corpus: it holds {recorded.get('documents')} documents "
                f"(fingerprint {str(recorded.get('fingerprint'))[:12]}, chunk_size {recorded.get('chunk_size')}, "
                f"chunk_overlap {recorded.get('chunk_overlap')}); this run has {documents} documents "
                f"(fingerprint {fingerprint[:12]})", where=self.path,
                fix="drop --skip-db to re-index this corpus into it, or pass the --db of this corpus")

    def use_existing(self, documents: Sequence[Document], chunk_size: int, chunk_overlap: int, *,
                     need_vectors: bool = True, progress: Progress | None = None,
                     on_total: Callable[[int], None] | None = None) -> IndexStats:
        """``--skip-db``: use the index as is after checking it holds exactly ``documents``. The BM25
        index is rebuilt if stale, and vectors are added if a vector mode needs them and they are
        missing (built from the stored chunks, never from ``documents``)."""
        started = time.perf_counter()
        if not self.has_index():
            raise EvaluationsError("--skip-db given but there is no index yet", where=self.path,
                                   fix="run once without --skip-db to build it")
        fingerprint = corpus_fingerprint(documents, chunk_size, chunk_overlap)
        stats = IndexStats(documents=len(documents), fingerprint=fingerprint)
        with self._writing():
            self.check_corpus(fingerprint, len(documents))
            self._finish(stats, need_vectors, progress, on_total)
        stats.seconds["total"] = time.perf_counter() - started
        self.stats = stats
        return stats

    def _finish(self, stats: IndexStats, need_vectors: bool, progress: Progress | None,
                on_total: Callable[[int], None] | None) -> None:
        """Under the lock: BM25 index up to date, vectors if needed (``on_total(0)`` if not), counts."""
        t0 = time.perf_counter()
        stats.fts_rebuilt = self._ensure_fts()
        stats.seconds["fts"] = time.perf_counter() - t0
        if need_vectors:
            self._sync_vectors(stats, progress, on_total)
        elif on_total:
            on_total(0)
        stats.chunks = self.table.count_rows() if self.has_index() else 0
        stats.vectors = self._vector_count()
        if need_vectors:
            self._ensure_ann(stats)

    def ensure_fts(self) -> bool:
        """(Re)build the BM25 index when ``chunks`` changed since it was built. True if rebuilt."""
        with self._writing():
            return self._ensure_fts()

    def _ensure_fts(self) -> bool:
        from lancedb.index import FTS

        if not self.has_index():
            return False
        table = self.table
        if self._meta().get("fts_version") == table.version:
            return False
        table.create_index("text", config=FTS(), replace=True)
        self._set_meta(fts_version=self.table.version)
        return True

    # -- vectors -------------------------------------------------------------------------------
    def ensure_vectors(self, progress: Progress | None = None,
                       on_total: Callable[[int], None] | None = None) -> IndexStats:
        """Embed the chunks that have no vector of this embedder yet; drop vectors of removed chunks."""
        stats = IndexStats()
        with self._writing():
            self._sync_vectors(stats, progress, on_total)
            stats.vectors = self._vector_count()
            self._ensure_ann(stats)
        self.stats.ann = stats.ann
        return stats

    def _ensure_ann(self, stats: IndexStats) -> None:
        """Under the lock: the ANN index of ``vectors`` built or brought up to date (``index/ann.py``)."""
        if VECTORS not in self._table_names():
            return
        t0 = time.perf_counter()
        recorded = self._meta().get("ann")  # build parameters of the index there
        info = ann.ensure_index(self._open(VECTORS), self.settings.ann, recorded)
        if (wanted := ann.build_params(self.settings.ann) if info else None) != recorded:
            self._set_meta(ann=wanted)
        stats.ann = info.model_dump() if info else None
        stats.seconds["ann"] = time.perf_counter() - t0

    def ann_info(self) -> ann.AnnInfo | None:
        """The ANN index of ``vectors`` as recorded in ``stats`` (None: searches are exact)."""
        if self.stats.ann is not None:
            return ann.AnnInfo.model_validate(self.stats.ann)
        if VECTORS in self._table_names() and ann.has_index(self._open(VECTORS)):  # built by an earlier run
            table = self._open(VECTORS)
            return ann.AnnInfo(type=self.settings.ann.type, rows=table.count_rows(),
                               min_recall=self.settings.ann.min_recall)
        return None

    def vectors_ready(self) -> bool:
        """True when every chunk has a vector of this embedder (and no vector is stale)."""
        wanted = {vector_key(self.embedder.id, k) for k in self._keys(CHUNKS, "doc_key")}
        return wanted == self._keys(VECTORS, "vector_key")

    def _vector_count(self) -> int:
        return self._open(VECTORS).count_rows() if VECTORS in self._table_names() else 0

    def _sync_vectors(self, stats: IndexStats, progress: Progress | None,
                      on_total: Callable[[int], None] | None) -> None:
        t0 = time.perf_counter()
        existing = self._keys(VECTORS, "vector_key")
        wanted = {vector_key(self.embedder.id, k): k for k in self._keys(CHUNKS, "doc_key")}
        missing = {k for vk, k in wanted.items() if vk not in existing}
        stale = sorted(existing - wanted.keys())
        by_doc: dict[str, list[Chunk]] = {}  # doc_key -> its chunks, in table (= document) order
        if missing:
            rows = self.table.to_arrow().select(["chunk_id", "doc_id", "chunk_index", "text", "doc_key"])
            for cid, did, idx, text, key in zip(*(rows.column(c).to_pylist() for c in rows.column_names)):
                if key in missing:
                    by_doc.setdefault(key, []).append(Chunk(chunk_id=cid, doc_id=did, index=idx, text=text))
        todo = [(vector_key(self.embedder.id, k), sorted(chunks, key=lambda c: c.index))
                for k, chunks in by_doc.items()]
        stats.embedded_documents = len(todo)
        stats.embedded_chunks = sum(len(chunks) for _, chunks in todo)
        if on_total:
            on_total(stats.embedded_chunks)
        if stale:  # first, so a switch of embedder (all vectors stale) may change the dimension
            self._delete_keys(VECTORS, "vector_key", stale)
        embed_s = 0.0
        batches = list(_batches(todo))
        t1 = time.perf_counter()
        for batch, vectors in zip(batches, self.embed_batches([[c.text for _, c in b] for b in batches])):
            embed_s += time.perf_counter() - t1
            self._write_vectors(batch, vectors)
            if progress:
                progress(len(batch))
            t1 = time.perf_counter()
        stats.seconds["embed"] = embed_s
        stats.seconds["vectors"] = time.perf_counter() - t0

    def _embed_here(self, batches: list[list[str]]) -> Iterator[np.ndarray]:
        for texts in batches:
            yield self.embedder.embed(texts, kind="document")

    def _write_vectors(self, batch: list[tuple[str, Chunk]], vectors: np.ndarray) -> None:
        dim = int(vectors.shape[1])
        if VECTORS in self._table_names():
            table = self._open(VECTORS)
            existing_dim = table.schema.field("vector").type.list_size
            if existing_dim != dim and not table.count_rows():
                self.db.drop_table(VECTORS)
            elif existing_dim != dim:
                raise EvaluationsError(
                    f"the index holds {existing_dim}-d vectors but the embedder gives {dim}-d", where=self.path,
                    fix="use another --db for this embedder, or delete the folder to rebuild")
        data = _chunk_rows(batch, key_column="vector_key").append_column(
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.FixedSizeListArray.from_arrays(pa.array(vectors.astype(np.float32).ravel()), dim))
        self._append(VECTORS, data, "vector_key")

    # -- query vectors -------------------------------------------------------------------------
    def query_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as queries, from the cache when present; new ones are cached."""
        keys = [query_key(self.embedder.id, t) for t in texts]
        cached: dict[str, np.ndarray] = {}
        if QUERY_CACHE in self._table_names():
            table = self._open(QUERY_CACHE).to_arrow()
            wanted = set(keys)
            vectors = np.array(table.column("vector").to_pylist(), dtype=np.float32)
            for key, vec in zip(table.column("key").to_pylist(), vectors):
                if key in wanted:
                    cached[key] = vec
        missing = [(k, t) for k, t in dict(zip(keys, texts)).items() if k not in cached]
        if missing:
            vectors = self.embedder.embed([t for _, t in missing], kind="query")
            dim = int(vectors.shape[1])
            data = pa.table({"key": [k for k, _ in missing],
                             "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim)})
            with self._writing():
                if QUERY_CACHE in self._table_names():
                    self._open(QUERY_CACHE).merge_insert("key").when_not_matched_insert_all().execute(data)
                else:
                    self.db.create_table(QUERY_CACHE, data)
            cached.update({k: v for (k, _), v in zip(missing, vectors)})
        return np.stack([np.asarray(cached[k], dtype=np.float32) for k in keys]) if keys else np.zeros((0, 0))


def _batches(docs: Sequence[tuple[str, list[Chunk]]]) -> Iterator[list[tuple[str, Chunk]]]:
    """(key, chunk) batches of at most ``_WRITE_BATCH`` chunks, never splitting a document."""
    batch: list[tuple[str, Chunk]] = []
    for key, chunks in docs:
        if batch and len(batch) + len(chunks) > _WRITE_BATCH:
            yield batch
            batch = []
        batch.extend((key, c) for c in chunks)
    if batch:
        yield batch


def _chunk_rows(batch: list[tuple[str, Chunk]], key_column: str = "doc_key") -> pa.Table:
    return pa.table({
        "chunk_id": pa.array([c.chunk_id for _, c in batch], pa.string()),
        "doc_id": pa.array([c.doc_id for _, c in batch], pa.string()),
        "chunk_index": pa.array([c.index for _, c in batch], pa.int32()),
        "text": pa.array([c.text for _, c in batch], pa.string()),
        key_column: pa.array([k for k, _ in batch], pa.string()),
    })
