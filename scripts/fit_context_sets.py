"""Fit context relevance's set stage (``judges/context_sets.json``) on the design split of ``datasets/multihop``.

    python scripts/fit_context_sets.py [--n 100]

Each of the first N design sets (HotpotQA questions, 10 passages: 2 needed by HotpotQA's supporting-paragraph
labels, 8 hard TF-IDF distractors; ``scripts/build_multihop_sets.py``) is judged passage by passage as a run would
(``judge_context_relevance(..., set_stage=False)``, verdicts through the verdict store), then the set features of
every passage (``set_features``) are fitted against "needed" (``fit_set``). The threshold maximises balanced
accuracy of the judge as the stage is applied (it only turns passages with a set signal from not relevant to
relevant). The held-out split is never read here. Writes the parameters with a record of what they were fitted on
and their design figures (question-grouped 5-fold cross-validation beside the fit's own).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _balanced(pred: np.ndarray, y: np.ndarray) -> float:
    return float(((pred & y).sum() / y.sum() + (~pred & ~y).sum() / (~y).sum()) / 2)


def _applied(stage, x: np.ndarray, before: np.ndarray, threshold: float) -> np.ndarray:
    from evaluations.judging.grounded.context_relevance import set_signal

    return before | (set_signal(x) & (stage.probability(x) >= threshold))


def _threshold(stage, x: np.ndarray, before: np.ndarray, y: np.ndarray) -> float:
    grid = np.round(np.arange(0.05, 0.96, 0.01), 2)
    scores = np.array([_balanced(_applied(stage, x, before, t), y) for t in grid])
    best = np.flatnonzero(np.isclose(scores, scores.max()))
    return float(grid[best[np.argmin(np.abs(grid[best] - 0.5))]])


def main() -> None:
    from sklearn.model_selection import GroupKFold

    from evaluations.judging.basics.fitted import default_output_path
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.context_relevance import (SET_PARAMS_FILE, fit_set, judge_context_relevance,
                                                                set_features)

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100, help="design sets to fit on (the first N)")
    args = parser.parse_args()
    source = ROOT / "datasets" / "multihop" / "design.jsonl.gz"
    sets = [json.loads(line) for line in gzip.open(source, "rt", encoding="utf-8")][: args.n]
    cache = VerdictCache()
    xs, ys, before, groups = [], [], [], []
    for i, s in enumerate(sets):
        texts = [p["text"] for p in s["passages"]]
        verdict = judge_context_relevance(s["question"], [Passage(id=p["id"], text=p["text"]) for p in s["passages"]],
                                          cache=cache, set_stage=False)
        xs.append(set_features(s["question"], texts, [c.p for c in verdict.chunks],
                               [c.relevant for c in verdict.chunks]))
        ys += [p["needed"] for p in s["passages"]]
        before += [c.relevant for c in verdict.chunks]
        groups += [i] * len(texts)
        print(f"\r{i + 1}/{len(sets)} sets", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    x, y, before_a, g = np.vstack(xs), np.array(ys, bool), np.array(before, bool), np.array(groups)
    cv = np.zeros(len(y), bool)
    for train, test in GroupKFold(5).split(x, y, g):
        stage = fit_set(x[train], y[train])
        stage.threshold = _threshold(stage, x[train], before_a[train], y[train])
        cv[test] = _applied(stage, x[test], before_a[test], stage.threshold)
    stage = fit_set(x, y)
    stage.threshold = _threshold(stage, x, before_a, y)
    fitted = _applied(stage, x, before_a, stage.threshold)
    doc = {
        "params": stage.model_dump(),
        "model": "logistic regression (scikit-learn, L2, C=1, balanced class weights) on standardised features; "
                 "threshold maximising the balanced accuracy of the stage as applied (only passages with a set "
                 "signal above 0, not already relevant, can change)",
        "features": "judging/grounded/context_relevance.py module docstring, 'The set stage'",
        "training_data": {"sets": str(source.relative_to(ROOT)), "split": "design", "first_sets": len(sets),
                          "passages": int(len(y)), "needed": int(y.sum()),
                          "labels": "HotpotQA supporting paragraphs (people), through HaluEval QA"},
        "design_balanced_accuracy": {"passages_alone": round(_balanced(before_a, y), 4),
                                     "with_set_stage_cv5": round(_balanced(cv, y), 4),
                                     "with_set_stage_fit": round(_balanced(fitted, y), 4)},
        "fitted_by": "scripts/fit_context_sets.py",
    }
    out = default_output_path(SET_PARAMS_FILE)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc["design_balanced_accuracy"]), "->", out)


if __name__ == "__main__":
    main()
