"""The embedded LLM judge (Qwen2.5-Coder-1.5B-Instruct): speed, and accuracy on held-out EVOUNA splits.

1. seconds per verdict on ``--timing`` sampled answers, with the rubric prefix's KV state reused and with a
   full evaluation of prefix + case, and the largest |P_reuse − P_full| between the two;
2. P(correct) for a seeded sample of ``--per-cell`` answers per (dataset, system) cell of EVOUNA (NQ + TQ,
   5 systems: 10 cells), cached on disk (``judges.embedded.VerdictCache``) so a rerun costs nothing and an
   interrupted run resumes; ``--budget`` seconds stops judging early (the sample is interleaved across cells,
   so a partial pass is still balanced);
3. every judge (keyword, offline, llm, combined) on the held-out splits of ``judges.heldout``, over the
   sampled rows that have a verdict; with ``--write-params`` the shipped thresholds/weights are refitted on
   all of them (``judges/embedded_judge.json``, ``judges/combined_judge.json``).

Results: ``benchmarks/results/judge_embedded.json``. Run with ``EVALUATIONS_LLM_THREADS=1`` on a shared machine.

    python benchmarks/judge_embedded.py [--per-cell 150] [--timing 20] [--budget 3600] [--write-params]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from evaluations.judges import heldout  # noqa: E402
from evaluations.judges.embedded import VerdictCache, load_judge  # noqa: E402

EVOUNA = ROOT.parent / "shared" / "data" / "evouna"
OUT = ROOT / "benchmarks" / "results" / "judge_embedded.json"


def _timing(judge, items) -> dict:
    judge.probability(*items[0])  # warm: prefix state saved
    t0 = time.perf_counter()
    reuse = [judge.probability(*it, reuse=True)[0] for it in items]
    t1 = time.perf_counter()
    full = [judge.probability(*it, reuse=False)[0] for it in items]
    t2 = time.perf_counter()
    return {
        "verdicts": len(items),
        "prefix_tokens": len(judge.prefix),
        "mean_case_tokens": float(np.mean([len(judge.suffix(*it)) for it in items])),
        "seconds_per_verdict_prefix_reused": (t1 - t0) / len(items),
        "seconds_per_verdict_full_prompt": (t2 - t1) / len(items),
        "max_abs_difference_p": float(np.max(np.abs(np.array(reuse) - np.array(full)))),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-cell", type=int, default=150)
    parser.add_argument("--timing", type=int, default=20)
    parser.add_argument("--budget", type=float, default=float("inf"), help="seconds of judging at most")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-params", action="store_true")
    parser.add_argument("--shard", default="0/1", help="i/n: judge only every n-th sampled answer from the i-th "
                        "(several processes fill the cache in parallel); with n > 1 nothing is evaluated")
    parser.add_argument("--no-judging", action="store_true", help="evaluate the cached verdicts only")
    args = parser.parse_args()
    shard, shards = (int(x) for x in args.shard.split("/"))

    examples = heldout.load_evouna(EVOUNA)
    order = heldout.stratified_sample(examples, args.per_cell, seed=args.seed)
    judge = load_judge()
    items = [(examples[i].question, examples[i].references, examples[i].answer) for i in order]
    timing_file = OUT.with_name("judge_embedded_timing.json")
    if args.timing:
        timing = {**_timing(judge, items[: args.timing]), "load_average_1min": __import__("os").getloadavg()[0]}
        timing_file.write_text(json.dumps(timing, indent=2) + "\n")
        print(json.dumps(timing), file=sys.stderr, flush=True)
    timing = json.loads(timing_file.read_text()) if timing_file.is_file() else None

    cache = VerdictCache()
    probs: dict[int, float] = {}
    start = time.perf_counter()
    fresh = 0
    for k, (i, item) in enumerate(zip(order, items)):
        if k % shards != shard:
            continue
        key = VerdictCache.key(judge.id, *item)
        p = cache.get(key)
        if p is None:
            if args.no_judging or time.perf_counter() - start > args.budget:
                p = None
                continue
            p, mass = judge.probability(*item)
            cache.put(key, p, {"yes_no_mass": mass})
            fresh += 1
        if p is not None:
            probs[i] = p
        if p is not None and (k + 1) % 20 == 0:
            print(f"{k + 1}/{len(order)} ({fresh} new, {time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    judged_seconds = time.perf_counter() - start
    if shards > 1:
        print(f"shard {args.shard}: {fresh} new verdicts in {judged_seconds:.0f} s", file=sys.stderr)
        return

    rows = sorted(probs)
    sub = [examples[i] for i in rows]
    s = heldout.signals(sub, np.array([probs[i] for i in rows]))
    results = heldout.evaluate_heldout(s, sub)
    cells: dict[str, int] = {}
    for e in sub:
        key = f"{heldout.dataset_of(e)}/{e.system}"
        cells[key] = cells.get(key, 0) + 1
    payload = {
        "model": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (embedded, llama-cpp-python)",
        "judge_id": judge.id,
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version(),
                    "threads": judge.llm.n_threads if hasattr(judge.llm, "n_threads") else None},
        "timing": timing,
        "sample": {"per_cell": args.per_cell, "seed": args.seed, "judged": len(rows), "new_verdicts": fresh,
                   "seconds_new_verdicts": judged_seconds, "cells": cells,
                   "note": "LLM verdicts for a seeded sample stratified by (dataset, system); every judge is "
                           "fitted and scored on the sampled rows of each split"},
        "heldout": results,
    }
    if args.write_params:
        payload["written"] = heldout.write_params(s, sub)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(payload, indent=2) + "\n")
    summary = {split: {j: r[j]["accuracy"]["value"] for j in heldout.JUDGE_NAMES} for split, r in results.items()}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
