"""ANN vector indexes on a real corpus: built past ``lancedb.ann.min_rows``, their recall measured and recorded.

The corpus is real SciFact (10 test queries' relevant abstracts and 40 others, all-MiniLM-L6-v2 vectors), cut
into 48-word chunks (no overlap) so that it holds the 256 rows and more an IVF_PQ index needs to train its product
quantizer, with ``min_rows`` set low in the test config so the index is built. It is indexed (exact search) once
for the module; each test builds its ANN index on a copy. The recall the run records is checked
against one computed here: exact top-k by numpy (cosine over the stored vectors), the ANN top-k from
LanceDB's own query with the configured parameters.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lancedb
import numpy as np
import pytest
from conftest import write_scifact_subset
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)
from test_cli_retrieval import run_cli

pytestmark = pytest.mark.usefixtures("shared_minilm")
K = 10
QUERIES = 10
CHUNKING = {"chunk_size": 48, "chunk_overlap": 0}
# made poor on purpose: few coarse sub-vectors, one partition probed, no exact re-ranking
POOR = {"min_rows": 100, "num_partitions": 8, "num_sub_vectors": 4, "nprobes": 1, "refine_factor": None}
GOOD = {"min_rows": 100, "num_partitions": 4}  # the default search parameters (nprobes 32, refine_factor 10)


def _run(corpus: Path, work: Path, name: str, ann: dict, db: Path, *extra: str):
    config = work / f"{name}.yaml"
    config.write_text(json.dumps({"lancedb": {"ann": {"recall_queries": 1000, **ann}},  # YAML reads JSON
                                  "processing": CHUNKING}))
    out = work / name
    proc = run_cli("beir", str(corpus), "--config", str(config), "--search-mode", "vector", "--db", str(db),
                   "--out", str(out), "--no-progress", *extra, env={"HAIKU_RAG_CONFIG_PATH": ""})
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "summary.json").read_text()), proc.stderr


def _oracle_recall(db: Path, nprobes: int, refine_factor: int | None, limit: int) -> float:
    """Mean |ANN top-k ∩ exact top-k| / k over the run's queries; exact top-k by numpy."""
    conn = lancedb.connect(str(db))
    stored = conn.open_table("vectors").to_arrow()
    ids = np.array(stored.column("chunk_id").to_pylist())
    matrix = np.array(stored.column("vector").to_pylist(), dtype=np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = np.array(conn.open_table("query_vectors").to_arrow().column("vector").to_pylist(), dtype=np.float32)
    table = conn.open_table("vectors")
    shares = []
    for query in queries:
        q = query.astype(np.float64) / np.linalg.norm(query)
        exact = set(ids[np.argsort(-(matrix @ q), kind="stable")[:K]])
        search = table.search(query, vector_column_name="vector").distance_type("cosine").limit(limit).nprobes(nprobes)
        if refine_factor:
            search = search.refine_factor(refine_factor)
        found = search.select(["chunk_id", "_distance"]).to_arrow().column("chunk_id").to_pylist()[:K]
        shares.append(len(exact & set(found)) / K)
    return float(np.mean(shares))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, Path, dict]:
    """(the corpus, its index built by an exact-search run, that run's summary)."""
    work = tmp_path_factory.mktemp("ann")
    corpus = write_scifact_subset(work / "data", QUERIES, 40)
    # below min_rows (the default, 100,000): exact search, nothing recorded
    summary, _ = _run(corpus, work, "exact", {}, work / "db")
    return corpus, work / "db", summary


def _warned(caplog) -> list[str]:
    """The recall warnings the run logged (in a process of its own, Python's last-resort handler prints them to
    stderr; under pytest its log capture takes them)."""
    said = [r.getMessage() for r in caplog.records if r.name == "evaluations.index.ann" and r.levelname == "WARNING"]
    caplog.clear()
    return said


def test_ann_index_recall_is_measured_recorded_and_warned(indexed, tmp_path, caplog):
    corpus, built, exact_summary = indexed
    db = tmp_path / "db"
    shutil.copytree(built, db)
    assert exact_summary["index"]["ann"] is None and exact_summary["index"]["vectors"] > 256

    caplog.clear()
    poor, _ = _run(corpus, tmp_path, "poor", POOR, db, "--skip-db")
    info = poor["index"]["ann"]
    assert info["type"] == "ivf_pq" and info["built"] and info["rows"] == poor["index"]["vectors"]
    assert info["params"]["num_sub_vectors"] == 4 and info["recall_k"] == K and info["recall_queries"] == QUERIES
    oracle = _oracle_recall(db, nprobes=1, refine_factor=None, limit=300)
    assert info["recall"] == pytest.approx(oracle, abs=1e-6)
    assert info["recall"] < 0.99 and info["recall_ok"] is False
    (warning,) = _warned(caplog)
    assert warning.startswith(f"ANN index recall@10 is {info['recall']:.4f}") and "lancedb.ann.nprobes" in warning
    # the ANN misses show in the metrics: the poor index retrieves worse than exact search
    assert poor["metrics"]["recall@10"] <= exact_summary["metrics"]["recall@10"]

    # the build parameters changed: the index is rebuilt; at the default search parameters recall is >= 0.99
    good, stderr = _run(corpus, tmp_path, "good", GOOD, db, "--skip-db")
    info = good["index"]["ann"]
    assert info["built"] and info["params"]["nprobes"] == 32 and info["params"]["refine_factor"] == 10
    oracle = _oracle_recall(db, nprobes=32, refine_factor=10, limit=300)
    assert info["recall"] == pytest.approx(oracle, abs=1e-6) and info["recall"] >= 0.99
    assert info["recall_ok"] is True and info["recall_seconds"] > 0
    assert not _warned(caplog) and "ANN index recall" not in stderr

    # the same parameters again: the index is reused, and still checked
    again, _ = _run(corpus, tmp_path, "again", GOOD, db, "--skip-db")
    assert again["index"]["ann"]["built"] is False and again["index"]["ann"]["recall"] == info["recall"]
    assert again["metrics"] == good["metrics"]


def test_ivf_hnsw_sq_is_built_from_the_config(indexed, tmp_path):
    corpus, built, _ = indexed
    db = tmp_path / "db"
    shutil.copytree(built, db)  # the vectors as the exact run left them: nothing to embed, the index to build
    summary, stderr = _run(corpus, tmp_path, "hnsw", {**GOOD, "type": "ivf_hnsw_sq", "num_partitions": 2}, db)
    info = summary["index"]["ann"]
    assert info["type"] == "ivf_hnsw_sq" and info["built"] and info["params"]["m"] == 20
    indices = lancedb.connect(str(db)).open_table("vectors").list_indices()
    assert [i.index_type for i in indices] == ["IvfHnswSq"]
    oracle = _oracle_recall(db, nprobes=32, refine_factor=10, limit=300)
    assert info["recall"] == pytest.approx(oracle, abs=1e-6)
