"""`evaluations compare` on real SciFact runs (BM25 vs hybrid): every statistic against an independent oracle.

Oracles: scipy (ttest_rel, wilcoxon, binomtest for exact McNemar, bootstrap, non-central t for the MDE's
power), an exhaustive sign-flip enumeration for the permutation test, Holm's procedure written out here,
and case values read straight from cases.jsonl.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from evaluations.cli.root import main

ISSUE_KEYS = {"a", "b", "metric", "kind", "mean_a", "mean_b", "diff", "ci95", "effect_size", "p", "p_holm",
              "significant", "wins", "ties", "losses", "mde"}


def _case_values(run: Path, metric: str) -> dict[str, float]:
    """The oracle's own read of cases.jsonl: retrieval metric per case (latency: the case's total)."""
    out = {}
    for line in (run / "cases.jsonl").read_text().splitlines():
        record = json.loads(line)
        if metric == "latency_ms":
            out[record["name"]] = record["latency_ms"]["total"]
        else:
            out[record["name"]] = record["metrics"][metric]
    return out


def _exact_sign_flip_p(diffs: np.ndarray) -> float:
    """Two-sided exact paired permutation p: every sign assignment of the non-zero differences."""
    nonzero = diffs[diffs != 0]
    observed = abs(nonzero.mean()) if len(nonzero) else 0.0
    flips = [abs(np.mean(nonzero * np.array(signs))) for signs in itertools.product((1, -1), repeat=len(nonzero))]
    return float(np.mean([f >= observed - 1e-12 for f in flips]))


def _holm(ps: list[float]) -> list[float]:
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


@pytest.fixture(scope="module")
def comparison(scifact_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    main(["compare", str(scifact_runs["fts"]), str(scifact_runs["hybrid"]), "--out", str(out), "--no-cases"])
    return json.loads((out / "compare.json").read_text())


def test_compare_json_shape_and_cases(comparison, scifact_runs):
    assert comparison["runs"] == ["scifact-fts", "scifact-hybrid"] and comparison["baseline"] == "scifact-fts"
    assert comparison["cases"] == {"shared": 30, "only_in": {"scifact-fts": 0, "scifact-hybrid": 0}}
    metrics = {row["metric"] for row in comparison["comparisons"]}
    assert {"ndcg@10", "mrr@10", "p@5", "recall@100", "hit@1", "latency_ms"} <= metrics
    for row in comparison["comparisons"]:
        assert ISSUE_KEYS <= set(row), row["metric"]
        assert (row["a"], row["b"]) == ("scifact-fts", "scifact-hybrid")
        assert set(row["p"]) == ({"mcnemar"} if row["kind"] == "binary" else {"t", "wilcoxon", "permutation"})
        assert row["kind"] == ("binary" if row["metric"].startswith("hit@") else "continuous")
    for reg in comparison["regressions"]:
        assert set(reg) >= {"case", "metric", "a", "b"}


def test_every_statistic_matches_independent_oracles(comparison, scifact_runs):
    zero_diff_seen = ties_seen = discordant_seen = False
    for row in comparison["comparisons"]:
        a_vals = _case_values(scifact_runs["fts"], row["metric"])
        b_vals = _case_values(scifact_runs["hybrid"], row["metric"])
        names = sorted(a_vals)
        a, b = np.array([a_vals[n] for n in names]), np.array([b_vals[n] for n in names])
        d = b - a
        assert row["n"] == len(d)
        assert row["mean_a"] == pytest.approx(a.mean()) and row["mean_b"] == pytest.approx(b.mean())
        assert row["diff"] == pytest.approx(d.mean())
        higher_better = row["metric"] != "latency_ms"
        sign = 1 if higher_better else -1
        assert (row["wins"], row["ties"], row["losses"]) == (
            int(np.sum(sign * d > 0)), int(np.sum(d == 0)), int(np.sum(sign * d < 0)))
        if np.all(d == 0):
            zero_diff_seen = True
            assert row["ci95"] == [0.0, 0.0] and all(p == 1.0 for p in row["p"].values())
            assert row["effect_size"] == 0.0 and row["mde"] == 0.0
            continue
        sd = d.std(ddof=1)
        assert row["effect_size"] == pytest.approx(d.mean() / sd)
        # MDE: a paired t-test at this n has power 0.8 at the reported difference (non-central t)
        n = len(d)
        crit = stats.t.ppf(0.975, n - 1)
        nc = row["mde"] / sd * np.sqrt(n)
        power = 1 - stats.nct.cdf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc)
        assert power == pytest.approx(0.8, abs=1e-4)
        # paired bootstrap CI: scipy resampling the (a, b) pairs together (paired=True, BCa) with another seed
        # gives the same interval up to resampling noise
        boot = stats.bootstrap((a, b), lambda x, y, axis: np.mean(y - x, axis=axis), paired=True,
                               n_resamples=9999, rng=np.random.default_rng(123)).confidence_interval
        if np.isfinite(boot.low) and np.isfinite(boot.high):
            width = boot.high - boot.low
            assert row["ci95"][0] == pytest.approx(boot.low, abs=0.2 * width + 1e-9)
            assert row["ci95"][1] == pytest.approx(boot.high, abs=0.2 * width + 1e-9)
        assert row["ci95"][0] <= d.mean() <= row["ci95"][1]
        if row["kind"] == "binary":
            n01, n10 = int(np.sum((a == 1) & (b == 0))), int(np.sum((a == 0) & (b == 1)))
            discordant_seen |= n01 + n10 > 0
            oracle = stats.binomtest(min(n01, n10), n01 + n10, 0.5).pvalue if n01 + n10 else 1.0
            assert row["p"]["mcnemar"] == pytest.approx(oracle)
        else:
            ties_seen |= bool(np.sum(d == 0)) or len(set(np.abs(d[d != 0]))) < np.sum(d != 0)
            assert row["p"]["t"] == pytest.approx(stats.ttest_rel(b, a).pvalue)
            assert row["p"]["wilcoxon"] == pytest.approx(stats.wilcoxon(d).pvalue)
            if np.sum(d != 0) <= 13:  # exact: every sign flip
                assert row["p"]["permutation"] == pytest.approx(_exact_sign_flip_p(d))
            else:  # Monte Carlo (9,999 flips): within sampling error of scipy with another seed
                other = stats.permutation_test((a, b), lambda x, y, axis: np.mean(y - x, axis=axis),
                                               permutation_type="samples", rng=np.random.default_rng(7)).pvalue
                assert row["p"]["permutation"] == pytest.approx(other, abs=0.02)
    assert zero_diff_seen and ties_seen and discordant_seen  # the real runs exercise every corner
    primaries = [row["p"]["mcnemar" if row["kind"] == "binary" else "permutation"] for row in comparison["comparisons"]]
    for row, expected in zip(comparison["comparisons"], _holm(primaries)):
        assert row["p_holm"] == pytest.approx(expected)
        assert row["significant"] == (expected < 0.05)


def test_regressions_are_the_pass_to_fail_cases(comparison, scifact_runs):
    expected = []
    for metric in sorted({r["metric"] for r in comparison["comparisons"] if r["metric"].startswith("hit@")}):
        a, b = _case_values(scifact_runs["fts"], metric), _case_values(scifact_runs["hybrid"], metric)
        expected += [(case, metric) for case in a if a[case] == 1.0 and b[case] == 0.0]
    assert sorted((r["case"], r["metric"]) for r in comparison["regressions"]) == sorted(expected)


def test_three_runs_each_against_the_baseline(scifact_runs, cli):
    code, out, _ = cli(["compare", *(str(scifact_runs[k]) for k in ("fts", "hybrid", "worse")),
                         "--baseline", "scifact-hybrid", "--json", "--metrics", "ndcg@10,hit@10"])
    result = json.loads(out)
    assert code == 0 and result["baseline"] == "scifact-hybrid"
    assert {(r["a"], r["b"], r["metric"]) for r in result["comparisons"]} == {
        ("scifact-hybrid", b, m) for b in ("scifact-fts", "scifact-worse") for m in ("ndcg@10", "hit@10")}


def test_compare_refuses_different_qrels_or_dataset(scifact_runs, tmp_path, cli):
    other = tmp_path / "other"
    shutil.copytree(scifact_runs["hybrid"], other)
    lines = (other / "cases.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["relevant"] = {"nonexistent-doc": 1}
    (other / "cases.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    code, _, err = cli(["compare", str(scifact_runs["fts"]), str(other)])
    assert code == 2 and "different relevance judgements" in err and record["name"] in err
    summary = json.loads((other / "summary.json").read_text())
    summary["dataset"]["fingerprint"] = "0" * 64
    (other / "summary.json").write_text(json.dumps(summary))
    code, _, err = cli(["compare", str(scifact_runs["fts"]), str(other)])
    assert code == 2 and "fingerprint" in err
    code, _, err = cli(["compare", str(scifact_runs["fts"]), str(scifact_runs["hybrid"]), "--metrics", "ndcg@7"])
    assert code == 2 and "'ndcg@7'" in err


def test_console_view(scifact_runs, cli):
    code, out, _ = cli(["compare", str(scifact_runs["fts"]), str(scifact_runs["hybrid"]), "--cases"])
    assert code == 0
    assert "Evaluation Diff" in out  # pydantic-evals' own baseline rendering from report.json
    assert "scifact-hybrid vs scifact-fts" in out and "ndcg@10" in out and "p_holm" in out


def _tagged_copy(run: Path, dest: Path) -> Path:
    """The run with a segment tag per case from its real qrels: one relevant document or several."""
    shutil.copytree(run, dest)
    records = [json.loads(line) for line in (dest / "cases.jsonl").read_text().splitlines()]
    for record in records:
        record["tags"] = ["relevant:several" if len(record["relevant"]) > 1 else "relevant:one"]
    (dest / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return dest


def test_segments_per_tag(scifact_runs, tmp_path, cli):
    from evaluations.results.segments import segment_metrics

    a, b = _tagged_copy(scifact_runs["fts"], tmp_path / "a"), _tagged_copy(scifact_runs["hybrid"], tmp_path / "b")
    code, out, _ = cli(["compare", str(a), str(b), "--json", "--metrics", "ndcg@10,mrr@10,hit@10"])
    result = json.loads(out)
    records = [json.loads(line) for line in (a / "cases.jsonl").read_text().splitlines()]
    groups = {tag: sorted(r["name"] for r in records if tag in r["tags"])
              for tag in ("relevant:one", "relevant:several")}
    assert code == 0 and all(len(g) >= 2 for g in groups.values())
    assert set(result["segments"]) == set(groups)
    per_tag = segment_metrics(records)
    for tag, names in groups.items():
        segment = result["segments"][tag]
        assert segment["cases"] == len(names) == per_tag[tag]["cases"]
        va, vb = _case_values(a, "ndcg@10"), _case_values(b, "ndcg@10")
        x, y = np.array([va[n] for n in names]), np.array([vb[n] for n in names])
        row = next(r for r in segment["comparisons"] if r["metric"] == "ndcg@10")
        assert (row["mean_a"], row["mean_b"]) == (pytest.approx(x.mean()), pytest.approx(y.mean()))
        assert per_tag[tag]["metrics"]["ndcg@10"] == pytest.approx(x.mean())
        if np.any(x != y):
            assert row["p"]["t"] == pytest.approx(stats.ttest_rel(y, x).pvalue)
        assert len(segment["comparisons"]) == 3


@pytest.mark.parametrize("copies", [1, 4, 10])  # n = 30, 120 (statsmodels returns an array there), 300
def test_mde_has_power_point_eight_at_any_n(scifact_runs, copies):
    from evaluations.experiments.stats import mde

    a, b = _case_values(scifact_runs["fts"], "ndcg@10"), _case_values(scifact_runs["worse"], "ndcg@10")
    d = np.tile([b[n] - a[n] for n in sorted(a)], copies)
    n, sd = len(d), d.std(ddof=1)
    crit, nc = stats.t.ppf(0.975, n - 1), mde(d) / sd * np.sqrt(n)
    assert 1 - stats.nct.cdf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc) == pytest.approx(0.8, abs=1e-4)


def _with_waste(run: Path, out: Path, waste: dict[str, float]) -> Path:
    shutil.copytree(run, out)
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    for record in records:
        record.setdefault("judges", {})["context_waste"] = waste[record["name"]]
    (out / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


def test_context_waste_is_lower_is_better(scifact_runs, tmp_path, cli):
    """A run that wastes less context wins on context_waste (its wins are the cases where it is lower)."""
    names = sorted(_case_values(scifact_runs["fts"], "ndcg@10"))
    rng = np.random.default_rng(3)
    a = {n: float(rng.uniform(0.3, 0.9)) for n in names}
    b = {n: a[n] - 0.2 if i % 4 else a[n] + 0.1 for i, n in enumerate(names)}
    run_a = _with_waste(scifact_runs["fts"], tmp_path / "a", a)
    run_b = _with_waste(scifact_runs["hybrid"], tmp_path / "b", b)
    code, out, _ = cli(["compare", str(run_a), str(run_b), "--json", "--metrics", "context_waste"])
    row = next(r for r in json.loads(out)["comparisons"] if r["metric"] == "context_waste")
    lower = sum(b[n] < a[n] for n in names)
    assert code == 0 and row["higher_is_better"] is False
    assert (row["wins"], row["ties"], row["losses"]) == (lower, 0, len(names) - lower)
    assert row["diff"] == pytest.approx(np.mean([b[n] - a[n] for n in names]))
