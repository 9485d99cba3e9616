"""Which probabilities of a run are checked for calibration, against which truth.

The statistics (reliability bins, ECE, MCE, Brier) are ``evaluations.results.confidence.calibration``:
B = ``BINS`` = 10 equal-width bins over [0, 1], right-closed — [0, 0.1], (0.1, 0.2], …, (0.9, 1.0] (the rule
of scikit-learn's ``calibration_curve(strategy="uniform")``); per non-empty bin b: n_b, mean probability
conf_b and accuracy acc_b (mean truth); ECE = Σ_b (n_b / N)·|acc_b − conf_b|, MCE = max_b |acc_b − conf_b|.

Pairs missing a probability or a truth are left out and counted as ``dropped``; probabilities are clipped
to [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evaluations.results.confidence import calibration
from evaluations.results.records import CaseRecord

BINS = 10
BIN_RULE = "10 equal-width bins over [0, 1], right-closed: [0, 0.1], (0.1, 0.2], …, (0.9, 1.0]"


@dataclass
class Calibration:
    """One probability source (e.g. the QA model's confidence) against one truth (e.g. the primary judge)."""

    name: str
    probability: str  # what the probability is, for people
    truth: str  # what it is checked against
    n: int
    dropped: int
    ece: float | None
    mce: float | None
    brier: float | None
    bins: list[dict] = field(default_factory=list)  # non-empty bins: range [lo, hi], n, confidence, accuracy
    bin_rule: str = BIN_RULE

    def to_dict(self, with_bins: bool = True) -> dict:
        out = {"name": self.name, "probability": self.probability, "truth": self.truth, "n": self.n,
               "dropped": self.dropped, "ece": self.ece, "mce": self.mce, "brier": self.brier,
               "bin_rule": self.bin_rule}
        return {**out, "bins": self.bins} if with_bins else out


def _probability(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))


def reliability(name: str, pairs: Iterable[tuple[float | None, bool | None]], *, probability: str,
                truth: str) -> Calibration:
    """Reliability bins, ECE, MCE and Brier score of (probability, truth) pairs (module docstring)."""
    pairs = list(pairs)
    kept = [(p, bool(t)) for p, t in ((_probability(p), t) for p, t in pairs) if p is not None and t is not None]
    stats = calibration([p for p, _ in kept], [t for _, t in kept], bins=BINS)
    return Calibration(name, probability, truth, stats["n"], len(pairs) - len(kept), stats["ece"], stats["mce"],
                       stats["brier"], stats["buckets"])


def _label(record: CaseRecord) -> bool | None:
    return record.label if isinstance(record.label, bool) else None


def _verdict(record: CaseRecord, judge: str | None) -> bool | None:
    value = record.judges.get(judge) if judge else None
    return value if isinstance(value, bool) else None


def _confidence(record: CaseRecord) -> Any:
    return (record.answer or {}).get("confidence")


def run_calibration(records: list[CaseRecord], primary_judge: str | None) -> list[Calibration]:
    """The calibrations a run's cases support.

    * ``qa_confidence``: the QA model's ``answer.confidence`` against the human label when the cases carry
      one, else against the primary judge's verdict;
    * ``<judge>_p_correct`` (``llm_p_correct``, ``offline_p_correct`` …): a judge's probability of "correct"
      against the human label, when the cases carry labels.
    """
    out = []
    labelled = any(_label(r) is not None for r in records)
    answered = [r for r in records if _probability(_confidence(r)) is not None]
    if answered and (labelled or primary_judge):
        truth_of = _label if labelled else (lambda r: _verdict(r, primary_judge))
        out.append(reliability("qa_confidence", ((_confidence(r), truth_of(r))
                                                 for r in answered), probability="QA model confidence",
                               truth="human label" if labelled else f"primary judge ({primary_judge})"))
    if labelled:
        names = sorted({k for r in records for k, v in r.judges.items()
                        if k.endswith("_p_correct") and _probability(v) is not None})
        for name in names:
            out.append(reliability(name, ((r.judges.get(name), _label(r)) for r in records),
                                   probability=f"{name} (judge probability)", truth="human label"))
    return out


def calibration_summary(records: list[CaseRecord], primary_judge: str | None) -> dict[str, dict]:
    """``{name: {probability, truth, n, dropped, ece, mce, brier, bin_rule}}`` for summary.json (no bins)."""
    return {c.name: {k: v for k, v in c.to_dict(with_bins=False).items() if k != "name"}
            for c in run_calibration(records, primary_judge) if c.n}
