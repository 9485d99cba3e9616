"""How far each shipped judge can be trusted: the shipped validation file ``judges/validation.json``.

Written by ``benchmarks/judge_validation.py`` (never by hand); read by runs (the headline names the primary
judge and its validated accuracy) and by ``pipeline.plan`` (the default primary judge is the one that validates
best on weak *and* strong answers: the highest ``min(weak, strong)`` held-out accuracy among the judges a
run computes).

Per judge (keyed by its verdict name: ``offline_correct``, ``llm_judge``, ``combined_correct``, …):
held-out accuracy against human labels on answers by weak systems (hand-labelled small-model answers,
``datasets/labels/``) and by strong systems (EVOUNA splits), and its control results
(``evaluations judge-check``: the lowest rejection rate over the non-answer categories and the lowest
acceptance rate over the positive ones).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import BaseModel, Field

from evaluations.core.errors import EvaluationsError

__all__ = ["Accuracy", "JudgeValidation", "Validation", "load_validation", "best_judge", "VALIDATION_FILE"]

VALIDATION_FILE = "validation.json"


class Accuracy(BaseModel):
    """Held-out accuracy on one population, with its 95% CI and size."""

    accuracy: float
    ci: tuple[float, float] | None = None
    n: int = 0
    what: str = ""  # e.g. "hand-labelled answers of SmolLM2 / Qwen 0.5B, grouped CV by question"


class JudgeValidation(BaseModel):
    label: str  # for people: "embedded LLM judge (Qwen2.5-Coder-1.5B)"
    weak: Accuracy | None = None
    strong: Accuracy | None = None
    main_job: Accuracy | None = None  # the README main job's own answers, labelled by hand
    controls_min_rejection: float | None = None  # lowest rejection rate over the non-answer categories
    controls_min_acceptance: float | None = None  # lowest acceptance rate over the positive categories

    def score(self) -> float:
        """min(weak, strong) accuracy: the judge must hold on both populations (nan when either is unknown)."""
        if self.weak is None or self.strong is None:
            return float("nan")
        return min(self.weak.accuracy, self.strong.accuracy)

    def headline(self) -> str:
        parts = [f"{k} {a.accuracy:.2f}" for k, a in (("weak systems", self.weak), ("strong systems", self.strong))
                 if a is not None]
        return f"validated accuracy vs human labels: {', '.join(parts)}" if parts else "not validated"


class Validation(BaseModel):
    judges: dict[str, JudgeValidation] = Field(default_factory=dict)
    date: str = ""
    notes: list[str] = Field(default_factory=list)


def load_validation() -> Validation:
    """The validation file: ``$EVALUATIONS_JUDGES_DIR/validation.json``, else the shipped one (as every judge
    parameter file, ``fitted.default_params_path``); empty when there is none."""
    from evaluations.judging.basics.fitted import default_params_path

    path = default_params_path(VALIDATION_FILE)
    if not path.is_file():
        return Validation()
    try:
        return Validation.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        raise EvaluationsError(f"invalid judge validation file: {exc}", where=str(path),
                               fix="re-run benchmarks/judge_validation.py") from None


def best_judge(candidates: Iterable[str], validation: Validation | None = None) -> str | None:
    """Of ``candidates`` (verdict names a run computes), the one with the highest ``score()``; None when no
    candidate is validated. Ties keep the order of ``candidates``."""
    validation = validation or load_validation()
    best, best_score = None, float("-inf")
    for name in candidates:
        entry = validation.judges.get(name)
        score = entry.score() if entry is not None else float("nan")
        if score == score and score > best_score:
            best, best_score = name, score
    return best
