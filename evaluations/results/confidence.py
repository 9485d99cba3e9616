"""Confidence calibration: does a system's confidence predict its success?

Given confidences ``c_i`` in [0, 1] and outcomes ``y_i`` in {0, 1} (1 = correct), N pairs:

* buckets: B equal-width bins with edges ``e_j = j / B`` (``numpy.linspace(0, 1, B + 1)``), right-closed:
  bin 1 is ``[0, e_1]``, bin j > 1 is ``(e_{j-1}, e_j]``; per non-empty bin: n_b (``numpy.bincount``), mean
  confidence conf_b and accuracy acc_b = mean y (``sklearn.calibration.calibration_curve`` with
  ``strategy="uniform"``, which bins by this rule);
* ECE = sum_b (n_b / N) * |acc_b - conf_b|;  MCE = max_b |acc_b - conf_b|;
* Brier score = mean (c_i - y_i)^2 (``sklearn.metrics.brier_score_loss``);
* correlation of confidence with success: point-biserial r (``scipy.stats.pointbiserialr``, = Pearson r of
  c and y) and Spearman rho (``scipy.stats.spearmanr``, average ranks for ties); None when either side is
  constant or N < 2.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bucket_index(confidences: np.ndarray, bins: int) -> np.ndarray:
    """0-based bin of each confidence under the right-closed rule of the module docstring."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    return np.searchsorted(edges[1:-1], confidences, side="left")


def _varies(c: np.ndarray, y: np.ndarray) -> bool:
    return len(c) >= 2 and np.ptp(c) > 0 and np.ptp(y) > 0


def calibration(confidences: Sequence[float], outcomes: Sequence[bool], bins: int = 10) -> dict:
    """Buckets, ECE, MCE, Brier and correlations (module docstring) of confidence vs outcome. scipy and
    scikit-learn are imported here, when a calibration is computed: every reader of the results package (a warm
    re-run, compare, gate) would otherwise pay ~1 s for them."""
    from scipy import stats
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss

    c = np.asarray(confidences, dtype=float)
    y = np.asarray(outcomes, dtype=float)
    if len(c) == 0:
        return {"n": 0, "bins": bins, "buckets": [], "ece": None, "mce": None, "brier": None,
                "pointbiserial_r": None, "spearman_rho": None}
    counts = np.bincount(bucket_index(c, bins), minlength=bins)
    accuracy, confidence = calibration_curve(y, c, n_bins=bins, strategy="uniform", pos_label=1.0)
    filled = np.flatnonzero(counts)
    gaps = np.abs(accuracy - confidence)
    buckets = [{"range": [b / bins, (b + 1) / bins], "n": int(counts[b]), "confidence": float(conf),
                "accuracy": float(acc)} for b, conf, acc in zip(filled, confidence, accuracy)]
    varies = _varies(c, y)
    return {
        "n": int(len(c)),
        "bins": bins,
        "bin_rule": "equal width, right-closed: [0,1/B], (1/B,2/B], ... (as sklearn calibration_curve uniform)",
        "buckets": buckets,
        "ece": float(np.sum(counts[filled] / len(c) * gaps)),
        "mce": float(gaps.max()),
        "brier": float(brier_score_loss(y, c, pos_label=1.0)),
        "accuracy": float(y.mean()),
        "mean_confidence": float(c.mean()),
        "pointbiserial_r": float(stats.pointbiserialr(y, c).statistic) if varies else None,
        "spearman_rho": float(stats.spearmanr(c, y).statistic) if varies else None,
    }
