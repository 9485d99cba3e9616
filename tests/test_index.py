"""Chunking, the LanceDB store's incremental indexing, and the three search modes on real SciFact text."""

from __future__ import annotations

import numpy as np
import pytest

from evaluations.datasets import LoadOptions, get_spec
from evaluations.datasets.chunking import chunk_document, chunk_text
from evaluations.models.embedders import EmbeddedMiniLM, Embedder
from evaluations.index.search import Retriever
from evaluations.index.store import Store
from evaluations.results.retrieval_metrics import canonical_order, compute_all
from evaluations.core.types import Document
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)

pytestmark = pytest.mark.usefixtures("shared_minilm")


class CountingEmbedder(Embedder):
    """The real embedded MiniLM, counting what it is asked to embed."""

    def __init__(self):
        self.inner = EmbeddedMiniLM()
        self.id = self.inner.id
        self.calls: list[tuple[str, int]] = []

    def embed(self, texts, *, kind="document"):
        self.calls.append((kind, len(texts)))
        return self.inner.embed(texts, kind=kind)

    def embedded(self, kind: str) -> int:
        return sum(n for k, n in self.calls if k == kind)


def test_chunk_text_windows_and_overlap():
    words = " ".join(f"w{i}" for i in range(100))
    pieces = chunk_text(words, 40, 10)
    assert [p.split()[0] for p in pieces] == ["w0", "w30", "w60"]
    assert pieces[-1].split()[-1] == "w99"
    assert all(len(p.split()) <= 40 for p in pieces)
    assert chunk_text("short text.", 40, 10) == ["short text."]
    assert chunk_text("   ", 40, 10) == []
    doc = Document(id="d1", text=words)
    chunks = chunk_document(doc, 40, 10)
    assert [c.chunk_id for c in chunks] == ["d1#0", "d1#1", "d1#2"] and {c.doc_id for c in chunks} == {"d1"}
    with pytest.raises(ValueError):
        chunk_text(words, 10, 10)


@pytest.fixture(scope="module")
def small_corpus(scifact_small):
    return get_spec("beir").load(LoadOptions(source=scifact_small))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, small_corpus):
    embedder = CountingEmbedder()
    store = Store(tmp_path_factory.mktemp("db"), embedder)
    stats = store.index(small_corpus.documents, 256, 32)
    return store, embedder, stats


def test_index_then_reindex_embeds_nothing(indexed, small_corpus):
    store, embedder, stats = indexed
    n_chunks = sum(len(chunk_document(d, 256, 32)) for d in small_corpus.documents)
    assert stats.embedded_documents == len(small_corpus.documents) > 60
    assert stats.embedded_chunks == n_chunks == store.table.count_rows()
    assert stats.fts_rebuilt
    before = embedder.embedded("document")
    again = Store(store.path, embedder).index(small_corpus.documents, 256, 32)
    assert again.embedded_documents == 0 and again.embedded_chunks == 0 and not again.fts_rebuilt
    assert embedder.embedded("document") == before
    assert again.chunks == n_chunks


def test_changed_and_removed_documents_are_updated(tmp_path, small_corpus):
    embedder = CountingEmbedder()
    docs = small_corpus.documents[:12]
    store = Store(tmp_path / "db", embedder)
    store.index(docs, 256, 32)
    changed = [Document(id=docs[0].id, text=docs[0].text + " Extra sentence about zebrafish."), *docs[1:10]]
    stats = store.index(changed, 256, 32)
    assert stats.embedded_documents == 1  # only the changed one
    assert stats.deleted_documents == 3  # the old version of docs[0] and docs[10:12]
    assert set(store.table.to_arrow().column("doc_id").to_pylist()) == {d.id for d in changed}
    hits = Retriever(store, "fts", candidates=5).retrieve("zebrafish")
    assert hits.documents[0] == docs[0].id  # the FTS index was rebuilt with the new text
    # a different chunking is a different key: everything is re-embedded
    assert store.index(changed, 128, 16).embedded_documents == len(changed)


def test_query_vectors_are_cached(indexed, small_corpus):
    store, embedder, _ = indexed
    texts = [q.text for q in small_corpus.queries[:5]]
    first = store.query_vectors(texts)
    n = embedder.embedded("query")
    second = store.query_vectors(texts)
    assert embedder.embedded("query") == n
    np.testing.assert_allclose(first, second)
    direct = embedder.inner.embed(texts, kind="query")
    np.testing.assert_allclose(first, direct, atol=1e-5)


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
def test_search_modes_find_relevant_documents(indexed, small_corpus, mode):
    store, _, _ = indexed
    retriever = Retriever(store, mode, candidates=100, context_limit=5)
    retriever.prepare([q.text for q in small_corpus.queries])
    ndcg = []
    for query in small_corpus.queries:
        result = retriever.retrieve(query.text)
        assert len(result.documents) == len(set(result.documents))
        assert result.documents == canonical_order(dict(zip(result.documents, result.scores)))
        assert 0 < len(result.chunks) <= 5 and all(c.doc_id in result.documents for c in result.chunks)
        ndcg.append(compute_all(result.documents, query.relevant, [10])["ndcg@10"])
    # 20 real SciFact claims over ~80 documents: every mode must rank the gold abstracts well
    assert np.mean(ndcg) > 0.6


def test_hybrid_is_rrf_of_the_two_lists(indexed, small_corpus):
    store, _, _ = indexed
    query = small_corpus.queries[3].text
    vec, fts, hyb = (Retriever(store, m, candidates=100) for m in ("vector", "fts", "hybrid"))
    v, f, h = vec.retrieve(query), fts.retrieve(query), hyb.retrieve(query)
    expected: dict[str, float] = {}
    for ranking in (v.documents, f.documents):
        for rank, doc in enumerate(ranking, 1):
            expected[doc] = expected.get(doc, 0) + 1 / (60 + rank)
    assert h.documents == canonical_order(expected)[:100]
    assert h.scores == pytest.approx([expected[d] for d in h.documents])
