"""Every judge figure, before and after a change that should not change them: ``judge-agreement --json`` and
``judge-check --json`` on every labelled file of ``datasets/labels/`` and ``../shared/data/``.

    python benchmarks/judge_figures.py                 # measure, write benchmarks/results/judge_figures.json
    python benchmarks/judge_figures.py --check         # measure again, exit 1 on any figure that differs (the
                                                       # check is appended to the results file's "checks")
    python benchmarks/judge_figures.py --repo OTHER    # the figures of another checkout (e.g. a commit before)

The commands run as a user runs them (``python -m evaluations``), each with an empty verdict store of its own
(``EVALUATIONS_CACHE_DIR``), so the model judges answer again. Judges without a model run on whole files; the model
judges (the embedded Qwen2.5-Coder-1.5B: ``llm``, ``combined``, ``faithfulness``, ``context_relevance``) on the first
``MODEL_ROWS`` rows or questions of a file, to stay within minutes. Only keys that measure time are dropped before
the comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "judge_figures.json"
MODEL_ROWS = "12"

LABELS = "datasets/labels"
EVOUNA = [f"{SHARED}/evouna/NQ.jsonl.gz", f"{SHARED}/evouna/TQ.jsonl.gz"]
ANSWERS = [f"{LABELS}/weak_answers.jsonl", f"{LABELS}/main_job_answers.jsonl"]
PASSAGES = [f"{LABELS}/faithfulness.jsonl", f"{LABELS}/context_relevance.jsonl", f"{LABELS}/multihop_faithfulness.jsonl"]
QUESTIONS = [f"{SHARED}/squad2_dev_cs224n/questions.jsonl.gz", f"{SHARED}/clapnq_dev/clapnq_dev_answerable.jsonl.gz",
             f"{SHARED}/wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz",
             f"{SHARED}/techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz",
             f"{SHARED}/repliqa_samples/repliqa_sample20.jsonl.gz", *EVOUNA]

#: (name, arguments): every command measured
COMMANDS: list[tuple[str, list[str]]] = [
    *((f"agreement {Path(f).name}", ["judge-agreement", f, "--json"]) for f in EVOUNA + ANSWERS),
    *((f"agreement llm,combined {Path(f).name}", ["judge-agreement", f, "--json", "--judges", "llm,combined",
                                                  "--limit", MODEL_ROWS]) for f in ANSWERS),
    *((f"agreement passage judges {Path(f).name}", ["judge-agreement", f, "--json", "--judges",
                                                    "faithfulness,context_relevance", "--limit", MODEL_ROWS])
      for f in PASSAGES),
    *((f"check offline,answer_relevance {Path(f).name}", ["judge-check", f, "--json", "--judges",
                                                          "offline,answer_relevance", "--limit", "100"])
      for f in QUESTIONS),
    *((f"check llm,combined {Path(f).name}", ["judge-check", f, "--json", "--judges", "llm,combined", "--limit",
                                              "4"]) for f in QUESTIONS[:2]),
]
VOLATILE = {"seconds", "elapsed", "elapsed_s", "duration", "duration_s", "model_calls", "cached"}


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def measure(repo: Path) -> dict:
    figures = {}
    for name, args in COMMANDS:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "EVALUATIONS_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(repo)}
            start = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "evaluations", *args], cwd=repo, env=env,
                                  capture_output=True, text=True)
        print(f"{name}: exit {proc.returncode} in {time.monotonic() - start:.0f} s", file=sys.stderr)
        try:
            out = _strip(json.loads(proc.stdout))
        except json.JSONDecodeError:
            out = None
        figures[name] = {"exit": proc.returncode, "json": out,
                         "error": proc.stderr.strip().splitlines()[-3:] if out is None else None}
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the results file; exit 1 on a difference")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout whose code runs (default: this one)")
    args = parser.parse_args()
    figures = measure(args.repo.resolve())
    if not args.check:  # a new baseline keeps the history of checks
        checks = json.loads(RESULTS.read_text()).get("checks", []) if RESULTS.exists() else []
        RESULTS.write_text(json.dumps({"measured": time.strftime("%Y-%m-%d"), "model_rows": int(MODEL_ROWS),
                                       "commands": {n: a for n, a in COMMANDS}, "figures": figures,
                                       "checks": checks}, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {RESULTS}")
        return 0
    document = json.loads(RESULTS.read_text())
    stored = document["figures"]
    differ = sorted(n for n in set(stored) | set(figures) if stored.get(n) != figures.get(n))
    for name in differ:
        print(f"DIFFERS: {name}", file=sys.stderr)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.repo, capture_output=True,
                            text=True).stdout.strip()
    check = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "commands": len(figures), "differ": differ}
    document.setdefault("checks", []).append(check)
    RESULTS.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(check))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
