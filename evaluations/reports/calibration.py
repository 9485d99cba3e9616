"""Calibration of a probability against the truth: reliability bins and the expected calibration error.

Bin rule: ``BINS`` = 10 equal-width bins over [0, 1] with edges e_b = b/10; bin b (0..9) holds the
probabilities p with e_b < p <= e_(b+1) (bin 0 also holds p = 0) — scikit-learn's
``calibration_curve(strategy="uniform")`` rule. For the non-empty bins:

* confidence_b = mean p in bin b,  accuracy_b = mean truth (0/1) in bin b,  n_b = its size;
* ECE = Σ_b (n_b / N) · |accuracy_b − confidence_b|   (N = all pairs);
* MCE = max_b |accuracy_b − confidence_b|.

Pairs whose probability or truth is missing are left out (and counted as ``dropped``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

BINS = 10
BIN_RULE = "10 equal-width bins over [0, 1], right-closed: (0.0, 0.1], (0.1, 0.2], … (0.9, 1.0]; 0 falls in the first"


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
    bins: list[dict[str, float | int]] = field(default_factory=list)  # non-empty bins: lo, hi, n, confidence, accuracy
    bin_rule: str = BIN_RULE

    def to_dict(self) -> dict:
        return {"name": self.name, "probability": self.probability, "truth": self.truth, "n": self.n,
                "dropped": self.dropped, "ece": self.ece, "mce": self.mce, "bin_rule": self.bin_rule,
                "bins": self.bins}


def reliability(name: str, pairs: Iterable[tuple[float | None, bool | None]], *, probability: str,
                truth: str, n_bins: int = BINS) -> Calibration:
    """Reliability bins, ECE and MCE of (probability, truth) pairs (module docstring)."""
    pairs = list(pairs)
    kept = [(float(p), bool(t)) for p, t in pairs if p is not None and t is not None and np.isfinite(p)]
    if not kept:
        return Calibration(name, probability, truth, 0, len(pairs), None, None)
    prob = np.clip(np.array([p for p, _ in kept]), 0.0, 1.0)
    true = np.array([t for _, t in kept], dtype=float)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    index = np.searchsorted(edges[1:-1], prob)  # side="left": p == e_b falls in the lower bin (right-closed)
    bins = []
    ece, mce = 0.0, 0.0
    for b in range(n_bins):
        members = index == b
        size = int(members.sum())
        if not size:
            continue
        conf, acc = float(prob[members].mean()), float(true[members].mean())
        gap = abs(acc - conf)
        ece += size / len(prob) * gap
        mce = max(mce, gap)
        bins.append({"lo": float(edges[b]), "hi": float(edges[b + 1]), "n": size, "confidence": conf, "accuracy": acc})
    return Calibration(name, probability, truth, len(prob), len(pairs) - len(prob), float(ece), float(mce), bins)


def _label(record: dict) -> bool | None:
    label = record.get("label")
    return label if isinstance(label, bool) else None


def _verdict(record: dict, judge: str | None) -> bool | None:
    value = (record.get("judges") or {}).get(judge) if judge else None
    return value if isinstance(value, bool) else None


def _confidence(record: dict) -> float | None:
    value = (record.get("answer") or {}).get("confidence")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def run_calibration(records: list[dict], primary_judge: str | None) -> list[Calibration]:
    """The calibrations a run supports.

    * ``qa_confidence``: the QA model's ``answer.confidence`` against the primary judge's verdict (or the
      human label when the cases carry one);
    * ``<judge>_p_correct`` (``llm_p_correct``, ``offline_p_correct`` …): a judge's probability of "correct"
      against the human label, when cases carry labels.
    """
    out = []
    answered = [r for r in records if _confidence(r) is not None]
    labelled = any(_label(r) is not None for r in records)
    if answered:
        truth_of = _label if labelled else (lambda r: _verdict(r, primary_judge))
        truth = "human label" if labelled else f"primary judge ({primary_judge})"
        if labelled or primary_judge:
            out.append(reliability("qa_confidence", ((_confidence(r), truth_of(r)) for r in answered),
                                   probability="QA model confidence", truth=truth))
    if labelled:
        names = sorted({k for r in records for k, v in (r.get("judges") or {}).items()
                        if k.endswith("_p_correct") and isinstance(v, (int, float)) and not isinstance(v, bool)})
        for name in names:
            pairs = (((r.get("judges") or {}).get(name), _label(r)) for r in records)
            out.append(reliability(name, pairs, probability=f"{name} (judge probability)", truth="human label"))
    return out


def calibration_summary(records: list[dict], primary_judge: str | None) -> dict[str, dict]:
    """``{name: {ece, mce, n, bin_rule, probability, truth}}`` for summary.json (bins left out)."""
    return {c.name: {k: v for k, v in c.to_dict().items() if k not in ("bins", "name")}
            for c in run_calibration(records, primary_judge)}
