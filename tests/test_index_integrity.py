"""Index integrity on real data: corpus fingerprints, concurrent indexing, LanceDB URIs, lazy vectors,
unreadable index state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import lancedb
import numpy as np
import pytest

from evaluations.datasets import LoadOptions, get_spec
from evaluations.core.errors import EvaluationsError
from evaluations.datasets.chunking import chunk_document
from evaluations.models.embedders import EmbeddedMiniLM
from evaluations.index.search import Retriever
from evaluations.index.store import Store, corpus_fingerprint
from evaluations.core.types import Document

from conftest import REPLIQA_20, REPLIQA_NEWS
from test_index import CountingEmbedder
from inprocess import run_evaluations
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)

pytestmark = pytest.mark.usefixtures("shared_minilm")


@pytest.fixture(scope="module")
def corpus(scifact_small):
    return get_spec("beir").load(LoadOptions(source=scifact_small))


def n_chunks(documents, size=256, overlap=32) -> int:
    return sum(len(chunk_document(d, size, overlap)) for d in documents)


def test_fingerprint_is_the_set_of_documents_and_the_chunking(corpus):
    docs = corpus.documents
    fp = corpus_fingerprint(docs, 256, 32)
    assert len(fp) == 64 and fp == corpus_fingerprint(list(reversed(docs)), 256, 32)
    edited = [Document(id=docs[0].id, text=docs[0].text + "."), *docs[1:]]
    renamed = [Document(id=docs[0].id + "x", text=docs[0].text), *docs[1:]]
    others = {corpus_fingerprint(edited, 256, 32), corpus_fingerprint(renamed, 256, 32),
              corpus_fingerprint(docs[1:], 256, 32), corpus_fingerprint(docs, 128, 32),
              corpus_fingerprint(docs, 256, 16)}
    assert len(others) == 5 and fp not in others


def test_skip_db_with_another_corpus_is_refused(tmp_path):
    """The 20-row and the 50-row RepliQA samples used to share one index silently."""
    small = get_spec("repliqa").load(LoadOptions(source=REPLIQA_20))
    news = get_spec("repliqa").load(LoadOptions(source=REPLIQA_NEWS))
    embedder = CountingEmbedder()
    db = tmp_path / "repliqa"
    built = Store(str(db), embedder).index(small.documents, 256, 32, need_vectors=False)
    assert built.fingerprint == corpus_fingerprint(small.documents, 256, 32)
    assert built.embedded_chunks == 0 and embedder.embedded("document") == 0 and built.vectors == 0

    store = Store(str(db), embedder)
    same = store.use_existing(small.documents, 256, 32, need_vectors=False)  # the same corpus is fine
    assert same.fingerprint == built.fingerprint and same.chunks == built.chunks == n_chunks(small.documents)
    with pytest.raises(EvaluationsError) as err:
        store.use_existing(news.documents, 256, 32, need_vectors=False)
    text = err.value.render()
    assert str(db) in text and "another corpus" in text and "--skip-db" in err.value.fix
    assert f"holds {len(small.documents)} documents" in text and f"has {len(news.documents)} documents" in text
    assert built.fingerprint[:12] in text and corpus_fingerprint(news.documents, 256, 32)[:12] in text
    with pytest.raises(EvaluationsError, match="another corpus"):  # same documents, other chunking
        store.use_existing(small.documents, 128, 16, need_vectors=False)
    # without --skip-db the index is brought to the new corpus, and then it matches
    moved = store.index(news.documents, 256, 32, need_vectors=False)
    assert moved.deleted_documents == len(small.documents) and moved.chunks == n_chunks(news.documents)
    assert store.use_existing(news.documents, 256, 32, need_vectors=False).fingerprint == moved.fingerprint
    with pytest.raises(EvaluationsError, match="no index yet"):
        Store(str(tmp_path / "empty"), embedder).use_existing(small.documents, 256, 32)


CHILD = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from evaluations.datasets import LoadOptions, get_spec
    from evaluations.models.embedders import EmbeddedMiniLM
    from evaluations.index.store import Store
    db, source, go, out = sys.argv[1:5]
    documents = get_spec("beir").load(LoadOptions(source=Path(source))).documents
    store = Store(db, EmbeddedMiniLM())
    Path(out + ".ready").write_text("")
    while not Path(go).exists():  # the start line: both processes index at the same moment
        time.sleep(0.005)
    stats = store.index(documents, 256, 32, need_vectors=False)
    Path(out).write_text(json.dumps(stats.__dict__))
""")


def test_two_concurrent_runs_never_duplicate_chunks(tmp_path, corpus, scifact_small):
    """Without the lock this ends with every chunk twice, or one run failing on a LanceDB commit
    conflict (both seen when the lock was removed)."""
    db, go = tmp_path / "db", tmp_path / "go"
    outs = [tmp_path / f"out{i}.json" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(scifact_small), str(go), str(out)],
                              stderr=subprocess.PIPE, text=True) for out in outs]
    deadline = time.monotonic() + 240
    while not all(Path(f"{out}.ready").exists() for out in outs):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), [p.stderr.read() for p in procs]
        time.sleep(0.02)
    go.write_text("")
    for proc in procs:
        assert proc.wait(timeout=240) == 0, proc.stderr.read()
    stats = [json.loads(out.read_text()) for out in outs]

    expected = n_chunks(corpus.documents)
    ids = lancedb.connect(str(db)).open_table("chunks").to_arrow().column("chunk_id").to_pylist()
    assert len(ids) == len(set(ids)) == expected
    assert [s["chunks"] for s in stats] == [expected, expected]
    # one run wrote every document; the other found the work done and wrote nothing
    assert sorted(s["chunked_documents"] for s in stats) == [0, len(corpus.documents)]
    assert stats[0]["fingerprint"] == stats[1]["fingerprint"] == corpus_fingerprint(corpus.documents, 256, 32)


def test_uris_reach_lancedb_as_strings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    embedder = EmbeddedMiniLM()
    try:  # offline, LanceDB's S3 store fails to resolve the bucket's region: proof it got the s3:// URI
        store = Store("s3://bucket/evaluations-db", embedder)
    except EvaluationsError as err:
        assert err.where == "s3://bucket/evaluations-db" and "S3" in err.message and "bucket" in err.message
    else:  # with network access, the connection is lazy and keeps the URI
        assert store.db.uri == "s3://bucket/evaluations-db" and not store.local
    assert list(tmp_path.iterdir()) == []  # no local "s3:/bucket/..." folder
    cloud = Store("db://my-project", embedder, api_key="sk-test", region="eu-west-1")
    assert type(cloud.db).__name__ == "RemoteDBConnection" and not cloud.local
    assert (cloud.db.db_name, cloud.db.api_key, cloud.db.region) == ("my-project", "sk-test", "eu-west-1")
    assert list(tmp_path.iterdir()) == []


def test_a_remote_uri_keeps_its_state_in_lancedb(corpus):
    """``memory://`` is a LanceDB URI that is no local folder: the remote code path (no lock file,
    merge_insert writes, state in the ``meta`` table) end to end."""
    docs = corpus.documents[:20]
    store = Store("memory://", EmbeddedMiniLM())
    assert not store.local
    built = store.index(docs, 256, 32, need_vectors=False)
    again = store.index(docs, 256, 32, need_vectors=False)  # merge_insert must not add rows twice
    assert built.chunks == again.chunks == n_chunks(docs) and again.chunked_documents == 0
    assert not again.fts_rebuilt  # the BM25 index's table version is read back from ``meta``
    ids = store.table.to_arrow().column("chunk_id").to_pylist()
    assert len(ids) == len(set(ids)) == n_chunks(docs)
    assert store.use_existing(docs, 256, 32, need_vectors=False).fingerprint == built.fingerprint
    with pytest.raises(EvaluationsError, match="another corpus"):
        store.use_existing(docs[:10], 256, 32, need_vectors=False)
    assert Retriever(store, "fts", candidates=5).retrieve(corpus.queries[0].text).documents


def test_bm25_never_embeds_and_vectors_come_when_first_needed(tmp_path, corpus):
    docs = corpus.documents[:30]  # the 20 queries' relevant abstracts come first, then distractors
    lazy_embedder, eager_embedder = CountingEmbedder(), CountingEmbedder()
    lazy = Store(tmp_path / "lazy", lazy_embedder)
    stats = lazy.index(docs, 256, 32, need_vectors=False)
    assert stats.embedded_chunks == 0 and stats.vectors == 0 and lazy_embedder.embedded("document") == 0
    assert stats.chunks == n_chunks(docs) and stats.fts_rebuilt
    fts = Retriever(lazy, "fts", candidates=10)
    fts.prepare([q.text for q in corpus.queries])
    assert all(fts.retrieve(q.text).documents for q in corpus.queries) and lazy_embedder.embedded("document") == 0

    eager = Store(tmp_path / "eager", eager_embedder)
    assert eager.index(docs, 256, 32).embedded_chunks == n_chunks(docs) == eager_embedder.embedded("document")
    queries = [q.text for q in corpus.queries]
    for mode in ("vector", "hybrid"):
        a, b = Retriever(lazy, mode, candidates=100), Retriever(eager, mode, candidates=100)
        a.prepare(queries)
        b.prepare(queries)
        for query in queries:
            ra, rb = a.retrieve(query), b.retrieve(query)
            assert ra.documents == rb.documents and ra.scores == pytest.approx(rb.scores, abs=1e-6)
            assert [c.chunk_id for c in ra.chunks] == [c.chunk_id for c in rb.chunks]
    assert lazy_embedder.embedded("document") == n_chunks(docs)  # built once, on first vector use
    assert lazy.vectors_ready()

    # incremental: one changed and two removed documents; a BM25 re-index embeds nothing and drops
    # the stale vectors, the next vector use embeds only the changed document
    changed = [Document(id=docs[0].id, text=docs[0].text + " Zebrafish fins regrow."), *docs[1:-2]]
    before = lazy_embedder.embedded("document")
    again = lazy.index(changed, 256, 32, need_vectors=False)
    assert again.deleted_documents == 3 and again.chunked_documents == 1
    assert lazy_embedder.embedded("document") == before
    assert again.vectors == n_chunks(docs) - n_chunks([docs[0], *docs[-2:]])
    assert not lazy.vectors_ready()
    filled = lazy.ensure_vectors()
    assert filled.embedded_documents == 1 and lazy_embedder.embedded("document") - before == n_chunks(changed[:1])
    vector_ids = lazy.vectors_table.to_arrow().column("chunk_id").to_pylist()
    assert sorted(vector_ids) == sorted(lazy.table.to_arrow().column("chunk_id").to_pylist())
    hit = Retriever(lazy, "vector", candidates=5).retrieve("zebrafish fins regrow")
    assert hit.documents[0] == docs[0].id


def test_unreadable_index_state_is_one_clear_error(tmp_path, corpus):
    db = tmp_path / "db"
    embedder = EmbeddedMiniLM()
    Store(db, embedder).index(corpus.documents[:10], 256, 32, need_vectors=False)
    meta = db / "meta.lance"
    for manifest in (meta / "_versions").iterdir():
        manifest.write_bytes(b"\x00garbage\xff" * 3)
    with pytest.raises(EvaluationsError) as err:
        Store(db, embedder).use_existing(corpus.documents[:10], 256, 32, need_vectors=False)
    assert err.value.where == str(meta) and "unreadable" in err.value.message
    assert f"delete {db}" in err.value.fix


def test_an_index_of_the_old_format_is_refused(tmp_path, corpus):
    """Before issue 6 the vectors lived in ``chunks`` and the state in state.json."""
    db = tmp_path / "old"
    lancedb.connect(str(db)).create_table("chunks", [
        {"chunk_id": "a#0", "doc_id": "a", "chunk_index": 0, "text": "x", "doc_key": "k",
         "vector": np.zeros(4, dtype=np.float32).tolist()}])
    with pytest.raises(EvaluationsError, match="another version of evaluations") as err:
        Store(db, EmbeddedMiniLM()).index(corpus.documents[:3], 256, 32, need_vectors=False)
    assert f"delete {db}" in err.value.fix


def test_cli_bm25_run_fingerprint_and_uri(tmp_path):
    """End to end: an fts run embeds nothing and records the corpus fingerprint; ``--skip-db`` with
    the other RepliQA sample is one clear error; an ``s3://`` --db reaches LanceDB as a URI."""
    def cli(*args):
        return run_evaluations(["repliqa", *args, "--search-mode", "fts",
                               "--skip-qa", "--no-progress"], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "HAIKU_RAG_CONFIG_PATH": ""}, timeout=600)

    db = tmp_path / "db"
    proc = cli("--source", str(REPLIQA_20), "--db", str(db), "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    index = json.loads((tmp_path / "run" / "summary.json").read_text())["index"]
    documents = get_spec("repliqa").load(LoadOptions(source=REPLIQA_20)).documents
    assert index["embedded_chunks"] == 0 and index["vectors"] == 0 and index["chunks"] == n_chunks(documents)
    assert index["fingerprint"] == corpus_fingerprint(documents, 256, 32)

    proc = cli("--source", str(REPLIQA_NEWS), "--db", str(db), "--skip-db", "--out", str(tmp_path / "run2"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "another corpus" in proc.stderr and str(db) in proc.stderr.replace("\n", "")

    proc = cli("--source", str(REPLIQA_20), "--db", "s3://bucket/evaluations-db", "--out", str(tmp_path / "run3"))
    assert "Traceback" not in proc.stderr and not (tmp_path / "s3:").exists()
    assert proc.returncode == 2 and "s3://bucket/evaluations-db" in proc.stderr and "S3" in proc.stderr
