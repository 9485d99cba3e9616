"""Validate the answer judges on strong and weak systems, refit them, and write ``judges/validation.json``.

1. Rows: a seeded sample of EVOUNA answers stratified by (dataset, system) cell (``--per-cell``; strong
   systems) and every hand-labelled weak-model answer (``datasets/labels/weak_answers.jsonl``, resolved against
   ``../shared/data``; SmolLM2-135M and Qwen2.5-Coder-0.5B). The README main job's own answers
   (``datasets/labels/main_job_answers.jsonl``) are never fitted on: they are a held-out check.
2. The embedded LLM judge's own P(correct) for every row (cached on disk: a re-run costs nothing).
3. Every judge on the held-out splits of ``judging.validation.heldout`` (question-grouped CV per population, leave one
   dataset out, leave one answering system out).
4. ``--write-params``: refit the shipped parameters on all rows (``judges/{offline,embedded,combined}_judge.json``).
5. The shipped judges (as written) on the main job's labelled answers: each judge's accuracy against the
   labels, and the share it calls correct beside the labelled share (goal: within ±0.10).
6. Controls (``judging.validation.controls``, as ``evaluations judge-check``) for every judge that can be primary.
7. ``judges/validation.json`` (the headline's validated accuracy; the default primary judge) and
   ``benchmarks/results/judge_validation.json`` (everything above, with the seconds per verdict).

    python benchmarks/judge_validation.py [--per-cell 40] [--write-params] [--control-questions 60]

Run with ``EVALUATIONS_LLM_THREADS=2`` on an otherwise idle machine for the timing figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from evaluations.judging.validation import heldout  # noqa: E402
from evaluations.judging.correctness.embedded import VerdictCache, judge_many, load_judge  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
LABELS = ROOT / "datasets" / "labels"
OUT = ROOT / "benchmarks" / "results" / "judge_validation.json"
#: judge name in heldout / agreement -> (verdict name in a run, label for people)
JUDGES = {
    "offline": ("offline_correct", "offline judge (lexical + semantic features, logistic regression)"),
    "llm": ("llm_judge", "embedded LLM judge (Qwen2.5-Coder-1.5B yes/no logits)"),
    "combined": ("combined_correct", "combined judge (offline features + the LLM's P(yes))"),
    "keyword": ("keyword_correct", "keyword overlap > 0.7 (classic rule, no screen)"),
}
#: question files the controls are built from (answerable questions only), ``--control-questions`` each
CONTROL_FILES = ("evouna/NQ.jsonl.gz", "evouna/TQ.jsonl.gz", "squad2_dev_cs224n/questions.jsonl.gz",
                 "repliqa_samples/repliqa_sample20.jsonl.gz", "clapnq_dev/clapnq_dev_answerable.jsonl.gz")


def llm_probabilities(examples, cache: VerdictCache) -> np.ndarray:
    """The LLM judge's own P(correct) per row, without the screen (the fits and splits apply it)."""
    judge = load_judge()
    items = [(e.question, e.references, e.answer) for e in examples]
    done = [0]

    def progress(k: int) -> None:
        done[0] += k
        if done[0] % 50 == 0:
            print(f"  LLM verdicts {done[0]}/{len(items)}", file=sys.stderr, flush=True)

    return judge_many(judge, items, cache=cache, progress=progress, screen_answers=False)


def timing(examples, n: int = 20) -> dict:
    """Seconds per embedded verdict with the model loaded (the prefix's KV cache reused; no verdict cache)."""
    judge = load_judge()
    items = [(e.question, e.references, e.answer) for e in examples[:n]]
    judge.probability(*items[0])
    t0 = time.perf_counter()
    for item in items:
        judge.probability(*item)
    return {"verdicts": len(items), "seconds_per_verdict": (time.perf_counter() - t0) / len(items),
            "prefix_tokens": len(judge.prefix), "load_average_1min": os.getloadavg()[0]}


def main_job_check(examples) -> dict:
    """The shipped judges (fresh from disk) on the main job's labelled answers."""
    from evaluations.judging.validation.agreement import run_judges

    labels = np.array([e.label for e in examples])
    results = run_judges(examples, list(JUDGES), resamples=1000)
    out = {"n": len(examples), "labelled_accuracy": float(labels.mean())}
    for r in results:
        out[JUDGES[r.judge][0]] = {"agreement": float(r.values["accuracy"]), "says_correct": r.judge_positive_rate,
                                   "gap": r.judge_positive_rate - float(labels.mean())}
    return out


def controls(per_file: int, seed: int) -> dict:
    """Control rejection / acceptance per judge and category (``judging.validation.controls``)."""
    from evaluations.judging.validation.agreement import JUDGES as BATCH
    from evaluations.judging.validation.controls import build_controls, run_controls
    from evaluations.judging.labels.questions import load_questions

    items = []
    for name in CONTROL_FILES:
        items.extend(load_questions(SHARED / name, limit=per_file))
    built = build_controls(items, seed=seed)
    report = run_controls(built, {name: BATCH[name](0.7) for name in ("offline", "llm", "combined", "keyword")})
    return report.to_dict()


def _accuracy(split: dict, judge: str, what: str) -> dict:
    value = split[judge]["accuracy"]
    return {"accuracy": value["value"], "ci": value["ci95"], "n": split["n"], "what": what}


def validation_file(results: dict, main: dict, control: dict) -> dict:
    judges = {}
    for name, (verdict, label) in JUDGES.items():
        entry: dict = {"label": label}
        if "cv:weak" in results:
            entry["weak"] = _accuracy(results["cv:weak"], name, "hand-labelled answers of SmolLM2-135M and "
                                      "Qwen2.5-Coder-0.5B; question-grouped 5-fold CV")
        if "cv:strong" in results:
            entry["strong"] = _accuracy(results["cv:strong"], name, "EVOUNA (NQ+TQ) answers of FiD, GPT-3.5, "
                                        "ChatGPT, GPT-4, New Bing; question-grouped 5-fold CV")
        if verdict in main:
            entry["main_job"] = {"accuracy": main[verdict]["agreement"], "n": main["n"],
                                 "what": "the README main job's own answers (never fitted on)"}
        rates = control.get("judges", {}).get(name)
        if rates:
            entry["controls_min_rejection"] = rates.get("min_rejection")
            entry["controls_min_acceptance"] = rates.get("min_acceptance")
        judges[verdict] = entry
    return {"judges": judges, "date": dt.date.today().isoformat(),
            "notes": ["written by benchmarks/judge_validation.py; accuracy = agreement with human labels on "
                      "rows the fit did not see"]}


def main() -> None:
    from evaluations.judging.labels.weak_labels import load_weak_labels

    parser = argparse.ArgumentParser()
    parser.add_argument("--per-cell", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-params", action="store_true")
    parser.add_argument("--control-questions", type=int, default=60, help="answerable questions per control file")
    parser.add_argument("--no-controls", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT, help="JSON file to write (default: the stored result).")
    args = parser.parse_args()

    evouna = heldout.load_evouna(SHARED / "evouna")
    strong = [evouna[i] for i in heldout.stratified_sample(evouna, args.per_cell, seed=args.seed)]
    weak = load_weak_labels(LABELS / "weak_answers.jsonl", SHARED)
    main_rows = load_weak_labels(LABELS / "main_job_answers.jsonl", SHARED)
    rows = strong + weak
    print(f"{len(strong)} strong + {len(weak)} weak rows; {len(main_rows)} main-job rows held out", file=sys.stderr)

    cache = VerdictCache()
    speed = timing(weak)
    t0 = time.perf_counter()
    p = llm_probabilities(rows, cache)
    judged_seconds = time.perf_counter() - t0
    s = heldout.signals(rows, p)
    results = heldout.evaluate_heldout(s, rows)
    written = heldout.write_params(s, rows, files=["evouna/NQ.jsonl.gz", "evouna/TQ.jsonl.gz",
                                                   "datasets/labels/weak_answers.jsonl"]) if args.write_params else None
    main = main_job_check(main_rows)
    control = {} if args.no_controls else controls(args.control_questions, args.seed)
    validation = validation_file(results, main, control)
    if args.write_params:
        (ROOT / "judges" / "validation.json").write_text(json.dumps(validation, indent=2) + "\n")
    payload = {
        "rows": {"strong": len(strong), "weak": len(weak), "main_job": len(main_rows),
                 "per_cell": args.per_cell, "seed": args.seed},
        "timing": speed, "seconds_llm_verdicts": judged_seconds, "heldout": results, "main_job": main,
        "controls": control, "written": written, "validation": validation,
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    summary = {split: {j: round(r[j]["accuracy"]["value"], 3) for j in heldout.JUDGE_NAMES}
               for split, r in results.items()}
    print(json.dumps({"heldout": summary, "main_job": main, "timing": speed}, indent=1))


if __name__ == "__main__":
    main()
