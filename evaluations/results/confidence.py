"""Confidence calibration: does a system's confidence predict its success?

Given confidences ``c_i`` in [0, 1] and outcomes ``y_i`` in {0, 1} (1 = correct), N pairs:

* buckets: B equal-width bins with edges ``e_j = j / B`` (``numpy.linspace(0, 1, B + 1)``), right-closed:
  bin 1 is ``[0, e_1]``, bin j > 1 is ``(e_{j-1}, e_j]`` (the rule of ``sklearn.calibration.calibration_curve``
  with ``strategy="uniform"``); per non-empty bin: n_b, mean confidence conf_b, accuracy acc_b = mean y;
* ECE = sum_b (n_b / N) * |acc_b - conf_b|;  MCE = max_b |acc_b - conf_b|;
* Brier score = mean (c_i - y_i)^2;
* correlation of confidence with success: point-biserial r (= Pearson r of c and y) and Spearman rho;
  None when either side is constant.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bucket_index(confidences: np.ndarray, bins: int) -> np.ndarray:
    """0-based bin of each confidence under the right-closed rule of the module docstring."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    return np.searchsorted(edges[1:-1], confidences, side="left")


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    xc, yc = x - x.mean(), y - y.mean()
    return float((xc @ yc) / np.sqrt((xc @ xc) * (yc @ yc)))


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions), 1-based."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    sorted_x = x[order]
    start = 0
    for end in range(1, len(x) + 1):
        if end == len(x) or sorted_x[end] != sorted_x[start]:
            ranks[order[start:end]] = (start + end + 1) / 2
            start = end
    return ranks


def calibration(confidences: Sequence[float], outcomes: Sequence[bool], bins: int = 10) -> dict:
    """Buckets, ECE, MCE, Brier and correlations (module docstring) of confidence vs outcome."""
    c = np.asarray(confidences, dtype=float)
    y = np.asarray(outcomes, dtype=float)
    if len(c) == 0:
        return {"n": 0, "bins": bins, "buckets": [], "ece": None, "mce": None, "brier": None,
                "pointbiserial_r": None, "spearman_rho": None}
    index = bucket_index(c, bins)
    buckets, ece, mce = [], 0.0, 0.0
    for b in range(bins):
        mask = index == b
        n = int(mask.sum())
        if n == 0:
            continue
        conf, acc = float(c[mask].mean()), float(y[mask].mean())
        gap = abs(acc - conf)
        ece += n / len(c) * gap
        mce = max(mce, gap)
        buckets.append({"range": [b / bins, (b + 1) / bins], "n": n, "confidence": conf, "accuracy": acc})
    return {
        "n": int(len(c)),
        "bins": bins,
        "bin_rule": "equal width, right-closed: [0,1/B], (1/B,2/B], ... (as sklearn calibration_curve uniform)",
        "buckets": buckets,
        "ece": ece,
        "mce": mce,
        "brier": float(np.mean((c - y) ** 2)),
        "accuracy": float(y.mean()),
        "mean_confidence": float(c.mean()),
        "pointbiserial_r": _pearson(c, y),
        "spearman_rho": _pearson(_ranks(c), _ranks(y)),
    }
