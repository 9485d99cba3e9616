"""``summary.json``'s ``corrected`` section: each reviewed measure's judged figure corrected by a person's labels.

For a measure M with labels in the run (``review.labels``; the latest per case), over the N cases of M's domain
(``review.measures``) that its design covers (``review_design.json``; labels from a sheet made by hand, without a
design, are taken as a simple random sample of the domain):

* ``estimate``, ``ci95``, ``se``, ``ppi_lambda``: the stratified PPI++ estimate of the target (``review.estimate``),
  over the design's strata; a stratum with fewer than 2 labels is merged into its neighbour first (``strata``
  says how many were used), since one label gives no variance;
* ``judge_only``: the judge's own figure of the same target (the mean of its predictions) and its Wilson interval
  (sampling noise only: it assumes the judge is right);
* ``labels_only``: the labelled cases' own share and its Wilson interval (``n`` labels; drawn by strata, so it is
  what the labels alone say of themselves, not of the run);
* ``agreement``: the judge's prediction against the labels: accuracy, Cohen's κ, sensitivity (judge yes | person
  yes), specificity (judge no | person no);
* ``n_labels``, ``n_cases``, ``method``, ``target`` (what a "yes" means and what is estimated).

``paired_difference`` is compare's corrected difference of two runs over their shared cases: each run's estimate
restricted to the shared cases (its labels there, its design's strata), b − a, with standard error
√(se_a² + se_b²): the two runs' labels are drawn independently, and the judges' predictions over the shared cases
are fixed, so the variances add.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel

from evaluations.results.rundata import RunData
from evaluations.review.design import STRATUM_NAMES, Design
from evaluations.review.estimate import Estimate, Stratum, stratified_ppi
from evaluations.review.labels import HumanLabel, current_labels, read_designs, read_labels
from evaluations.review.measures import MEASURES, ReviewMeasure, case_id

__all__ = ["Corrected", "corrected_section", "estimate_measure", "corrected_value", "corrected_values", "labels_of",
           "paired_difference", "with_corrected"]

MIN_PER_STRATUM = 2


class Interval(BaseModel):
    estimate: float | None
    ci95: tuple[float, float] | None
    n: int


class Agreement(BaseModel):
    n: int
    accuracy: float | None
    kappa: float | None
    sensitivity: float | None
    specificity: float | None


class Corrected(BaseModel):
    estimate: float
    ci95: tuple[float, float]
    se: float
    n_labels: int
    n_cases: int
    method: str
    target: str
    judge_only: Interval
    labels_only: Interval
    agreement: Agreement
    strata: int
    ppi_lambda: float  # PPI++'s λ (0: the labels alone, 1: plain PPI)


def _wilson(values: list[float]) -> Interval:
    from evaluations.results.reference_free import mean_ci

    if not values:
        return Interval(estimate=None, ci95=None, n=0)
    ci = mean_ci(values)
    return Interval(estimate=float(np.mean(values)), ci95=tuple(ci) if ci else None, n=len(values))


def _agreement(pairs: list[tuple[float, bool]]) -> Agreement:
    from evaluations.judging.validation.agreement import confusion, metrics

    def clean(x: Any) -> float | None:
        return None if x is None or not np.isfinite(x) else float(x)

    labels = [y for _, y in pairs]
    verdicts = [f >= 0.5 for f, _ in pairs]
    tp, fp, fn, tn = confusion(labels, verdicts)
    stats = metrics(np.array([tp, fp, fn, tn]))
    return Agreement(n=len(pairs), accuracy=clean(stats["accuracy"]), kappa=clean(stats["kappa"]),
                     sensitivity=clean(stats["recall"]), specificity=clean(tn / (tn + fp)) if tn + fp else None)


def _merged(groups: list[tuple[list[float], list[float], list[float]]]) -> list[Stratum]:
    """Strata in design order, each with ≥ ``MIN_PER_STRATUM`` labels where the labels allow: a stratum short of
    them joins its next neighbour (the last one its previous)."""
    groups = [g for g in groups if g[0]]
    i = 0
    while len(groups) > 1 and i < len(groups):
        if len(groups[i][1]) < MIN_PER_STRATUM:
            j = i + 1 if i + 1 < len(groups) else i - 1
            a, b = groups[min(i, j)], groups[max(i, j)]
            groups[min(i, j)] = (a[0] + b[0], a[1] + b[1], a[2] + b[2])
            del groups[max(i, j)]
            i = 0
            continue
        i += 1
    return [Stratum.of(*g) for g in groups]


def estimate_measure(run: RunData, measure: ReviewMeasure, labels: dict[str, bool], design: Design | None,
                     cases: set[str] | None = None) -> Corrected | None:
    """The corrected figure of ``measure`` (module docstring) over its domain (∩ ``cases`` when given); None when
    no label falls in it."""
    predicted = {case_id(r): f for r in run.records if (f := measure.predict(r, run)) is not None}
    if design is not None:
        predicted = {c: f for c, f in predicted.items() if c in design.strata}
    if cases is not None:
        predicted = {c: f for c, f in predicted.items() if c in cases}
    labelled = {c: y for c, y in labels.items() if c in predicted}
    if not labelled:
        return None
    by_stratum: dict[int, tuple[list[float], list[float], list[float]]] = {}
    for c, f in predicted.items():
        h = design.strata[c] if design is not None else 0
        group = by_stratum.setdefault(h, ([], [], []))
        group[0].append(f)
        if c in labelled:
            group[1].append(f)
            group[2].append(float(labelled[c]))
    strata = _merged([by_stratum[h] for h in sorted(by_stratum)])
    if any(len(s.labels) == 0 for s in strata):  # one stratum left, or a single label: nothing to merge into
        strata = [Stratum.of(list(predicted.values()), [predicted[c] for c in labelled],
                             [float(y) for y in labelled.values()])]
    est: Estimate = stratified_ppi(strata)
    how = ("stratified PPI++" if design is not None else "PPI++ (labels taken as a simple random sample)")
    method = (f"{how}, λ = {est.lam:.3f}, {est.strata} strata of {len(by_stratum)} "
              f"({', '.join(STRATUM_NAMES[h] for h in sorted(by_stratum))}), finite-population variance, normal 95%")
    pairs = [(predicted[c], y) for c, y in labelled.items()]
    return Corrected(estimate=est.estimate, ci95=est.ci95, se=est.se, n_labels=est.n_labels, n_cases=est.n_cases,
                     method=method, target=measure.target, judge_only=_wilson(list(predicted.values())),
                     labels_only=_wilson([float(y) for y in labelled.values()]), agreement=_agreement(pairs),
                     strata=est.strata, ppi_lambda=est.lam)


def labels_of(run: RunData, name: str, labels: list[HumanLabel] | None = None) -> dict[str, bool]:
    """case id -> the latest label of measure ``name`` (``labels``, or the run folder's)."""
    latest = current_labels(labels if labels is not None else read_labels(run.path))
    return {case: label.label for (case, measure), label in latest.items() if measure == name}


def corrected_section(run: RunData, labels: list[HumanLabel] | None = None,
                      designs: dict[str, Design] | None = None) -> dict[str, Any] | None:
    """``{measure: Corrected as JSON}`` for every measure with labels in the run (``labels`` / ``designs``: read
    from the run folder when not given); None without labels."""
    labels = labels if labels is not None else read_labels(run.path)
    if not labels:
        return None
    designs = designs if designs is not None else read_designs(run.path)
    out = {}
    for name, measure in MEASURES.items():
        mine = labels_of(run, name, labels)
        if not mine:
            continue
        try:
            result = estimate_measure(run, measure, mine, designs.get(name))
        except Exception as exc:  # noqa: BLE001 - e.g. no primary judge: said in the section, never a lost summary
            out[name] = {"error": str(exc).splitlines()[0]}
            continue
        if result is not None:
            out[name] = result.model_dump(mode="json")
    return out or None


def with_corrected(run: RunData) -> RunData:
    """``run`` with ``summary.corrected`` from the labels in its folder (unchanged without labels). A run, a
    re-run (``--resume``) and ``review --labels`` all write the summary through it, so none drops the section."""
    section = corrected_section(run)
    if section is not None:
        run.summary.corrected = section
    return run


#: gate rule and history names: ``corrected.<measure>`` (the estimate), ``.lo`` / ``.hi`` (its 95% interval)
PREFIX = "corrected."
_ENDS = {"": "estimate", "lo": 0, "hi": 1}


def corrected_values(run: RunData) -> dict[str, float]:
    """The run's corrected figures by name (history keeps them beside the judged ones)."""
    out = {}
    for name, entry in (run.summary.corrected or {}).items():
        if isinstance(entry, dict) and "estimate" in entry:
            out[f"{PREFIX}{name}"] = float(entry["estimate"])
            out[f"{PREFIX}{name}.lo"], out[f"{PREFIX}{name}.hi"] = map(float, entry["ci95"])
    return out


def corrected_value(metric: str, run: RunData, where: str = "metric") -> float:
    """The value of a ``corrected.<measure>[.lo|.hi]`` name in ``run``; one error naming the fix without labels."""
    from evaluations.core.errors import EvaluationsError

    measure, _, end = metric.removeprefix(PREFIX).partition(".")
    if measure not in MEASURES or end not in _ENDS:
        raise EvaluationsError(f"{metric!r} is no corrected figure", where=where,
                               fix=f"corrected.<measure>, .lo or .hi; measures: {', '.join(MEASURES)}")
    entry = (run.summary.corrected or {}).get(measure)
    if not isinstance(entry, dict) or "estimate" not in entry:
        why = entry.get("error") if isinstance(entry, dict) else "no labels of it in the run"
        raise EvaluationsError(f"{metric}: {why}", where=str(run.path),
                               fix=f"label a sample first: evaluations review {run.path} --measure {measure}")
    key = _ENDS[end]
    return float(entry["estimate"] if key == "estimate" else entry["ci95"][key])


class Difference(BaseModel):
    measure: str
    value_a: float
    value_b: float
    difference: float
    ci95: tuple[float, float]
    shared_cases: int
    labels_a: int
    labels_b: int


def paired_difference(a: RunData, b: RunData, name: str) -> Difference | None:
    """Run b's corrected figure minus run a's (b − a, compare's direction) over their shared cases (module
    docstring); None unless both runs have labels of ``name`` on shared cases."""
    from scipy.stats import norm

    measure = MEASURES[name]
    shared = {case_id(r) for r in a.records} & {case_id(r) for r in b.records}
    labels_a, labels_b = labels_of(a, name), labels_of(b, name)
    if not shared or not set(labels_a) & shared or not set(labels_b) & shared:
        return None
    est_a = estimate_measure(a, measure, labels_a, read_designs(a.path).get(name), shared)
    est_b = estimate_measure(b, measure, labels_b, read_designs(b.path).get(name), shared)
    if est_a is None or est_b is None:
        return None
    diff = est_b.estimate - est_a.estimate  # b − a, as compare's differences
    half = float(norm.ppf(0.975)) * float(np.hypot(est_a.se, est_b.se))
    return Difference(measure=name, value_a=est_a.estimate, value_b=est_b.estimate, difference=diff,
                      ci95=(diff - half, diff + half), shared_cases=len(shared), labels_a=est_a.n_labels,
                      labels_b=est_b.n_labels)
