"""Fit the offline judge on human-labelled answers; cross-validate grouped by question.

Model: standardise features, then L2 logistic regression (C = 1), verdict p ≥ 0.5, fitted on the rows the
non-answer screen passes (``judging.correctness.nonanswer``; it decides the others), the strong and weak populations
(``heldout.population_of``) weighted equally.
CV: GroupKFold(k) with the question as group, so no question's answers are in both the training
and the test fold; the reported accuracy is the pooled out-of-fold accuracy
Σ_folds #correct / N, beside the classic rules (keyword > 0.7, exact match, containment)
on the same rows. The final parameters are fitted on all rows.
Both labels must be among the rows the screen passes, overall and in every fold's training part: else one
EvaluationsError saying how many rows are left and of which class (scikit-learn would refuse the fit).
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluations.core.errors import EvaluationsError
from evaluations.judging.correctness import lexical
from evaluations.judging.labels.data import LabelledAnswer
from evaluations.judging.validation.heldout import fit_logistic, population_of, population_weights
from evaluations.judging.correctness.nonanswer import screen
from evaluations.judging.correctness.offline import FEATURES, OfflineJudgeModel, feature_matrix

__all__ = ["calibrate", "baseline_accuracies"]


def baseline_accuracies(examples: Sequence[LabelledAnswer], keyword_threshold: float = 0.7) -> dict[str, float]:
    """Accuracy of the classic rules against the human labels on ``examples``."""
    y = np.array([e.label for e in examples])
    rules = {
        f"keyword>{keyword_threshold:g}": lambda e: lexical.keyword_correct(e.references, e.answer, keyword_threshold),
        "exact_match": lambda e: lexical.exact_match(e.references, e.answer),
        "containment": lambda e: lexical.containment(e.references, e.answer),
    }
    return {name: float(np.mean(np.array([rule(e) for e in examples]) == y)) for name, rule in rules.items()}


def _kind_of(label: int) -> str:
    return "correct" if label else "incorrect"


def _check_fit_rows(y: np.ndarray, passed: np.ndarray, kinds: Sequence[str | None], where: str) -> None:
    """Both labels among the rows the non-answer screen passes, the only rows the regression is fitted on.

    The labels are checked before the screen; a file whose wrong answers are all refusals (or empty answers,
    echoes …) still leaves one class to fit on, which scikit-learn refuses with a traceback, so this says how
    many rows are left, of which class, and what the screen took away."""
    left = y[passed]
    if len(set(left.tolist())) == 2:
        return
    decided = Counter(k or "screened" for k, p in zip(kinds, passed.tolist()) if not p)
    took = ", ".join(f"{n} as {kind}" for kind, n in decided.most_common())
    if len(left):
        missing = 1 - int(left[0])
        what = (f"after the non-answer screen, {len(left)} labelled answer(s) are left to fit on, all "
                f"{_kind_of(left[0])} (the screen decided the other {int((~passed).sum())}: {took})")
    else:
        missing = None
        what = f"after the non-answer screen, no labelled answer is left to fit on (it decided all {len(y)}: {took})"
    wanted = ("labelled answers of both kinds (label true and false)" if missing is None else
              f"labelled {'right' if missing else 'wrong'} answers (label {'true' if missing else 'false'})")
    raise EvaluationsError(what, where=where,
                           fix=f"add {wanted} that are not refusals, empty answers or echoes of the question (the "
                               "screen decides those; the fit never sees them), or more labelled rows")


def _check_folds(cv_folds: Sequence[tuple[np.ndarray, np.ndarray]], y: np.ndarray, passed: np.ndarray,
                 groups: np.ndarray, n_groups: int, where: str) -> None:
    """Both labels among the screened-in rows of every fold's training part (the other folds' questions): a
    question-grouped fold can leave one class even when all the rows have both, and a fold's fit needs two."""
    for k, (train, _) in enumerate(cv_folds, start=1):
        train = train[passed[train]]
        left = y[train]
        if len(set(left.tolist())) == 2:
            continue
        questions = sorted(set(groups[train].tolist()))
        named = ", ".join(questions[:5]) + (f", … ({len(questions)} questions)" if len(questions) > 5 else "")
        content = f"all {_kind_of(left[0])} (questions {named})" if len(left) else "none"
        more = f", or pass a larger --folds (at most {n_groups})" if len(cv_folds) < n_groups else ""
        raise EvaluationsError(
            f"question-grouped {len(cv_folds)}-fold CV: the training part of fold {k} has {len(left)} labelled "
            f"answer(s) the non-answer screen passes, {content}; a fit needs correct and incorrect ones",
            where=where, fix=f"add labelled answers of both kinds (label true and false) to more questions{more}")


def calibrate(
    examples: Sequence[LabelledAnswer],
    *,
    folds: int = 5,
    c: float = 1.0,
    features: Sequence[str] = FEATURES,
    sources: Sequence[str] = (),
    cache_path: Path | None | bool = True,
    progress: Callable[[int], None] | None = None,
) -> OfflineJudgeModel:
    """Cross-validate (GroupKFold by question), then fit on everything; the CV report goes into ``info``."""
    from sklearn import __version__ as sklearn_version
    from sklearn.model_selection import GroupKFold

    y = np.array([e.label for e in examples], dtype=int)
    groups = np.array([e.group for e in examples])
    if len(set(y.tolist())) < 2:
        raise EvaluationsError(
            "calibration needs both correct and incorrect labelled answers"
            + (f" (all {len(y)} are {'correct' if y[0] else 'incorrect'})" if len(y) else ""),
            where=", ".join(sources), fix="add labelled answers of the other kind (label true/false)")
    n_groups = len(set(groups.tolist()))
    if n_groups < folds:
        raise EvaluationsError(f"only {n_groups} questions for {folds}-fold CV", where=", ".join(sources),
                               fix=f"add labelled answers of more questions, or pass --folds {max(n_groups, 2)} or "
                                   "fewer" if n_groups >= 2 else "add labelled answers of more questions")
    screens = [screen(e.question, e.references, e.answer, answerable=e.answerable) for e in examples]
    screened = np.array([np.nan if s.decided is None else float(s.decided) for s in screens])
    passed = np.isnan(screened)
    where = ", ".join(sources)
    _check_fit_rows(y, passed, [s.kind for s in screens], where)
    cv_folds = list(GroupKFold(n_splits=folds).split(groups, y, groups))
    _check_folds(cv_folds, y, passed, groups, n_groups, where)
    x = feature_matrix(
        [e.references for e in examples], [e.answer for e in examples], names=features, cache_path=cache_path,
        progress=progress, questions=[e.question for e in examples],
    )
    w = population_weights(np.array([population_of(e) for e in examples]))
    fold_acc, correct = [], 0
    for train, test in cv_folds:
        train = train[passed[train]]
        model = fit_logistic(x[train], y[train], features, c, w[train])
        verdicts = np.where(passed[test], model.probability(x[test]) >= 0.5, screened[test] == 1.0)
        hits = verdicts == y[test].astype(bool)
        fold_acc.append(float(hits.mean()))
        correct += int(hits.sum())
    final = fit_logistic(x[passed], y[passed], features, c, w[passed])
    info: dict[str, Any] = {
        "model": "logistic regression on standardised features, L2, C=%g; verdict p >= threshold" % c,
        "training_data": {
            "files": list(sources),
            "examples": int(len(y)),
            "correct": int(y.sum()),
            "incorrect": int(len(y) - y.sum()),
            "questions": n_groups,
            "selection": "one example per (question, system) answer with a human label; EVOUNA: improper == false",
            "fitted_on": f"{int(passed.sum())} rows the non-answer screen passes (it decides the other "
                         f"{int((~passed).sum())}); strong/weak populations weighted equally",
        },
        "cross_validation": {
            "method": f"GroupKFold(n_splits={folds}) grouped by question; pooled out-of-fold accuracy of the "
                      "screen + model",
            "accuracy": correct / len(y),
            "fold_accuracies": fold_acc,
            "baselines_same_rows": baseline_accuracies(examples),
            "majority_class": float(max(y.mean(), 1 - y.mean())),
        },
        "fitted": {"date": _dt.date.today().isoformat(), "scikit_learn": sklearn_version},
    }
    return OfflineJudgeModel(tuple(features), final.mean, final.scale, final.coef, final.intercept, 0.5, info)
