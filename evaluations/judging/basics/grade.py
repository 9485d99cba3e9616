"""One verdict of a model-backed judge, the same shape for the served and the embedded judge."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Grade:
    """One verdict: ``verdict``, P(correct), the reason, and the output mode that gave it."""

    verdict: bool
    p_correct: float
    reason: str
    mode: str
