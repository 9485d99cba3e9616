"""Which cases a person reads: a stratified random sample, more of it where the judge is least sure.

Why strata. The corrected estimate (``review.estimate``) is unbiased for any random sample whose inclusion
probabilities are known; its interval is as narrow as the judge's errors are predictable. Errors cluster where the
judge is unsure, so the sample is drawn by strata of the judge's certainty and leans towards the unsure ones
(Neyman allocation, the optimal allocation of stratified sampling; the idea of active and confidence-driven
inference, Zrnic & Candès arXiv:2403.03208, Gligorić et al. arXiv:2408.15204, made simple enough to check: each
stratum is a simple random sample, so the estimate needs no inverse-probability weights beyond W_h).

The strata. The judge's prediction splits the domain in "yes" and "no"; each side whose scores differ is split
again at its median certainty (score for "yes", 1 − score for "no"; tied scores stay together): up to four strata,
in the order yes-sure, yes-unsure, no-unsure, no-sure. A side of fewer than ``2 * MIN_LABELS`` cases is not split.

The allocation of n labels: every stratum gets ``MIN_LABELS`` (or all its cases), the rest in proportion to
N_h · σ_h (given one label at a time, so a larger sample holds the smaller one), where σ_h = √(e_h(1 − e_h)) and e_h, the expected disagreement, is the stratum's mean of
min(score, 1 − score) bounded to [``E_MIN``, ½] (a judge's score is no calibrated probability, so a sure stratum
still gets labels; with 0/1 scores this is proportional allocation); no stratum gets more than it has. Inside a stratum the cases are put in a random order (``seed``); the first n_h are the sample, and a
case a person skips is replaced by the next of its stratum, so the labelled cases of a stratum stay a random
sample of it. A later review of the same measure continues the same orders: more labels extend the sample.
"""

from __future__ import annotations

import random

import numpy as np
from pydantic import BaseModel

from evaluations.results.rundata import RunData
from evaluations.review.measures import ReviewMeasure, case_id

__all__ = ["E_MIN", "MIN_LABELS", "Design", "allocate", "draw", "strata"]

MIN_LABELS = 3
E_MIN = 0.05
STRATUM_NAMES = ("judge yes, sure", "judge yes, unsure", "judge no, unsure", "judge no, sure")


class Design(BaseModel):
    """A measure's sample design in a run: each case's stratum and each stratum's random order."""

    measure: str
    seed: int
    method: str = "stratified by the judge's certainty, Neyman allocation (review.design)"
    strata: dict[str, int]  # case id -> stratum (index into STRATUM_NAMES)
    orders: dict[int, list[str]]  # stratum -> its cases in random order
    sigma: dict[int, float]  # stratum -> σ_h of the allocation
    skipped: list[str] = []  # cases a person skipped: replaced by the next of their stratum

    def chosen(self, n: int) -> list[str]:
        """The sample of n labels (skipped cases replaced by the next of their stratum), in draw order."""
        skipped = set(self.skipped)
        sizes = {h: len([c for c in order if c not in skipped]) for h, order in self.orders.items()}
        take = allocate(sizes, self.sigma, n)
        picked: list[list[str]] = []
        for h, order in sorted(self.orders.items()):
            kept = [c for c in order if c not in skipped]
            picked.append(kept[:take[h]])
        # interleave the strata, so that a session stopped early has read some of each
        out = []
        for i in range(max((len(p) for p in picked), default=0)):
            out += [p[i] for p in picked if i < len(p)]
        return out


def _split(cases: list[tuple[str, float]]) -> list[list[str]]:
    """Cases (id, certainty) of one side: sure half, unsure half (ties together), or one stratum."""
    if len(cases) < 2 * MIN_LABELS or len({c for _, c in cases}) < 2:
        return [[i for i, _ in cases]]
    ordered = sorted(cases, key=lambda x: -x[1])
    cut = len(ordered) // 2
    while 0 < cut < len(ordered) and ordered[cut][1] == ordered[cut - 1][1]:
        cut += 1
    if cut >= len(ordered):
        cut = len(ordered) // 2
        while cut > 0 and ordered[cut][1] == ordered[cut - 1][1]:
            cut -= 1
    if cut == 0:
        return [[i for i, _ in cases]]
    return [[i for i, _ in ordered[:cut]], [i for i, _ in ordered[cut:]]]


def strata(measure: ReviewMeasure, run: RunData) -> tuple[dict[str, int], dict[str, float]]:
    """(case id -> stratum, case id -> the judge's score) over the measure's domain (module docstring)."""
    yes, no, scores = [], [], {}
    for record in run.records:
        f = measure.predict(record, run)
        if f is None:
            continue
        s = min(1.0, max(0.0, measure.score(record, run)))
        scores[case_id(record)] = s
        (yes if f >= 0.5 else no).append((case_id(record), s if f >= 0.5 else 1.0 - s))
    out: dict[str, int] = {}
    for side, numbers in ((yes, (0, 1)), (no, (3, 2))):  # [sure, unsure] halves: yes 0, 1; no 3, 2
        for h, group in zip(numbers, _split(side)):
            out.update(dict.fromkeys(group, h))
    return out, scores


def allocate(sizes: dict[int, int], sigma: dict[int, float], n: int) -> dict[int, int]:
    """Labels per stratum (module docstring), given one at a time so that the sample of n + 1 holds the sample of
    n: first one per stratum in turn until each has ``MIN_LABELS`` (or all its cases), then each next label to the
    stratum of the largest N_h σ_h / √(n_h (n_h + 1)) (the priority rule whose result is Neyman's allocation ∝
    N_h σ_h, rounded)."""
    take = dict.fromkeys(sizes, 0)
    for _ in range(min(n, sum(sizes.values()))):
        short = [h for h in sorted(sizes) if take[h] < min(MIN_LABELS, sizes[h])]
        if short:
            h = min(short, key=lambda h: (take[h], h))
        else:
            h = max((h for h in sorted(sizes) if take[h] < sizes[h]),
                    key=lambda h: sizes[h] * sigma.get(h, 0.5) / np.sqrt(take[h] * (take[h] + 1)))
        take[h] += 1
    return take


def draw(measure: ReviewMeasure, run: RunData, seed: int) -> Design:
    """A new design for ``measure`` in ``run`` (module docstring)."""
    assignment, scores = strata(measure, run)
    orders: dict[int, list[str]] = {}
    for case, h in assignment.items():
        orders.setdefault(h, []).append(case)
    rng = random.Random(f"{measure.name}:{seed}")
    sigma = {}
    for h, cases in sorted(orders.items()):
        cases.sort()
        rng.shuffle(cases)
        e = float(np.mean([min(scores[c], 1 - scores[c]) for c in cases]))
        e = min(0.5, max(E_MIN, e))
        sigma[h] = float(np.sqrt(e * (1 - e)))
    return Design(measure=measure.name, seed=seed, strata=assignment, orders=dict(sorted(orders.items())),
                  sigma=sigma)
