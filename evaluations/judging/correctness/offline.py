"""The offline calibrated judge: logistic regression over lexical and semantic signals.

p(correct | refs, answer) = σ(b + Σ_j w_j · (x_j − μ_j) / s_j),  verdict = p ≥ threshold,

after the non-answer screen (``judging.correctness.nonanswer.screen``): an answer it classifies as a non-answer gets p = 0
(a refusal to an unanswerable question p = 1) and never reaches the model,

with x the features below, (μ, s) the standardisation and (w, b, threshold) read from a JSON
file (default: ``$EVALUATIONS_JUDGES_DIR/offline_judge.json``, else the shipped package data,
``judges/offline_judge.json`` in the repository). Nothing is fitted here; only
``evaluations calibrate-judge`` (``judging.validation.calibrate``) writes that file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluations.core.errors import EvaluationsError
from evaluations.judging.correctness import lexical
from evaluations.judging.basics.fitted import default_params_path
from evaluations.judging.correctness.semantic import semantic_similarity_batch
from evaluations.judging.correctness.nonanswer import informative_recall, novelty, screen
from evaluations.judging.basics.text import normalize, tokens

__all__ = [
    "FEATURES", "EXTERNAL_FEATURES", "OfflineJudgeModel", "feature_row", "feature_matrix",
]

# "I'm sorry", "as an AI", "I don't know", "no information", "couldn't find": the answer declines.
_HEDGE = re.compile(
    r"\b(sorry|as an ai|language model|i do not know|i dont know|not sure|no information|unable to|"
    r"cannot (?:provide|determine|answer|find)|couldnt find|could not find|not possible to|no (?:official|specific|"
    r"definitive) (?:answer|information)|unclear|not (?:been )?(?:announced|specified|available))\b"
)

FeatureFn = Callable[[str, Sequence[str], str, float], float]  # (question, gold alternatives, answer, similarity)


def _hedge(q: str, refs: Sequence[str], answer: str, sim: float) -> float:
    return float(bool(_HEDGE.search(normalize(answer))))


def _log_len(text_tokens: int) -> float:
    return math.log1p(text_tokens)


#: feature name -> f(question, gold alternatives, answer, semantic similarity). Order is the model's order.
#: ``informative_recall`` and ``novelty`` are the non-answer screen's signals (``judging.correctness.nonanswer``): recall of
#: the gold's keywords that are not the question's, and the share of the answer's keywords the question lacks.
_FEATURE_FNS: dict[str, FeatureFn] = {
    "containment": lambda q, r, a, s: float(lexical.containment(r, a)),
    "exact_match": lambda q, r, a, s: float(lexical.exact_match(r, a)),
    "token_f1": lambda q, r, a, s: lexical.token_f1(r, a),
    "token_recall": lambda q, r, a, s: lexical.token_recall(r, a),
    "keyword_overlap": lambda q, r, a, s: lexical.keyword_overlap(r, a),
    "semantic_similarity": lambda q, r, a, s: s,
    "log_answer_tokens": lambda q, r, a, s: _log_len(len(tokens(a))),
    "log_gold_tokens": lambda q, r, a, s: _log_len(min((len(tokens(x)) for x in r), default=0)),
    "hedge": _hedge,
    "informative_recall": lambda q, r, a, s: informative_recall(q, r, a),
    "novelty": lambda q, r, a, s: novelty(q, a),
}
FEATURES: tuple[str, ...] = tuple(_FEATURE_FNS)
#: features computed elsewhere and passed in ``extras``: the embedded LLM judge's log-odds
#: llm_logit = log(p / (1 − p)), p = P(correct) clipped to [1e-4, 1 − 1e-4] (``judging.correctness.embedded``)
EXTERNAL_FEATURES: tuple[str, ...] = ("llm_logit",)


def feature_row(
    refs: Sequence[str], answer: str, semantic: float, names: Sequence[str] = FEATURES,
    extras: dict[str, float] | None = None, question: str = "",
) -> list[float]:
    """The named features of one (gold alternatives, answer) pair, given its semantic similarity (and extras)."""
    extras = extras or {}
    return [extras[name] if name in EXTERNAL_FEATURES else _FEATURE_FNS[name](question, refs, answer, semantic)
            for name in names]


def feature_matrix(
    refs_list: Sequence[Sequence[str]],
    answers: Sequence[str],
    *,
    names: Sequence[str] = FEATURES,
    cache_path: Path | None | bool = True,
    progress: Callable[[int], None] | None = None,
    extras: dict[str, Sequence[float]] | None = None,
    questions: Sequence[str] | None = None,
) -> np.ndarray:
    """Features of many pairs, shape (n, len(names)); semantic similarity computed in one batch.

    ``extras``: values of ``EXTERNAL_FEATURES`` per pair (required when ``names`` uses them); ``questions``: the
    question of each pair (the question-aware features see "" without them).
    """
    missing = [n for n in names if n in EXTERNAL_FEATURES and n not in (extras or {})]
    if missing:
        raise EvaluationsError(f"features {missing} need values computed by another judge", where="offline judge")
    if "semantic_similarity" in names:
        sims = semantic_similarity_batch(refs_list, answers, cache_path=cache_path, progress=progress)
    else:
        sims = np.zeros(len(answers))
    columns = {k: list(v) for k, v in (extras or {}).items()}
    qs = list(questions) if questions is not None else [""] * len(answers)
    rows = [
        feature_row(list(r), a, float(s), names, {k: float(v[i]) for k, v in columns.items()}, qs[i])
        for i, (r, a, s) in enumerate(zip(refs_list, answers, sims))
    ]
    return np.asarray(rows, dtype=np.float64).reshape(len(answers), len(names))


@dataclass(frozen=True)
class OfflineJudgeModel:
    """Fitted parameters of the offline judge (see the module docstring for the formula)."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    threshold: float = 0.5
    info: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "offline judge params",
                  fix: str = "re-run calibrate-judge") -> OfflineJudgeModel:
        """The model in ``data`` (a parameters file's object), checked as ``judging.basics.fitted.check_model`` checks a
        fitted judge: anything else is one EvaluationsError naming ``where`` and ``fix``."""
        from evaluations.judging.basics.fitted import check_model

        if not isinstance(data, dict):
            raise EvaluationsError(f"offline judge parameters must be a JSON object, got a {type(data).__name__}",
                                   where=where, fix=fix)
        missing = [k for k in ("features", "mean", "scale", "coef", "intercept") if k not in data]
        if missing:
            raise EvaluationsError(f"missing key {missing[0]!r}", where=where, fix=fix)
        try:
            if not isinstance(data["features"], list) or not all(isinstance(f, str) for f in data["features"]):
                raise ValueError("'features' is not a list of feature names")
            features = tuple(data["features"])
            arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "coef")]
            if any(a.ndim != 1 for a in arrays):
                raise ValueError("'mean', 'scale' and 'coef' must be lists of numbers")
            if any(isinstance(data[k], bool) for k in ("intercept", "threshold") if k in data):
                raise ValueError("'intercept' and 'threshold' must be numbers")
            intercept, threshold = float(data["intercept"]), float(data.get("threshold", 0.5))
        except (TypeError, ValueError) as exc:
            raise EvaluationsError(f"invalid offline judge parameters: {exc}", where=where, fix=fix) from None
        info = {k: v for k, v in data.items() if k not in {"features", "mean", "scale", "coef", "intercept"}}
        model = cls(features, *arrays, intercept, threshold, info)
        unknown = [f for f in features if f not in _FEATURE_FNS and f not in EXTERNAL_FEATURES]
        if unknown:
            raise EvaluationsError(f"unknown features {unknown}", where=where, fix=f"known: {list(FEATURES)}; {fix}")
        problem = check_model(model, [*FEATURES, *EXTERNAL_FEATURES])
        if problem:
            raise EvaluationsError(f"invalid offline judge parameters: {problem}", where=where, fix=fix)
        return model

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept,
            "threshold": self.threshold,
            **{k: v for k, v in self.info.items() if k != "threshold"},
        }

    @classmethod
    def load(cls, path: str | Path | None = None) -> OfflineJudgeModel:
        """The parameters in ``path`` (default ``default_params_path()``); a file that cannot be used (missing,
        unreadable, not UTF-8, not JSON, a key missing or of the wrong type) is one EvaluationsError naming it and
        the fix (``judging.basics.fitted``'s: move a user's own file aside, or restore the shipped one)."""
        from evaluations.judging.basics.fitted import params_fix, read_json

        path = Path(path) if path else default_params_path()
        fix = params_fix(path, path.name, "evaluations calibrate-judge LABELLED_FILE...")
        data = read_json(path, "offline judge parameters", fix,
                         missing_fix="run `evaluations calibrate-judge LABELLED_FILE...` "
                                     "(e.g. ../shared/data/evouna/NQ.jsonl.gz ../shared/data/evouna/TQ.jsonl.gz)")
        return cls.from_dict(data, where=str(path), fix=fix)

    def probability(self, features: np.ndarray) -> np.ndarray:
        """σ(b + ((X − μ) / s) · w) for a feature matrix X in ``self.features`` order."""
        z = self.intercept + ((features - self.mean) / self.scale) @ self.coef
        return 1.0 / (1.0 + np.exp(-z))

    def judge_batch(
        self,
        refs_list: Sequence[Sequence[str]],
        answers: Sequence[str],
        *,
        cache_path: Path | None | bool = True,
        progress: Callable[[int], None] | None = None,
        extras: dict[str, Sequence[float]] | None = None,
        questions: Sequence[str] | None = None,
        answerable: Sequence[bool] | None = None,
        screen_answers: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(probabilities, verdicts) for many pairs. With ``screen_answers`` the non-answer screen decides first
        (``judging.correctness.nonanswer.screen``: p = 0 for a non-answer, p = 1 for a refusal to an unanswerable question);
        the model scores the rest. ``questions`` None: the screen and the features see an empty question."""
        n = len(answers)
        qs = list(questions) if questions is not None else [""] * n
        ok = list(answerable) if answerable is not None else [True] * n
        decided = np.full(n, np.nan)
        if screen_answers:
            for i in range(n):
                result = screen(qs[i], list(refs_list[i]), answers[i], answerable=ok[i])
                if result.decided is not None:
                    decided[i] = float(result.decided)
        rest = np.flatnonzero(np.isnan(decided))
        prob = decided.copy()
        if len(rest):
            matrix = feature_matrix(
                [refs_list[i] for i in rest], [answers[i] for i in rest], names=self.features, cache_path=cache_path,
                progress=progress, questions=[qs[i] for i in rest],
                extras={k: [v[i] for i in rest] for k, v in (extras or {}).items()},
            )
            prob[rest] = self.probability(matrix)
        if progress is not None and len(rest) < n:
            progress(n - len(rest))
        return prob, prob >= self.threshold

    def judge(self, refs: str | Sequence[str], answer: str, extras: dict[str, float] | None = None, *,
              question: str = "", answerable: bool = True, cache_path: Path | None | bool = False,
              ) -> tuple[float, bool]:
        """(probability correct, verdict) for one answer (``cache_path`` as ``judge_batch``'s; default no cache)."""
        alternatives = [refs] if isinstance(refs, str) else list(refs)
        columns = {k: [v] for k, v in (extras or {}).items()}
        prob, verdict = self.judge_batch([alternatives], [answer], cache_path=cache_path, extras=columns,
                                         questions=[question], answerable=[answerable])
        return float(prob[0]), bool(verdict[0])


_loaded: dict[tuple[Path, int], OfflineJudgeModel] = {}


def load_model(path: str | Path | None = None) -> OfflineJudgeModel:
    """``OfflineJudgeModel.load`` cached per path and modification time (the evaluators call this once per case;
    a file rewritten by ``calibrate-judge`` is read again)."""
    path = Path(path) if path else default_params_path()
    try:
        key = (path, path.stat().st_mtime_ns)
    except OSError:
        return OfflineJudgeModel.load(path)  # the load names the missing file
    if key not in _loaded:
        _loaded[key] = OfflineJudgeModel.load(path)
    return _loaded[key]
