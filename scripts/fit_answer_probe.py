"""Fit the probe of answer relevance's naming screen (``judges/answer_relevance_probe.json``; issue 44).

    python scripts/fit_answer_probe.py [--splits writers,writers3,...] [--c 0.003] [--keep 0.98] [--out FILE]

Reads the labelled answers of ``datasets/relevance`` (``answers_<split>.jsonl.gz`` with ``labels_<split>.jsonl``,
labelled blind under ``RUBRIC.md``), reads each (question, answer) through the naming prompt on the embedded judge
model (``Naming.readings``: P(yes) and the last hidden state; kept in ``<cache dir>/answer_probe/`` per split and
scorer, so a refit reads no model) and fits a logistic regression (scikit-learn, L2, ``C``, features standardised)
of the label on (hidden state, logit P(yes)), every answer of the splits weighted alike.

The threshold is read without looking at the answers it is applied to: each split is scored by a probe fitted on
the other splits, and the threshold is the (1 − ``keep``) quantile of those scores over the labelled relevant
answers the rules accept (so about ``keep`` of them pass). The file records the splits, C, keep, and per split the
share of labels the rules and the screen agree with when that split was left out.

The default splits are design material: other writers' ``writers``, ``writers3``, ``writers5``, ``writers6``,
``writers8`` and the Qwen-written ``design``, ``heldout2``, ``clapnq`` and ``clapnq2``. Left out, to report on:
``writers9`` (held out), ``writers7`` (held out, read twice), ``writers4`` (read once before), ``writers2``,
``heldout3``, ``heldout5``, ``clapnq3``, ``clapnq4`` (read before, not fitted on).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from relevance_outside import labelled_answers  # noqa: E402  (every labelled answer of a split, in file order)

SPLITS = ("writers", "writers3", "writers5", "writers6", "writers8", "design", "heldout2", "clapnq", "clapnq2")


def readings(split: str, rows: list[dict], naming) -> tuple[np.ndarray, np.ndarray]:
    """(P(yes), hidden states) of the split's rows, from the feature cache or the model."""
    from rich.progress import Progress

    from evaluations.judging.correctness.embedded import default_verdict_cache

    path = default_verdict_cache().parent / "answer_probe" / f"{split}-{naming.scorer.id}.npz"
    ids = np.array([r["id"] for r in rows])
    if path.exists():
        kept = np.load(path)
        if list(kept["ids"]) == list(ids):
            return kept["p"], kept["e"]
    p, e = [], []
    with Progress(transient=True) as bar:
        task = bar.add_task(f"reading {split}", total=len(rows))
        for start in range(0, len(rows), 64):
            chunk = rows[start:start + 64]
            for yes, hidden in naming.readings([(r["question"], r["answer"]) for r in chunk]):
                p.append(yes)
                e.append(hidden.astype(np.float32))
            bar.advance(task, len(chunk))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, p=np.array(p), e=np.array(e), ids=ids)
    return np.array(p), np.array(e)


def fit(x: np.ndarray, y: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=5000)).fit(x, y)


def main() -> None:
    from evaluations.judging.grounded.answer_relevance import answer_relevance_batch
    from evaluations.judging.grounded.naming import PROBE_FILE, Naming, feature_names, features

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", default=",".join(SPLITS))
    parser.add_argument("--c", type=float, default=0.003)
    parser.add_argument("--keep", type=float, default=0.98)
    parser.add_argument("--out", type=Path, default=ROOT / "judges" / PROBE_FILE)
    args = parser.parse_args()
    naming = Naming(reader=True)  # the model's readings only: no probe file is needed to fit one
    scorer = naming.scorer
    data = {}
    for split in args.splits.split(","):
        rows = labelled_answers(split, 10**9)[1]
        p, e = readings(split, rows, naming)
        x = np.array([features(h, q) for h, q in zip(e, p)])
        rules = np.array([r.verdict for r in answer_relevance_batch(
            [(r["question"], r["answer"], "\n\n".join(r["context"]), True) for r in rows])])
        data[split] = (x, np.array([r["label"] for r in rows], dtype=int), rules)
    left_out, gold_scores = {}, []
    for split, (x, y, rules) in data.items():
        others = [s for s in data if s != split]
        model = fit(np.vstack([data[s][0] for s in others]), np.concatenate([data[s][1] for s in others]), args.c)
        scores = model.predict_proba(x)[:, 1]
        gold_scores += list(scores[(y == 1) & rules])
        left_out[split] = {"scores": scores}
    threshold = float(np.quantile(gold_scores, 1 - args.keep))
    for split, (x, y, rules) in data.items():
        said = rules & (left_out[split].pop("scores") >= threshold)
        left_out[split] |= {"answers": int(len(y)), "rules": round(float(np.mean(rules == y)), 4),
                            "screen": round(float(np.mean(said == y)), 4),
                            "relevant_kept": round(float(np.mean(said[y == 1])), 4),
                            "relevant_kept_by_rules": round(float(np.mean(rules[y == 1])), 4)}
    model = fit(np.vstack([d[0] for d in data.values()]), np.concatenate([d[1] for d in data.values()]), args.c)
    scaler, lr = model[0], model[1]
    width = next(iter(data.values()))[0].shape[1] - 1
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    doc = {"about": "the probe of answer relevance's naming screen (judging.grounded.naming); written by "
                    "scripts/fit_answer_probe.py",
           "splits": list(data), "c": args.c, "keep": args.keep, "commit": commit.stdout.strip(),
           "date": dt.date.today().isoformat(), "left_out": left_out,
           "params": {"features": feature_names(width), "mean": [round(float(v), 6) for v in scaler.mean_],
                      "scale": [round(float(v), 6) for v in scaler.scale_],
                      "coef": [round(float(v), 7) for v in lr.coef_[0]], "intercept": round(float(lr.intercept_[0]), 6),
                      "threshold": round(threshold, 6), "scorer": scorer.id}}
    args.out.write_text(json.dumps(doc) + "\n")
    print(f"threshold {threshold:.4f}; left out, rules -> screen:")
    for split, got in left_out.items():
        print(f"  {split}: {got['rules']} -> {got['screen']} (relevant kept {got['relevant_kept_by_rules']} -> "
              f"{got['relevant_kept']})")


if __name__ == "__main__":
    main()
