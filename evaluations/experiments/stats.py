"""Paired statistics of two runs over the same cases: one ``PairedTest`` descriptor per test, a registry.

Notation: for the n cases both runs scored, ``a_i`` (baseline) and ``b_i``; ``d_i = b_i - a_i``;
``mean(d)``, ``sd(d)`` with ddof = 1. Randomised procedures use a fixed seed (``SEED``), so a comparison
is reproducible. With every ``d_i = 0`` there is no evidence of a difference and every p is 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

SEED = 0
RESAMPLES = 9999
ALPHA = 0.05
POWER = 0.8


def _mean_diff(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(b - a, axis=axis)


def t_test(a: np.ndarray, b: np.ndarray) -> float:
    """Paired t-test (scipy ``ttest_rel(b, a)``): t = mean(d) / (sd(d) / sqrt(n)), df = n - 1, two-sided."""
    return float(stats.ttest_rel(b, a).pvalue)


def wilcoxon_test(a: np.ndarray, b: np.ndarray) -> float:
    """Wilcoxon signed-rank (scipy ``wilcoxon(d)``, zero_method 'wilcox': zero differences are dropped,
    tied |d| get average ranks; exact distribution for small n without ties/zeros, else normal approx.)."""
    return float(stats.wilcoxon(b - a).pvalue)


def permutation(a: np.ndarray, b: np.ndarray) -> float:
    """Paired permutation (randomisation) test of mean(d): under H0 each pair's difference is as likely to
    have either sign, so the signs are flipped at random (scipy ``permutation_test``,
    permutation_type='samples', 9,999 resamples; exact when 2^m <= 9,999). Pairs with d_i = 0 are the same
    under every flip, so the test runs on the m pairs with d_i != 0 (same p, exact more often);
    p = two-sided share of flipped statistics at least as extreme as the observed (1 when m = 1: both signs
    give the same |mean|)."""
    keep = b != a
    if int(np.sum(keep)) < 2:
        return 1.0
    result = stats.permutation_test((a[keep], b[keep]), _mean_diff, permutation_type="samples", vectorized=True,
                                    n_resamples=RESAMPLES, rng=np.random.default_rng(SEED))
    return float(result.pvalue)


def mcnemar_table(a: np.ndarray, b: np.ndarray) -> list[list[int]]:
    """2×2 table [[a pass & b pass, a pass & b fail], [a fail & b pass, a fail & b fail]] of 0/1 verdicts."""
    a1, b1 = a > 0.5, b > 0.5
    return [[int(np.sum(a1 & b1)), int(np.sum(a1 & ~b1))], [int(np.sum(~a1 & b1)), int(np.sum(~a1 & ~b1))]]


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> float:
    """McNemar's exact test (statsmodels ``mcnemar(table, exact=True)``): with discordant counts n01, n10,
    p = two-sided binomial test of min(n01, n10) under Binomial(n01 + n10, 1/2)."""
    return float(mcnemar(mcnemar_table(a, b), exact=True).pvalue)


@dataclass(frozen=True)
class PairedTest:
    """A significance test: its key in the report's ``p``, the kind it applies to, its p-value function."""

    key: str
    kind: str  # "continuous" | "binary"
    p_value: Callable[[np.ndarray, np.ndarray], float]
    primary: bool = False  # the p that is Holm-corrected and decides ``significant``


TESTS: list[PairedTest] = [
    PairedTest("t", "continuous", t_test),
    PairedTest("wilcoxon", "continuous", wilcoxon_test),
    PairedTest("permutation", "continuous", permutation, primary=True),
    PairedTest("mcnemar", "binary", mcnemar_exact, primary=True),
]


def is_binary(values: np.ndarray) -> bool:
    return bool(np.all((values == 0.0) | (values == 1.0)))


def bootstrap_ci(diffs: np.ndarray) -> tuple[float, float] | None:
    """95% CI of mean(d) by the paired bootstrap: cases are resampled with their pair (scipy ``bootstrap`` on
    d, BCa, 9,999 resamples); percentile interval when BCa is undefined; [d, d] when every d is equal."""
    if len(diffs) < 2:
        return None
    if np.all(diffs == diffs[0]):
        return float(diffs[0]), float(diffs[0])
    interval = None
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            interval = stats.bootstrap((diffs,), np.mean, n_resamples=RESAMPLES, method=method,
                                       rng=np.random.default_rng(SEED)).confidence_interval
        if np.isfinite(interval.low) and np.isfinite(interval.high):
            break
    return float(interval.low), float(interval.high)


def cohens_dz(diffs: np.ndarray) -> float | None:
    """Cohen's d_z = mean(d) / sd(d); 0 when every d is 0, None when sd(d) = 0 otherwise or n < 2."""
    if len(diffs) < 2:
        return None
    sd = float(np.std(diffs, ddof=1))
    if sd == 0.0:
        return 0.0 if float(np.mean(diffs)) == 0.0 else None
    return float(np.mean(diffs)) / sd


def mde(diffs: np.ndarray) -> float | None:
    """Minimum detectable difference: the d_z a two-sided paired t-test detects with α 0.05 and power 0.8
    at this n (statsmodels ``TTestPower().solve_power``), times sd(d), in the metric's units."""
    if len(diffs) < 2:
        return None
    effect = TTestPower().solve_power(effect_size=None, nobs=len(diffs), alpha=ALPHA, power=POWER,
                                      alternative="two-sided")
    # solve_power returns a 1-element array for some n (its root-finder fallback)
    return float(np.asarray(effect).reshape(-1)[0]) * float(np.std(diffs, ddof=1))


def win_tie_loss(diffs: np.ndarray, higher_is_better: bool) -> tuple[int, int, int]:
    """Cases where b is better than a (win), equal (tie), worse (loss), by the metric's direction."""
    better = diffs > 0 if higher_is_better else diffs < 0
    worse = diffs < 0 if higher_is_better else diffs > 0
    return int(np.sum(better)), int(np.sum(diffs == 0)), int(np.sum(worse))


def compare_paired(a: Sequence[float], b: Sequence[float], *, higher_is_better: bool = True,
                   binary: bool | None = None) -> dict[str, Any]:
    """Every statistic of one metric over paired values (see each function's formula).

    ``binary`` None: decided from the values (all 0/1 in both runs). Returns the comparison's numbers; the
    caller adds names, ``p_holm`` and ``significant``.
    """
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diffs = bv - av
    kind = "binary" if (binary if binary is not None else is_binary(av) and is_binary(bv)) else "continuous"
    p: dict[str, float | None] = {}
    for test in TESTS:
        if test.kind != kind:
            continue
        if len(diffs) < 2:
            p[test.key] = None
        elif np.all(diffs == 0):
            p[test.key] = 1.0
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = test.p_value(av, bv)
            p[test.key] = value if np.isfinite(value) else None
    wins, ties, losses = win_tie_loss(diffs, higher_is_better)
    ci = bootstrap_ci(diffs)
    return {
        "kind": kind, "n": int(len(diffs)),
        "mean_a": float(np.mean(av)) if len(av) else None, "mean_b": float(np.mean(bv)) if len(bv) else None,
        "diff": float(np.mean(diffs)) if len(diffs) else None, "ci95": list(ci) if ci else None,
        "effect_size": cohens_dz(diffs), "p": p,
        "primary_test": next(t.key for t in TESTS if t.kind == kind and t.primary),
        "wins": wins, "ties": ties, "losses": losses, "mde": mde(diffs),
        **({"table": mcnemar_table(av, bv)} if kind == "binary" else {}),
    }


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjustment (statsmodels ``multipletests(method='holm')``) of the given p-values;
    None stays None and is not counted: p_(i) adjusted = max_{j <= i} min(1, (m - j + 1) p_(j))."""
    present = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if present:
        adjusted = multipletests([p_values[i] for i in present], method="holm")[1]
        for i, value in zip(present, adjusted):
            out[i] = float(value)
    return out
