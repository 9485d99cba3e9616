"""The answer judges on splits their fit never saw (EVOUNA: NQ + TQ, five answering systems).

Splits (``SPLITS``): each is (name, train rows, test rows), disjoint in questions or systems:

* ``cv``: GroupKFold(5) grouped by question, pooled out-of-fold predictions (the in-data figure);
* ``NQ->TQ`` / ``TQ->NQ``: fit on one dataset, test on the other;
* ``without:<system>``: fit on the answers of the four other systems, test on that system's answers.

Judges (``JUDGE_NAMES``), each fitted on the train rows only:

* ``keyword``: keyword overlap > 0.7 (no fit);
* ``offline``: the offline judge's logistic regression on lexical + semantic features (``offline.FEATURES``);
* ``llm``: the embedded LLM judge, verdict P(correct) ≥ t, t maximising training accuracy (grid 0.01..0.99);
* ``combined``: the offline features plus llm_logit = log(p/(1−p)), logistic regression (C = 1).

The LLM judge has verdicts for a seeded sample stratified by (dataset, system) cell (``stratified_sample``),
so every judge is trained and tested on the sampled rows of each split (same rows for every judge).
Each result: accuracy, precision, recall, F1, Cohen's κ with 95% bootstrap CIs over questions
(``agreement.agreement``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import lexical
from .agreement import agreement
from .data import EVOUNA_SYSTEMS, LabelledAnswer, load_labelled
from .offline import FEATURES, OfflineJudgeModel, feature_matrix, llm_logit

__all__ = ["JUDGE_NAMES", "load_evouna", "stratified_sample", "splits", "evaluate_heldout", "fit_logistic",
           "best_threshold", "COMBINED_FEATURES"]

JUDGE_NAMES = ("keyword", "offline", "llm", "combined")
COMBINED_FEATURES: tuple[str, ...] = (*FEATURES, "llm_logit")


def load_evouna(folder: Path) -> list[LabelledAnswer]:
    """Every labelled answer of ``NQ.jsonl.gz`` then ``TQ.jsonl.gz`` (``source`` starts with the file path)."""
    return load_labelled(folder / "NQ.jsonl.gz") + load_labelled(folder / "TQ.jsonl.gz")


def dataset_of(example: LabelledAnswer) -> str:
    return "NQ" if "NQ.jsonl" in example.source else "TQ"


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
    out.append(Split("NQ->TQ", datasets == "NQ", datasets == "TQ"))
    out.append(Split("TQ->NQ", datasets == "TQ", datasets == "NQ"))
    for system in EVOUNA_SYSTEMS:
        out.append(Split(f"without:{system}", systems != system, systems == system))
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, features: Sequence[str], c: float = 1.0) -> OfflineJudgeModel:
    """Standardise, L2 logistic regression (scikit-learn), verdict p ≥ 0.5: the offline judge's fit."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    return OfflineJudgeModel(tuple(features), mean, scale, model.coef_[0].copy(), float(model.intercept_[0]))


def best_threshold(p: np.ndarray, y: np.ndarray) -> float:
    """argmax_t accuracy(p ≥ t, y) over t ∈ {0.01, …, 0.99}; ties: the t closest to 0.5."""
    grid = np.round(np.arange(0.01, 1.0, 0.01), 2)
    acc = np.array([np.mean((p >= t) == y) for t in grid])
    best = np.flatnonzero(acc == acc.max())
    return float(grid[best[np.argmin(np.abs(grid[best] - 0.5))]])


@dataclass
class Signals:
    """Everything the judges need per row: labels, groups, offline features, P(correct) of the LLM."""

    labels: np.ndarray
    groups: np.ndarray
    features: np.ndarray  # columns: offline.FEATURES
    keyword: np.ndarray
    llm_p: np.ndarray

    def subset(self, mask: np.ndarray) -> Signals:
        return Signals(*(getattr(self, f)[mask] for f in ("labels", "groups", "features", "keyword", "llm_p")))


def signals(examples: Sequence[LabelledAnswer], llm_p: np.ndarray, progress: Callable[[int], None] | None = None,
            ) -> Signals:
    x = feature_matrix([e.references for e in examples], [e.answer for e in examples], progress=progress)
    kw = np.array([lexical.keyword_correct(e.references, e.answer, lexical.KEYWORD_THRESHOLD) for e in examples])
    return Signals(np.array([e.label for e in examples], bool), np.array([e.group for e in examples]), x, kw,
                   np.asarray(llm_p, float))


def _combined_x(s: Signals) -> np.ndarray:
    return np.column_stack([s.features, llm_logit(s.llm_p)])


def predict(train: Signals, test: Signals) -> dict[str, np.ndarray]:
    """Verdicts of every judge on ``test``, each fitted on ``train`` only."""
    y = train.labels.astype(int)
    offline = fit_logistic(train.features, y, FEATURES)
    combined = fit_logistic(_combined_x(train), y, COMBINED_FEATURES)
    return {
        "keyword": test.keyword,
        "offline": offline.probability(test.features) >= 0.5,
        "llm": test.llm_p >= best_threshold(train.llm_p, train.labels),
        "combined": combined.probability(_combined_x(test)) >= 0.5,
    }


def evaluate_heldout(s: Signals, examples: Sequence[LabelledAnswer], *, resamples: int = 1000, seed: int = 0,
                     ) -> dict[str, dict]:
    """{split: {"n", "train_n", judge: Agreement.to_dict()}}; ``cv`` pools the out-of-fold verdicts."""
    results: dict[str, dict] = {}
    pooled: dict[str, list] = {}
    for split in splits(examples):
        verdicts = predict(s.subset(split.train), s.subset(split.test))
        if split.name == "cv":
            pooled.setdefault("idx", []).append(np.flatnonzero(split.test))
            for name in JUDGE_NAMES:
                pooled.setdefault(name, []).append(verdicts[name])
            continue
        test = s.subset(split.test)
        results[split.name] = {
            "n": int(split.test.sum()), "train_n": int(split.train.sum()),
            **{name: agreement(name, test.labels, verdicts[name], test.groups, resamples=resamples, seed=seed)
               .to_dict() for name in JUDGE_NAMES},
        }
    idx = np.concatenate(pooled["idx"])
    cv = {"n": int(len(idx)), "train_n": int(len(idx) * 4 // 5)}
    for name in JUDGE_NAMES:
        verdicts = np.empty(len(s.labels), bool)
        verdicts[idx] = np.concatenate(pooled[name])
        cv[name] = agreement(name, s.labels, verdicts, s.groups, resamples=resamples, seed=seed).to_dict()
    return {"cv": cv, **results}


def write_params(s: Signals, examples: Sequence[LabelledAnswer], folder: Path | None = None) -> dict[str, str]:
    """Refit on every given row and write ``embedded_judge.json`` (the LLM judge's threshold) and
    ``combined_judge.json`` (offline features + llm_logit) into ``folder`` (default: the judges folder)."""
    import datetime as _dt
    import json

    from .offline import default_output_path

    folder = folder or default_output_path().parent
    cells = sorted({f"{dataset_of(e)}/{e.system}" for e in examples})
    data = {"files": ["evouna/NQ.jsonl.gz", "evouna/TQ.jsonl.gz"], "examples": int(len(s.labels)),
            "correct": int(s.labels.sum()), "questions": int(len(set(s.groups.tolist()))),
            "selection": f"seeded sample stratified by (dataset, system) cell: {', '.join(cells)}",
            "fitted": _dt.date.today().isoformat()}
    threshold = best_threshold(s.llm_p, s.labels)
    embedded = {"threshold": threshold, "calibrated": True, "rule": "P(correct) >= threshold, threshold maximising "
                "accuracy on the labelled sample (grid 0.01..0.99)", "training_data": data}
    combined = fit_logistic(_combined_x(s), s.labels.astype(int), COMBINED_FEATURES)
    combined_dict = {**combined.to_dict(), "model": "logistic regression on standardised features, L2, C=1; "
                     "llm_logit = log(p/(1-p)) of the embedded LLM judge", "training_data": data}
    paths = {"embedded": folder / "embedded_judge.json", "combined": folder / "combined_judge.json"}
    paths["embedded"].write_text(json.dumps(embedded, indent=2) + "\n", encoding="utf-8")
    paths["combined"].write_text(json.dumps(combined_dict, indent=2) + "\n", encoding="utf-8")
    return {k: str(v) for k, v in paths.items()}
