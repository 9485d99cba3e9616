"""A BM25-only run on a new index never embeds (issue 6): cold SciFact ``--search-mode fts``.

    python benchmarks/bm25_cold.py [--data ../shared/data/scifact] [--out benchmarks/results]

Runs, as a user would, ``evaluations beir <scifact> --search-mode fts --skip-qa --no-progress
--db <new empty folder>`` and reads its ``summary.json``. Targets: wall time <= 30 s (the whole
command: start-up, reading 5,183 documents, chunking, LanceDB writes, the BM25 index, 300 queries),
0 embedded chunks, and nDCG@10 equal to the fts figure in the README (0.687, measured when the index
still embedded everything). Writes ``bm25_cold.json``. The machine is shared: ``cpu_s`` (the run's
user+system CPU time) and the load average are recorded beside the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_FTS_NDCG10 = 0.6872798745216183  # benchmarks/results/retrieval_scifact.json, modes.fts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-bm25-"))
    db, run_dir = work / "db", work / "run"
    command = [sys.executable, "-m", "evaluations", "beir", str(args.data), "--search-mode", "fts", "--skip-qa",
               "--no-progress", "--db", str(db), "--out", str(run_dir)]
    env = {**os.environ, "HAIKU_RAG_CONFIG_PATH": "", "PYTHONUNBUFFERED": "1"}
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"the run failed ({proc.returncode}):\n{proc.stderr}")
    summary = json.loads((run_dir / "summary.json").read_text())
    index = summary.get("index", {})
    ndcg = summary["metrics"]["ndcg@10"]
    result = {
        "command": " ".join(["evaluations", *command[3:]]),
        "wall_s": seconds, "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "documents": summary["dataset"]["documents"], "queries": summary["dataset"]["queries"],
        "chunks": index.get("chunks"), "embedded_chunks": index.get("embedded_chunks"),
        "vectors": index.get("vectors"), "index_seconds": index.get("seconds"),
        "fingerprint": index.get("fingerprint"),
        "ndcg@10": ndcg, "readme_fts_ndcg@10": README_FTS_NDCG10,
        "vector_tables": sorted(p.name for p in db.iterdir() if p.name.startswith("vectors")),
        "load_average_1m_before_after": [load_before, os.getloadavg()[0]], "cpus": os.cpu_count(),
        "targets": {"wall<=30s": seconds <= 30, "embedded_chunks==0": index.get("embedded_chunks") == 0,
                    "ndcg@10==readme": abs(ndcg - README_FTS_NDCG10) < 1e-9},
    }
    shutil.rmtree(work, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bm25_cold.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
