"""ANN (IVF-PQ) on a 1M-vector synthetic corpus: recall@10 against exact search, build time, latency, size.

    python benchmarks/ann.py [--rows 1000000] [--dim 384] [--queries 1000] [--out benchmarks/results]

The corpus: ``--clusters`` Gaussian clusters on the unit sphere, each point a cluster centre plus a
point of a 16-dimensional subspace of its own cluster plus small isotropic noise, normalised (sentence
embeddings have a low intrinsic dimension; pure isotropic noise in 384-d would be a worst case no
embedder produces). The queries are drawn from the same clusters and are not in the corpus.

The index is built by the project's own code (``evaluations.index.ann.ensure_index``) with the default
``lancedb.ann`` settings, in a LanceDB table like the ``vectors`` table of a run; queries use
``ann.tune`` (the defaults' ``nprobes`` / ``refine_factor``). Exact top-10 are computed with numpy
(cosine = dot product of unit vectors), independently of LanceDB. Also measured: recall for a grid of
``nprobes`` x ``refine_factor``, one-query latency p50/p95 (ANN and LanceDB's flat scan), build time
and index size on disk. Peak memory stays near 2x the float32 matrix (1M x 384: 1.5 GB).
Writes ``ann.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluations.core.config import ANN  # noqa: E402
from evaluations.index import ann  # noqa: E402


def make_points(rng: np.random.Generator, centres: np.ndarray, bases: np.ndarray, n: int) -> np.ndarray:
    which = rng.integers(0, len(centres), n)
    latent = rng.standard_normal((n, bases.shape[1])).astype(np.float32) * 0.35
    points = centres[which]
    for start in range(0, n, 5000):  # bases[which] of 5,000 points: 123 MB
        part = slice(start, start + 5000)
        points[part] += np.einsum("nl,nld->nd", latent[part], bases[which[part]])
    points += rng.standard_normal(points.shape).astype(np.float32) * (0.05 / np.sqrt(points.shape[1]))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def exact_top(matrix: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), k), dtype=np.int64)
    for start in range(0, len(matrix), 100_000):
        scores = queries @ matrix[start : start + 100_000].T
        ids = np.argpartition(-scores, k, axis=1)[:, :k]
        merged_scores = np.concatenate([best_scores, np.take_along_axis(scores, ids, 1)], axis=1)
        merged_ids = np.concatenate([best_ids, ids + start], axis=1)
        keep = np.argsort(-merged_scores, axis=1)[:, :k]
        best_scores, best_ids = np.take_along_axis(merged_scores, keep, 1), np.take_along_axis(merged_ids, keep, 1)
    return best_ids


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def search_ids(table, vector: np.ndarray, k: int, settings: ANN | None) -> list[str]:
    query = (table.search(vector, vector_column_name="vector").distance_type("cosine").limit(k)
             .select(["chunk_id", "_distance"]))
    query = ann.tune(query, settings) if settings else query.bypass_vector_index()
    return query.to_arrow().column("chunk_id").to_pylist()


def percentiles(ms: list[float]) -> dict[str, float]:
    return {"p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95)), "mean": float(np.mean(ms))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--exact-latency-queries", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    import lancedb

    k = 10
    settings = ANN(min_rows=1)
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((args.clusters, args.dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    bases = rng.standard_normal((args.clusters, 16, args.dim)).astype(np.float32) / np.sqrt(args.dim)
    work = Path(tempfile.mkdtemp(prefix="bench-ann-"))
    db = lancedb.connect(str(work / "db"))
    matrix = np.empty((args.rows, args.dim), dtype=np.float32)
    t0 = time.perf_counter()
    table = None
    for start in range(0, args.rows, 100_000):
        n = min(100_000, args.rows - start)
        matrix[start : start + n] = make_points(rng, centres, bases, n)
        data = pa.table({"chunk_id": [str(i) for i in range(start, start + n)],
                         "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix[start : start + n].ravel()),
                                                                     args.dim)})
        table = db.create_table("vectors", data) if table is None else table
        if start:
            table.add(data)
    write_s = time.perf_counter() - t0
    data_mb = folder_mb(work / "db")
    queries = make_points(rng, centres, bases, args.queries)

    t0 = time.perf_counter()
    exact = [[str(i) for i in row] for row in exact_top(matrix, queries, k)]
    numpy_exact_s = time.perf_counter() - t0
    del matrix

    info = ann.ensure_index(table, settings, None)
    index_mb = folder_mb(work / "db") - data_mb

    latency, found = [], []
    for vector in queries:
        t1 = time.perf_counter()
        found.append(search_ids(table, vector, k, settings))
        latency.append((time.perf_counter() - t1) * 1000)
    recall = ann.recall_at_k(found, exact, k)

    grid = []
    for nprobes in (8, 16, 32, 64):
        for refine in (None, 5, 10, 20):
            point = settings.model_copy(update={"nprobes": nprobes, "refine_factor": refine})
            ids, ms = [], []
            for vector in queries[:300]:
                t1 = time.perf_counter()
                ids.append(search_ids(table, vector, k, point))
                ms.append((time.perf_counter() - t1) * 1000)
            grid.append({"nprobes": nprobes, "refine_factor": refine,
                         "recall@10": ann.recall_at_k(ids, exact[:300], k), "latency_ms": percentiles(ms)})

    flat_ms, flat_ids = [], []
    for vector in queries[: args.exact_latency_queries]:
        t1 = time.perf_counter()
        flat_ids.append(search_ids(table, vector, k, None))
        flat_ms.append((time.perf_counter() - t1) * 1000)

    result = {
        "corpus": {"rows": args.rows, "dim": args.dim, "clusters": args.clusters, "latent_dim": 16,
                   "kind": "synthetic clustered Gaussian, unit-normalised (see benchmarks/ann.py)"},
        "queries": args.queries, "k": k,
        "settings": settings.model_dump(exclude={"min_rows"}),
        "index": info.model_dump() if info else None,
        "recall@10": recall,
        "target_recall@10": 0.99, "target_met": recall >= 0.99,
        "latency_ms": percentiles(latency),
        "flat_scan_latency_ms": percentiles(flat_ms),
        "flat_scan_recall_vs_numpy": ann.recall_at_k(flat_ids, exact, k),
        "build_seconds": info.build_seconds if info else None,
        "build_rows_per_second": args.rows / info.build_seconds if info and info.build_seconds else None,
        "write_seconds": write_s, "numpy_exact_seconds": numpy_exact_s,
        "data_mb": data_mb, "index_mb": index_mb,
        "grid": grid,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cpus": os.cpu_count(), "load_average_1m_after": os.getloadavg()[0],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ann.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("recall@10", "latency_ms", "build_seconds", "index_mb")}, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
