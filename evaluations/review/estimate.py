"""Prediction-powered estimates of a share: N judged cases, n of them also labelled by a person.

The target is θ = the mean of the person's label y over the run's N cases of a measure's domain. The judge gives
every case a prediction f ∈ [0, 1]; a person labels a sample of them. ``review`` draws that sample by strata
(``review.design``): in stratum h, N_h cases, of which n_h labelled, drawn at random without replacement. With
W_h = N_h / N, the stratified PPI++ estimate (Angelopoulos, Duchi & Zrnic, *PPI++*, arXiv:2311.01453; strata as
in StratPPI, Fisch et al., arXiv:2406.04291) is::

    θ̂(λ) = Σ_h W_h · ( λ · mean(f over the N_h cases) + mean(y − λ·f over the n_h labelled) )

unbiased for every fixed λ: the rectifier mean(y − λf) over a random sample of the stratum is unbiased for the
stratum's mean of y − λf. λ is PPI++'s power tuning, the plug-in minimiser of the variance, clipped to [0, 1]::

    λ = Σ_h a_h · c_h / Σ_h a_h · (1 + n_h / N_h) · v_h,   a_h = W_h² / n_h

with c_h the covariance of (y, f) over the labelled cases (divisor n_h) and v_h the variance of f over the
labelled and all cases together (divisor − 1): with one stratum this is ``ppi_py``'s ``_calc_lam_glm`` for a mean,
and ``ppi_mean_ci`` is reproduced exactly (``finite=False, ddof=0``; tested). λ = 0 is the stratified mean of
the labels alone, λ = 1 plain PPI. With f constant inside each stratum (a 0/1 verdict stratified by itself) every
λ gives the same θ̂: the stratified mean of the labels, the judge's work being the strata.

The variance. The N cases are the whole run (a finite population, all of them judged), so only the labelled
sample varies: Var θ̂ = Σ_h W_h² · (1 − n_h / N_h) · s_h² / n_h, with s_h² the variance (divisor n_h − 1) of
y − λf over the stratum's labels (``finite=True``, the default). ``finite=False`` is PPI++'s own variance, for
cases drawn from a larger population: Σ_h W_h² · (λ²·var(f over N_h)/N_h + var(y − λf)/n_h).
A stratum whose n_h labels all give the same residual has s_h² = 0, which would claim a certainty 2 to 10 labels
do not give; there s_h² is the variance of one disagreement in n_h + 1 (the residual's range r times
½/(n_h+1)): s_h² = r²·q·(1−q), q = ½ / (n_h + 1), r = max(1, λ) (``benchmarks/review_coverage.py``).
The interval is θ̂ ± z₀.₉₇₅ · √Var, clipped to [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

__all__ = ["Estimate", "Stratum", "stratified_ppi"]


@dataclass(frozen=True)
class Stratum:
    """One stratum: the judge's predictions of all its cases, and the (prediction, label) pairs of its labelled
    cases (the labelled cases are among ``predictions``)."""

    predictions: np.ndarray  # f over the N_h cases
    labelled: np.ndarray  # f over the n_h labelled cases
    labels: np.ndarray  # y over the same n_h cases, in [0, 1]

    @classmethod
    def of(cls, predictions: Sequence[float], labelled: Sequence[float], labels: Sequence[float]) -> Stratum:
        return cls(np.asarray(predictions, dtype=float), np.asarray(labelled, dtype=float),
                   np.asarray(labels, dtype=float))


class Estimate(BaseModel):
    estimate: float
    ci95: tuple[float, float]
    se: float
    lam: float
    n_labels: int
    n_cases: int
    strata: int


def _lambda(strata: list[Stratum], weights: np.ndarray) -> float:
    num = den = 0.0
    for stratum, w in zip(strata, weights):
        n, size = len(stratum.labels), len(stratum.predictions)
        a = w * w / n
        y, f = stratum.labels, stratum.labelled
        num += a * float(np.mean((y - y.mean()) * (f - f.mean())))
        both = np.concatenate([f, stratum.predictions])
        den += a * (1 + n / size) * (float(np.var(both, ddof=1)) if len(both) > 1 else 0.0)
    if den <= 0:
        return 0.0  # f constant in every stratum: θ̂ does not depend on λ
    return float(np.clip(num / den, 0.0, 1.0))


def _floor(n: int, lam: float) -> float:
    q = 0.5 / (n + 1)
    return max(1.0, lam) ** 2 * q * (1 - q)


def stratified_ppi(strata: Sequence[Stratum], *, lam: float | None = None, level: float = 0.95,
                   finite: bool = True, ddof: int = 1) -> Estimate:
    """The stratified PPI++ estimate and interval (module docstring). Every stratum needs ≥ 1 labelled case (≥ 2
    for its variance with ``ddof=1``; ``review.corrected`` merges strata until they have)."""
    from scipy.stats import norm

    strata = [s for s in strata if len(s.predictions)]
    if not strata or any(len(s.labels) == 0 for s in strata):
        raise ValueError("every stratum needs a labelled case")
    sizes = np.array([len(s.predictions) for s in strata], dtype=float)
    weights = sizes / sizes.sum()
    lam = _lambda(strata, weights) if lam is None else float(lam)
    estimate, variance = 0.0, 0.0
    for stratum, w, size in zip(strata, weights, sizes):
        n = len(stratum.labels)
        residual = stratum.labels - lam * stratum.labelled
        estimate += w * (lam * float(stratum.predictions.mean()) + float(residual.mean()))
        s2 = float(np.var(residual, ddof=ddof)) if n > ddof else 0.0
        if finite:
            if n < size and s2 == 0.0:
                s2 = _floor(n, lam)
            variance += w * w * (1 - n / size) * s2 / n
        else:
            imputed = float(np.var(lam * stratum.predictions, ddof=ddof))
            variance += w * w * (imputed / size + s2 / n)
    se = float(np.sqrt(variance))
    z = float(norm.ppf(0.5 + level / 2))
    low, high = max(0.0, estimate - z * se), min(1.0, estimate + z * se)
    return Estimate(estimate=estimate, ci95=(low, high), se=se, lam=lam,
                    n_labels=int(sum(len(s.labels) for s in strata)), n_cases=int(sizes.sum()), strata=len(strata))
