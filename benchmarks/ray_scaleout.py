"""``--executor ray`` on this machine (issue 18): indexing throughput with 1 and 2 Ray workers, and the Ray overhead
on a 300-case retrieval run.

    python benchmarks/ray_scaleout.py [--data ../shared/data/scifact] [--out benchmarks/results]

1. Indexing SciFact cold (a fresh ``--db``; all-MiniLM-L6-v2; ``--search-mode vector --limit 1``, so the run is
   the indexing): in this process (``--executor local``), and on a local Ray cluster started with 1 and with 2
   CPUs (``ray.init(num_cpus=N)``; Ray Data runs one embedding actor per CPU). The rate is embedded chunks per
   second of the vector stage (``summary.json`` ``index.seconds.vectors``: embedding + writing, the Ray run's
   actor start-up and model loads included). Target: 2 workers >= 1.6x one worker's rate.
2. The 300 SciFact test queries, ``--search-mode fts`` on an index already built: wall time of the whole command
   with ``--executor local`` and ``--executor ray`` (cluster start, actor start-up included). Target: the Ray
   run takes at most 15 s more. Both give the same nDCG@10 (checked).

Each measurement is a fresh process. The machine is shared: the load average is recorded beside the times.
Writes ``ray_scaleout.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a run on a Ray cluster of N CPUs started in the process (argv: N, then the CLI's arguments)
ON_CLUSTER = ("import sys, ray\nray.init(num_cpus=int(sys.argv[1]), include_dashboard=False)\n"
              "from evaluations.cli.root import main\nmain(sys.argv[2:])\n")


def _run(work: Path, name: str, args: list[str], cpus: int | None = None) -> tuple[dict, float]:
    out = work / name
    cli = [*args, "--no-progress", "--out", str(out)]
    command = ([sys.executable, "-c", ON_CLUSTER, str(cpus), *cli] if cpus
               else [sys.executable, "-m", "evaluations", *cli])
    env = {**os.environ, "HAIKU_RAG_CONFIG_PATH": "", "EVALUATIONS_CACHE_PATH": str(work / "cache.sqlite")}
    t0 = time.perf_counter()
    proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads((out / "summary.json").read_text()), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    beir = ["beir", str(args.data), "--skip-qa"]
    try:
        indexing = {}
        for label, cpus, executor in (("local", None, "local"), ("ray_1_worker", 1, "ray"),
                                      ("ray_2_workers", 2, "ray")):
            load = os.getloadavg()[0]
            summary, wall = _run(work, f"index-{label}", [*beir, "--search-mode", "vector", "--limit", "1", "--db",
                                                          str(work / f"db-{label}"), "--executor", executor], cpus)
            index = summary["index"]
            indexing[label] = {
                "executor": summary["run"]["executor"], "embedded_chunks": index["embedded_chunks"],
                "vector_stage_s": index["seconds"]["vectors"], "wall_s": wall,
                "chunks_per_s": index["embedded_chunks"] / index["seconds"]["vectors"],
                "fingerprint": index["fingerprint"], "load_average_1m_before": load}
        one, two = indexing["ray_1_worker"]["chunks_per_s"], indexing["ray_2_workers"]["chunks_per_s"]

        db = work / "db-fts"
        fts = [*beir, "--search-mode", "fts", "--db", str(db)]
        _run(work, "fts-build", fts)  # the index; the timed runs below find it up to date
        runs = {}
        for label, executor in (("local", "local"), ("ray", "ray")):
            load = os.getloadavg()[0]
            summary, wall = _run(work, f"fts-{label}", [*fts, "--executor", executor])
            runs[label] = {"wall_s": wall, "run_seconds": summary["run"]["seconds"],
                           "cases": summary["counts"]["cases"], "ndcg@10": summary["metrics"]["ndcg@10"],
                           "executor": summary["run"]["executor"], "load_average_1m_before": load}
        overhead = runs["ray"]["wall_s"] - runs["local"]["wall_s"]
        result = {
            "machine": {"cpus": os.cpu_count(), "note": "shared with other jobs: see the load averages"},
            "indexing": {"dataset": "scifact", "embedder": "embedded:all-MiniLM-L6-v2", "runs": indexing,
                         "ratio_2_workers_vs_1": two / one,
                         "ratio_2_workers_vs_local": two / indexing["local"]["chunks_per_s"],
                         "target_ratio": 1.6, "meets_target": two / one >= 1.6,
                         "same_fingerprint": len({r["fingerprint"] for r in indexing.values()}) == 1},
            "retrieval_300": {"runs": runs, "ray_overhead_s": overhead, "target_overhead_s": 15.0,
                              "meets_target": overhead <= 15.0,
                              "same_ndcg@10": runs["local"]["ndcg@10"] == runs["ray"]["ndcg@10"]},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ray_scaleout.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
