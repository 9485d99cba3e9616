"""Fit context relevance's set stage (``judges/context_sets.json``) on the design split of ``datasets/multihop``.

    python scripts/fit_context_sets.py [--n 100]

Each of the first N design sets (HotpotQA questions, 10 passages: 2 needed by HotpotQA's supporting-paragraph
labels, 8 hard TF-IDF distractors; ``scripts/build_multihop_sets.py``) is judged passage by passage as a run would
(``judge_context_relevance(..., set_stage=False)``, verdicts through the verdict store), then the set features of
every passage (``set_features``) are fitted against "needed" (``fit_set``). The threshold maximises balanced
accuracy of the judge as the stage is applied (it only turns passages with a set signal from not relevant to
relevant). The passage threshold of a set (``SetStage.passage_threshold``) is chosen with it: for each candidate from
0.30 to the passage model's own threshold, the stage is fitted and scored by question-grouped 5-fold cross-validation,
and the candidate of the highest balanced accuracy is kept (the highest of equals). The held-out splits are never
read here. Writes the parameters with a record of what they were fitted on and their design figures (the
cross-validation beside the fit's own).
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
    from evaluations.judging.grounded.context_relevance import (SET_PARAMS_FILE, SetStage, fit_set,
                                                                judge_context_relevance, params, set_features)

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="design sets to fit on (the first N)")
    args = parser.parse_args()
    source = ROOT / "datasets" / "multihop" / "design.jsonl.gz"
    sets = [json.loads(line) for line in gzip.open(source, "rt", encoding="utf-8")][: args.n]
    cache = VerdictCache()
    judged, ys, groups = [], [], []
    for i, s in enumerate(sets):
        verdict = judge_context_relevance(s["question"], [Passage(id=p["id"], text=p["text"]) for p in s["passages"]],
                                          cache=cache, set_stage=False)
        judged.append((s["question"], [p["text"] for p in s["passages"]], verdict.chunks))
        ys += [p["needed"] for p in s["passages"]]
        groups += [i] * len(s["passages"])
        print(f"\r{i + 1}/{len(sets)} sets", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    y, g = np.array(ys, bool), np.array(groups)

    def at(passage_threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """The set features and the verdicts before the stage with passages relevant from ``passage_threshold``
        on (a sole source stays relevant: ``sole_sources`` reads names, not probabilities)."""
        xs, before = [], []
        for question, texts, chunks in judged:
            now = [c.p >= passage_threshold or c.sole_source for c in chunks]
            xs.append(set_features(question, texts, [c.p for c in chunks], now))
            before += now
        return np.vstack(xs), np.array(before, bool)

    def cross_validated(x: np.ndarray, before_a: np.ndarray) -> np.ndarray:
        cv = np.zeros(len(y), bool)
        for train, test in GroupKFold(5).split(x, y, g):
            stage = fit_set(x[train], y[train])
            stage.threshold = _threshold(stage, x[train], before_a[train], y[train])
            cv[test] = _applied(stage, x[test], before_a[test], stage.threshold)
        return cv

    pairs_threshold = params().threshold
    candidates = [t for t in np.round(np.arange(0.30, pairs_threshold + 1e-9, 0.01), 2)]
    scores = {float(t): _balanced(cross_validated(*at(t)), y) for t in candidates}
    best = max(scores.values())
    chosen = max(t for t, score in scores.items() if np.isclose(score, best))
    x, before_a = at(chosen)
    cv = cross_validated(x, before_a)
    stage = SetStage(**fit_set(x, y).model_dump(), passage_threshold=chosen)
    stage.threshold = _threshold(stage, x, before_a, y)
    fitted = _applied(stage, x, before_a, stage.threshold)
    alone = at(pairs_threshold)[1]
    doc = {
        "params": stage.model_dump(),
        "model": "logistic regression (scikit-learn, L2, C=1, balanced class weights) on standardised features; "
                 "threshold maximising the balanced accuracy of the stage as applied (only passages with a set "
                 "signal above 0, not already relevant, can change); passage_threshold: the passage threshold of a "
                 "set, the candidate 0.30 .. the passage model's threshold of the highest cross-validated balanced "
                 "accuracy",
        "passage_threshold_cv5": {f"{t:.2f}": round(score, 4) for t, score in scores.items()},
        "features": "judging/grounded/context_relevance.py module docstring, 'The set stage'",
        "training_data": {"sets": str(source.relative_to(ROOT)), "split": "design", "first_sets": len(sets),
                          "passages": int(len(y)), "needed": int(y.sum()),
                          "labels": "HotpotQA supporting paragraphs (people), through HaluEval QA"},
        "design_balanced_accuracy": {"passages_alone": round(_balanced(alone, y), 4),
                                     "with_set_stage_cv5": round(_balanced(cv, y), 4),
                                     "with_set_stage_fit": round(_balanced(fitted, y), 4)},
        "fitted_by": "scripts/fit_context_sets.py",
    }
    out = default_output_path(SET_PARAMS_FILE)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc["design_balanced_accuracy"]), "->", out)


if __name__ == "__main__":
    main()
