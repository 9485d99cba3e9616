"""``compare``: paired statistics of runs over the same cases, read from their run folders.

Cases are paired by name; only cases present in every run are compared (``cases.shared``). Each run is
compared with the baseline (``a`` = baseline, ``b`` = the other run, ``diff`` = mean(b - a)). Per metric:
means, bootstrap CI of the difference, paired t / Wilcoxon / permutation tests (continuous) or McNemar's
exact test (binary verdicts), Cohen's d_z, wins/ties/losses, the minimum detectable difference
(``stats.py`` has every formula). The primary p (permutation; McNemar for binary) is Holm-corrected across
the metrics of one pair of runs; ``significant`` = p_holm < 0.05. Regressions: cases that pass a metric's
pass/fail rule (hit@k = 1, a judge's pass, a reference-free score's rule: ``measures.Verdict``) in the baseline and
fail it in the other run. ``run_dirs`` are absolute, so a report of compare.json finds the runs from anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.core.fsutil import atomic_write_text, check_writable_dir
from evaluations.results import measures
from evaluations.results.records import CaseRecord
from evaluations.results.reference_free import kind_of
from evaluations.results.rundata import RunData, label_runs, load_run
from evaluations.experiments.stats import ALPHA, compare_paired, holm

MIN_SEGMENT_CASES = 2


def _relevant(records: list[CaseRecord]) -> dict[str, int]:
    return {str(k): int(v) for k, v in records[0].relevant.items()}


def check_comparable(a: RunData, b: RunData, shared: set[str]) -> None:
    """EvaluationsError unless ``a`` and ``b`` ran on the same dataset (name, fingerprint) and qrels."""
    da, db = a.dataset, b.dataset
    fix = "compare runs of the same dataset, split and filters (re-run one of them)"
    if da.name and db.name and da.name != db.name:
        raise EvaluationsError(f"runs are over different datasets: {a.label} on {da.name!r}, "
                               f"{b.label} on {db.name!r}", where=str(b.path), fix=fix)
    if da.fingerprint and db.fingerprint and da.fingerprint != db.fingerprint:
        raise EvaluationsError(f"runs are over different data: dataset fingerprint {da.fingerprint} "
                               f"({a.label}) vs {db.fingerprint} ({b.label})", where=str(b.path), fix=fix)
    if not shared:
        raise EvaluationsError(f"{a.label} and {b.label} have no case in common", where=str(b.path), fix=fix)
    for case in sorted(shared):
        if _relevant(a.cases[case]) != _relevant(b.cases[case]):
            raise EvaluationsError(
                f"runs use different relevance judgements (qrels): case {case!r} has {_relevant(a.cases[case])} "
                f"in {a.label} but {_relevant(b.cases[case])} in {b.label}", where=str(b.path), fix=fix)


def _default_metrics(runs: list[RunData]) -> list[str]:
    """Default measures every run has, minus those that are 0 for every case of every run (e.g. local cost)."""
    names = [n for n in measures.available(runs[0], defaults_only=True)
             if all(n in measures.available(r, defaults_only=True) for r in runs[1:])]
    return [n for n in names if any(v != 0.0 for r in runs for v in measures.per_case(n, r).values())]


def compare_pair(a: RunData, b: RunData, metrics: list[str], cases: set[str]) -> list[dict[str, Any]]:
    rows = []
    for metric in metrics:
        family = measures.family_of(metric, a)
        va, vb = measures.per_case(metric, a), measures.per_case(metric, b)
        paired = sorted(c for c in cases if c in va and c in vb)
        if not paired:
            continue
        binary = family.binary(metric, a) and family.binary(metric, b)
        stats_ = compare_paired([va[c] for c in paired], [vb[c] for c in paired],
                                higher_is_better=family.higher_is_better, binary=None if binary else False)
        rows.append({"a": a.label, "b": b.label, "metric": metric, "higher_is_better": family.higher_is_better,
                     **stats_})
    adjusted = holm([row["p"].get(row["primary_test"]) for row in rows])
    for row, p_holm in zip(rows, adjusted):
        row["p_holm"] = p_holm
        row["significant"] = p_holm is not None and p_holm < ALPHA
    return rows


def _failed(run: RunData, case: str) -> bool:
    return any(r.status == "failed" or r.qa.status == "failed" for r in run.cases[case])


def regressions(a: RunData, b: RunData, metrics: list[str], cases: set[str]) -> list[dict[str, Any]]:
    """Cases that pass in ``a`` and fail in ``b`` by the pass/fail rule of every higher-is-better metric that has
    one (``measures.Verdict``: 1 / 0 for hit@k and true/false judges, the reference-free scores' own rules): a
    failing value, or no value because the case (or its answer) failed in ``b`` (``value_b`` None). A
    reference-free score that passed in ``a`` and no longer applies in ``b`` (the answer became empty, a refusal
    or an echo; no context was retrieved) is a regression too, its kind in ``now``: a mean over the cases a judge
    applies to would otherwise hide a system that stopped answering."""
    out = []
    for metric in metrics:
        family = measures.family_of(metric, a)
        verdict = family.verdict(metric, a) if family.higher_is_better else None
        if verdict is None:
            continue
        va, vb = measures.per_case(metric, a), measures.per_case(metric, b)
        lapses = metric in measures.REFERENCE_FREE
        for case in sorted(cases):
            if case not in va or not verdict.passes(va[case]):
                continue
            if (case in vb and verdict.fails(vb[case])) or (case not in vb and (lapses or _failed(b, case))):
                row = {"case": case, "metric": metric, "a": a.label, "b": b.label, "value_a": va[case],
                       "value_b": vb.get(case), "rule": verdict.rule}
                if case not in vb and lapses:
                    row["now"] = _kind_now(b, case, metric)
                out.append(row)
    return out


def _kind_now(run: RunData, case: str, metric: str) -> str:
    """Why reference-free ``metric`` has no value for ``case`` in ``run``, named as the summary's kinds name it
    (``reference_free.kind_of``: "case failed", "judge failed", else the judge's kind label)."""
    kinds = [kind_of(metric, record, None) for record in run.cases[case]]
    return next((k for k in kinds if k != "not judged"), "not judged")


def _segments(base: RunData, others: list[RunData], metrics: list[str], shared: set[str]) -> dict[str, Any]:
    out = {}
    for tag, names in sorted(base.tags().items()):
        cases = names & shared
        if len(cases) < MIN_SEGMENT_CASES:
            continue
        out[tag] = {"cases": len(cases),
                    "comparisons": [row for other in others for row in compare_pair(base, other, metrics, cases)]}
    return out


def compare_runs(runs: Sequence[str | Path | RunData], *, baseline: str | None = None,
                 metrics: Sequence[str] | None = None, segments: bool = True) -> dict[str, Any]:
    """The comparison of ``runs`` (folders or loaded runs) as the ``compare.json`` dict.

    ``baseline``: a run's label, folder path or 1-based index (default: the first run).
    ``metrics``: measure names (``measures.py``); default: every default measure all runs have.
    """
    loaded = [r if isinstance(r, RunData) else load_run(r) for r in runs]
    if len(loaded) < 2:
        raise EvaluationsError("compare needs at least two run folders", where="RUN_DIR", fix="give two or more")
    label_runs(loaded)
    base = _pick_baseline(loaded, baseline)
    others = [r for r in loaded if r is not base]
    shared = set(base.cases).intersection(*(r.cases for r in others))
    for other in others:
        check_comparable(base, other, shared or set(base.cases) & set(other.cases))
    if metrics:
        for metric in metrics:
            measures.check_metric(metric, loaded, where="--metrics", per_case_only=True)
        chosen = list(dict.fromkeys(measures.canonical(m) for m in metrics))
    else:
        chosen = _default_metrics([base, *others])
    comparisons = [row for other in others for row in compare_pair(base, other, chosen, shared)]
    return {
        "judges_differ": judge_changes(base, others, chosen),
        "runs": [r.label for r in loaded],
        "run_dirs": {r.label: str(r.path.resolve()) for r in loaded},
        "baseline": base.label,
        "dataset": base.dataset.model_dump(mode="json", exclude_unset=True),
        "alpha": ALPHA,
        "cases": {"shared": len(shared), "only_in": {r.label: len(set(r.cases) - shared) for r in loaded}},
        "metrics": chosen,
        "comparisons": comparisons,
        "regressions": [row for other in others for row in regressions(base, other, chosen, shared)],
        "segments": _segments(base, others, chosen, shared) if segments else {},
        "corrected": corrected_differences(base, others),
    }


def corrected_differences(base: RunData, others: list[RunData]) -> list[dict[str, Any]]:
    """Each run's corrected figure minus the baseline's (b − a), over their shared cases, for every measure both runs have
    labels of (``review.corrected.paired_difference``)."""
    from evaluations.review.corrected import paired_difference
    from evaluations.review.measures import MEASURES

    rows = []
    for other in others:
        for name in MEASURES:
            if name in (other.summary.corrected or {}) and name in (base.summary.corrected or {}):
                diff = paired_difference(base, other, name)
                if diff is not None:
                    rows.append({"a": base.label, "b": other.label, **diff.model_dump(mode="json")})
    return rows


def judge_changes(base: RunData, others: list[RunData], metrics: Sequence[str]) -> list[dict[str, str]]:
    """The compared measures whose judge differs between the baseline and another run (``measures.judged_by``):
    their difference is the judges' as much as the systems'."""
    return [{"metric": metric, "a": base.label, "b": other.label, "judge_a": pair[0], "judge_b": pair[1]}
            for other in others for metric in metrics if (pair := measures.judges_differ(metric, base, other))]


def _pick_baseline(runs: list[RunData], baseline: str | None) -> RunData:
    if baseline is None:
        return runs[0]
    for run in runs:
        if baseline in (run.label, run.name, str(run.path)) or Path(baseline).resolve() == run.path.resolve():
            return run
    if baseline.isdigit() and 1 <= int(baseline) <= len(runs):
        return runs[int(baseline) - 1]
    raise EvaluationsError(f"baseline {baseline!r} is none of the runs compared", where="--baseline",
                           fix="use one of: " + ", ".join(r.label for r in runs) + " (or its folder, or 1-based index)")


def write_compare(result: dict[str, Any], out_dir: Path) -> Path:
    """Write ``out_dir/compare.json`` (the folder made when missing), all or nothing; a folder that cannot be made
    or written (a file in the path, a read-only or virtual file system) is one EvaluationsError naming --out, and
    any folder made for it is removed again."""
    fix = "give --out a folder you can write to (a new or existing folder, not a file)"
    try:
        check_writable_dir(out_dir, fix=fix)
    except EvaluationsError as exc:
        raise EvaluationsError(f"cannot write compare.json there: {exc.message.removeprefix('cannot write: ')}",
                               where=f"--out {out_dir}", fix=fix) from None
    path = out_dir / "compare.json"
    atomic_write_text(path, json.dumps(result, indent=2, ensure_ascii=False), fix=fix)
    return path
