"""Start-up: whole-process wall time of ``evaluations --help`` and ``evaluations beir PATH --help`` (issue 46:
≤ 0.5 s each), the median of ``--runs`` runs, and the heavy modules each imports (none of torch, scipy, lancedb,
pydantic_evals). Run: ``python benchmarks/startup.py [--runs 7]``; writes ``benchmarks/results/startup.json``."""

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    exe = Path(sys.executable).with_name("evaluations")
    results = {}
    for name, argv in COMMANDS.items():
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([str(exe), *argv], capture_output=True, check=True)
            times.append(time.perf_counter() - start)
        probe = subprocess.run([sys.executable, "-c", PROBE.format(args=argv, heavy=HEAVY)], capture_output=True,
                               text=True, check=True)
        results[name] = {"median_s": round(statistics.median(times), 3), "runs": [round(t, 3) for t in times],
                         "heavy_imported": json.loads(probe.stderr.strip().splitlines()[-1])}
        print(name, results[name], flush=True)
    out = ROOT / "benchmarks" / "results" / "startup.json"
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "goal": "median <= 0.5 s, no heavy import",
                               "load_average_1min": round(os.getloadavg()[0], 2), **results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
