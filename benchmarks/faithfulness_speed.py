"""Seconds per claim check of the ``faithfulness`` judge, as a run pays it: ``judge_faithfulness`` on labelled
answers with an empty verdict store (every claim's window read by the embedded model), model loading excluded.

    python benchmarks/faithfulness_speed.py [--answers 40] [--seed 0]

Answers are a seeded sample of ``datasets/labels/faithfulness.jsonl`` that the judge finds applicable. Writes
``benchmarks/results/faithfulness_speed.json`` (one entry per seed; goal: ≤ 1.5 s per claim check on 2 cores). Timings depend on what
else the machine runs: the file records the core count and the thread setting.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from evaluations.judging.correctness.embedded import VerdictCache  # noqa: E402
from evaluations.judging.labels.faith_labels import load_faithfulness_labels  # noqa: E402
from evaluations.judging.grounded.faithfulness import applicability, judge_faithfulness  # noqa: E402
from evaluations.judging.basics.passages import Passage  # noqa: E402
from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, load_scorer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "faithfulness_speed.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = load_faithfulness_labels(ROOT / "datasets" / "labels" / "faithfulness.jsonl")
    order = np.random.default_rng(args.seed).permutation(len(rows))
    sample = []
    for i in order:
        r = rows[i]
        passages = [Passage(id=f"p{j}", text=t) for j, t in enumerate(r.context)]
        if applicability(r.query, r.generated_answer, passages)[0] is None:
            sample.append((r, passages))
        if len(sample) == args.answers:
            break
    scorer = load_scorer(PASSAGE_SYSTEM)  # loaded before the clock starts
    per_answer = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = VerdictCache(Path(tmp) / "verdicts.sqlite")
        for r, passages in sample:
            start = time.perf_counter()
            verdict = judge_faithfulness(r.query, r.generated_answer, passages, cache=cache, scorer=scorer)
            per_answer.append({"id": r.id, "claims": len(verdict.claims), "model_calls": verdict.model_calls,
                               "seconds": round(time.perf_counter() - start, 3)})
    claims = sum(a["claims"] for a in per_answer)
    calls = sum(a["model_calls"] for a in per_answer)
    seconds = sum(a["seconds"] for a in per_answer)
    result = {
        "answers": len(per_answer), "claims": claims, "model_calls": calls, "seconds": round(seconds, 1),
        "seconds_per_claim_check": round(seconds / claims, 3) if claims else None,
        "goal": "<= 1.5 s per claim check on 2 cores", "goal_met": bool(claims and seconds / claims <= 1.5),
        "cpus": os.cpu_count(), "threads": os.environ.get("EVALUATIONS_LLM_THREADS") or "default (one per core, at most 4)",
        "seed": args.seed, "per_answer": per_answer,
    }
    stored = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    stored.setdefault("runs", {})[str(args.seed)] = result  # one entry per seed
    RESULTS.write_text(json.dumps(stored, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "per_answer"}, indent=2))


if __name__ == "__main__":
    main()
