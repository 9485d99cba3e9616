"""The answer judges on splits their fit never saw: strong systems (EVOUNA) and weak ones (small models).

Rows are labelled answers (``data.LabelledAnswer``) of two populations (``population_of``):

* ``strong``: EVOUNA (NQ + TQ; FiD, GPT-3.5, ChatGPT, GPT-4, New Bing), human labels of the dataset's authors;
* ``weak``: answers written by small embedded models (SmolLM2-135M, Qwen2.5-Coder-0.5B) to questions of the
  shared data sets, hand-labelled under ``datasets/labels/RUBRIC.md`` (``judging.labels.weak_labels``).

Splits (``splits``), each (name, train rows, test rows), disjoint in questions, datasets or systems:

* ``cv``: GroupKFold(5) grouped by question, pooled out-of-fold predictions (reported per population);
* ``without-dataset:<d>``: fit on every other dataset, test on ``d`` (NQ, TQ, repliqa, squad2, …);
* ``without-system:<s>``: fit on the answers of every other answering system, test on ``s``'s answers.

Judges (``JUDGE_NAMES``), each fitted on the train rows only, each behind the non-answer screen
(``judging.correctness.nonanswer``: a decided row keeps the screen's verdict, the fits see only the rows it passes):

* ``keyword``: keyword overlap > 0.7 (no fit, no screen: the classic rule, for reference);
* ``offline``: the offline judge's logistic regression on lexical + semantic features (``offline.FEATURES``);
* ``llm``: the embedded LLM judge, verdict P(correct) ≥ t, t maximising training accuracy (grid 0.01..0.99);
* ``combined``: the offline features plus llm_logit = log(p/(1−p)), logistic regression (C = 1).

Fits weight the two populations equally (each row of population P weighs N / (2 · N_P)), so a few hundred
weak answers are not drowned by EVOUNA's strong ones. Each result: accuracy, precision, recall, F1, Cohen's κ
with 95% bootstrap CIs over questions (``agreement.agreement``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluations.judging.correctness import lexical
from evaluations.judging.validation.agreement import agreement
from evaluations.judging.labels.data import EVOUNA_SYSTEMS, LabelledAnswer, load_labelled
from evaluations.judging.basics.fitted import best_threshold
from evaluations.judging.correctness.nonanswer import screen
from evaluations.judging.correctness.offline import FEATURES, OfflineJudgeModel, feature_matrix
from evaluations.judging.basics.fitted import llm_logit

__all__ = ["JUDGE_NAMES", "load_evouna", "stratified_sample", "splits", "evaluate_heldout", "fit_logistic",
           "COMBINED_FEATURES", "population_of", "dataset_of", "signals", "predict"]

JUDGE_NAMES = ("keyword", "offline", "llm", "combined")
COMBINED_FEATURES: tuple[str, ...] = (*FEATURES, "llm_logit")
POPULATIONS = ("strong", "weak")


def load_evouna(folder: Path) -> list[LabelledAnswer]:
    """Every labelled answer of ``NQ.jsonl.gz`` then ``TQ.jsonl.gz`` (``source`` starts with the file path)."""
    return load_labelled(folder / "NQ.jsonl.gz") + load_labelled(folder / "TQ.jsonl.gz")


def dataset_of(example: LabelledAnswer) -> str:
    """NQ / TQ for EVOUNA rows; else the dataset named by the group (``dataset:key``)."""
    if "NQ.jsonl" in example.source and example.system in EVOUNA_SYSTEMS:
        return "NQ"
    if "TQ.jsonl" in example.source and example.system in EVOUNA_SYSTEMS:
        return "TQ"
    return example.group.split(":", 1)[0] if ":" in example.group else "other"


def population_of(example: LabelledAnswer) -> str:
    return "strong" if example.system in EVOUNA_SYSTEMS else "weak"


def stratified_sample(examples: Sequence[LabelledAnswer], per_cell: int, seed: int = 0) -> list[int]:
    """Indices of ``per_cell`` random answers of each (dataset, system) cell, seeded, interleaved round-robin
    across cells (so a partial pass over the list covers every cell evenly)."""
    rng = np.random.default_rng(seed)
    cells: dict[tuple[str, str], list[int]] = {}
    for i, e in enumerate(examples):
        cells.setdefault((dataset_of(e), e.system), []).append(i)
    picks = []
    for key in sorted(cells):
        rows = np.array(cells[key])
        picks.append(rows[rng.permutation(len(rows))[:per_cell]].tolist())
    order = []
    for k in range(max(len(p) for p in picks)):
        order.extend(p[k] for p in picks if k < len(p))
    return order


@dataclass
class Split:
    name: str
    train: np.ndarray  # boolean masks over the rows
    test: np.ndarray


def splits(examples: Sequence[LabelledAnswer], folds: int = 5) -> list[Split]:
    """The held-out splits of the module docstring (``cv`` is one Split per fold, all named ``cv``)."""
    from sklearn.model_selection import GroupKFold

    datasets = np.array([dataset_of(e) for e in examples])
    systems = np.array([e.system for e in examples])
    groups = np.array([e.group for e in examples])
    out = []
    for train, test in GroupKFold(n_splits=folds).split(groups, groups=groups):
        tr = np.zeros(len(examples), bool)
        tr[train] = True
        out.append(Split("cv", tr, ~tr))
    for dataset in sorted(set(datasets.tolist())):
        test = datasets == dataset
        if test.all():
            continue
        # a question answered in two datasets' files never sits on both sides
        train = ~np.isin(groups, groups[test])
        out.append(Split(f"without-dataset:{dataset}", train, test))
    for system in sorted(set(systems.tolist())):
        if (systems == system).all():
            continue
        out.append(Split(f"without-system:{system}", systems != system, systems == system))
    return out


def population_weights(populations: np.ndarray) -> np.ndarray:
    """w_i = N / (k · N_{P(i)}) for k populations present: every population weighs the same in a fit."""
    values, counts = np.unique(populations, return_counts=True)
    size = dict(zip(values.tolist(), counts.tolist()))
    return np.array([len(populations) / (len(size) * size[p]) for p in populations.tolist()])


def fit_logistic(x: np.ndarray, y: np.ndarray, features: Sequence[str], c: float = 1.0,
                 weights: np.ndarray | None = None) -> OfflineJudgeModel:
    """Standardise, L2 logistic regression (scikit-learn), verdict p ≥ 0.5: the offline judge's fit."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y, sample_weight=weights)
    return OfflineJudgeModel(tuple(features), mean, scale, model.coef_[0].copy(), float(model.intercept_[0]))


@dataclass
class Signals:
    """Everything the judges need per row: labels, groups, populations, the screen's verdict (NaN: passed),
    offline features, the keyword rule and P(correct) of the LLM (the model's own, before the screen)."""

    labels: np.ndarray
    groups: np.ndarray
    populations: np.ndarray
    screened: np.ndarray
    features: np.ndarray  # columns: offline.FEATURES
    keyword: np.ndarray
    llm_p: np.ndarray

    FIELDS = ("labels", "groups", "populations", "screened", "features", "keyword", "llm_p")

    def subset(self, mask: np.ndarray) -> Signals:
        return Signals(*(getattr(self, f)[mask] for f in self.FIELDS))


def signals(examples: Sequence[LabelledAnswer], llm_p: np.ndarray, progress: Callable[[int], None] | None = None,
            ) -> Signals:
    """The rows' signals; ``llm_p`` is the LLM's P(correct) per row (any value where the screen decides)."""
    screened = np.array([
        np.nan if (d := screen(e.question, e.references, e.answer, answerable=e.answerable).decided) is None
        else float(d) for e in examples])
    x = feature_matrix([e.references for e in examples], [e.answer for e in examples], progress=progress,
                       questions=[e.question for e in examples])
    kw = np.array([lexical.keyword_correct(e.references, e.answer, lexical.KEYWORD_THRESHOLD) for e in examples])
    return Signals(np.array([e.label for e in examples], bool), np.array([e.group for e in examples]),
                   np.array([population_of(e) for e in examples]), screened, x, kw, np.asarray(llm_p, float))


def _combined_x(s: Signals) -> np.ndarray:
    return np.column_stack([s.features, llm_logit(s.llm_p)])


@dataclass
class Fitted:
    """The judges fitted on one training set (on the rows the screen passes, populations weighted equally)."""

    offline: OfflineJudgeModel
    combined: OfflineJudgeModel
    threshold: float


def fit(train: Signals) -> Fitted:
    rows = np.isnan(train.screened)
    t = train.subset(rows)
    y, w = t.labels.astype(int), population_weights(t.populations)
    return Fitted(fit_logistic(t.features, y, FEATURES, weights=w),
                  fit_logistic(_combined_x(t), y, COMBINED_FEATURES, weights=w),
                  best_threshold(t.llm_p, t.labels, w))


def predict(fitted: Fitted, test: Signals) -> dict[str, np.ndarray]:
    """Verdicts of every judge on ``test``: the screen's where it decided, else the fitted judge's."""
    decided = ~np.isnan(test.screened)
    screen_verdict = test.screened == 1.0

    def gate(verdicts: np.ndarray) -> np.ndarray:
        return np.where(decided, screen_verdict, verdicts)

    return {
        "keyword": test.keyword,
        "offline": gate(fitted.offline.probability(test.features) >= 0.5),
        "llm": gate(test.llm_p >= fitted.threshold),
        "combined": gate(fitted.combined.probability(_combined_x(test)) >= 0.5),
    }


def evaluate_heldout(s: Signals, examples: Sequence[LabelledAnswer], *, resamples: int = 1000, seed: int = 0,
                     ) -> dict[str, dict]:
    """{split: {"n", "train_n", judge: Agreement.to_dict()}}; ``cv`` pools the out-of-fold verdicts, reported
    over all rows (``cv``) and per population (``cv:strong``, ``cv:weak``)."""
    results: dict[str, dict] = {}
    pooled: dict[str, list] = {}
    for split in splits(examples):
        verdicts = predict(fit(s.subset(split.train)), s.subset(split.test))
        if split.name == "cv":
            pooled.setdefault("idx", []).append(np.flatnonzero(split.test))
            for name in JUDGE_NAMES:
                pooled.setdefault(name, []).append(verdicts[name])
            continue
        test = s.subset(split.test)
        results[split.name] = _scores(test, verdicts, int(split.train.sum()), resamples, seed)
    idx = np.concatenate(pooled["idx"])
    out_of_fold = {}
    for name in JUDGE_NAMES:
        verdicts = np.empty(len(s.labels), bool)
        verdicts[idx] = np.concatenate(pooled[name])
        out_of_fold[name] = verdicts
    cv = {"cv": _scores(s, out_of_fold, len(idx) * 4 // 5, resamples, seed)}
    for population in POPULATIONS:
        mask = s.populations == population
        if mask.any():
            cv[f"cv:{population}"] = _scores(s.subset(mask), {k: v[mask] for k, v in out_of_fold.items()},
                                             len(idx) * 4 // 5, resamples, seed)
    return {**cv, **results}


def _scores(test: Signals, verdicts: dict[str, np.ndarray], train_n: int, resamples: int, seed: int) -> dict:
    return {
        "n": int(len(test.labels)), "train_n": int(train_n), "correct_share": float(test.labels.mean()),
        **{name: agreement(name, test.labels, verdicts[name], test.groups, resamples=resamples, seed=seed).to_dict()
           for name in JUDGE_NAMES},
    }


def write_params(s: Signals, examples: Sequence[LabelledAnswer], folder: Path | None = None,
                 files: Sequence[str] = ()) -> dict[str, str]:
    """Refit on every given row and write ``embedded_judge.json`` (the LLM judge's threshold) and
    ``combined_judge.json`` (offline features + llm_logit) into ``folder`` (default: the judges folder).
    ``offline_judge.json`` needs no LLM verdicts: ``evaluations calibrate-judge`` fits it on every labelled row."""
    import datetime as _dt
    import json

    from evaluations.judging.basics.fitted import default_output_path

    folder = folder or default_output_path().parent
    cells = sorted({f"{dataset_of(e)}/{e.system}" for e in examples})
    passed = np.isnan(s.screened)
    data = {"files": list(files), "examples": int(len(s.labels)), "correct": int(s.labels.sum()),
            "questions": int(len(set(s.groups.tolist()))),
            "populations": {p: int((s.populations == p).sum()) for p in POPULATIONS},
            "fitted_on": f"{int(passed.sum())} rows the non-answer screen passes (it decides the other "
                         f"{int((~passed).sum())}); populations weighted equally",
            "cells": cells, "fitted": _dt.date.today().isoformat()}
    fitted = fit(s)
    embedded = {"threshold": fitted.threshold, "calibrated": True, "rule": "P(correct) >= threshold, threshold "
                "maximising population-weighted accuracy on the labelled rows the screen passes (grid 0.01..0.99)",
                "training_data": data}
    combined = {**fitted.combined.to_dict(), "model": "logistic regression on standardised features, L2, C=1, "
                "populations weighted equally; llm_logit = log(p/(1-p)) of the embedded LLM judge",
                "training_data": data}
    paths = {"embedded": folder / "embedded_judge.json", "combined": folder / "combined_judge.json"}
    for key, payload in (("embedded", embedded), ("combined", combined)):
        paths[key].write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}
