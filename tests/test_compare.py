"""`evaluations compare` on real SciFact runs (BM25 vs hybrid): every statistic against an independent oracle.

Oracles (none of them the call the code makes): statsmodels ``DescrStatsW(d).ttest_mean()`` for the paired t
(the code calls scipy's ``ttest_rel``), the Wilcoxon signed-rank test written out here (exact null distribution
by counting rank subsets; normal approximation with the tie correction when there are zeros or ties), scipy's
``binomtest`` on the discordant pairs for McNemar (the code calls statsmodels), scipy's bootstrap with another
seed, the non-central t for the MDE's power, an exhaustive sign-flip enumeration for the permutation test,
Holm's procedure written out here, and case values read straight from cases.jsonl. Judge verdicts, tokens and
cost are checked on copies of the runs that carry real EVOUNA answers and human verdicts of two systems.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path

import gzip

import numpy as np
import pytest
from conftest import DATA
from scipy import stats
from statsmodels.stats.weightstats import DescrStatsW

from evaluations.cli.root import main
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)

pytestmark = pytest.mark.usefixtures("shared_minilm")

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


def _paired_t_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p of the paired t-test, by statsmodels' one-sample t on the differences."""
    return float(DescrStatsW(b - a).ttest_mean(0.0)[1])


def _wilcoxon_p(d: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p, zero differences dropped (Wilcoxon's rule), average ranks for ties.

    Without zeros or tied |d| and n <= 50: exact, from the null distribution of W+ (the number of subsets of the
    ranks 1..n with each sum), p = 2 min(P(W+ <= w), P(W+ >= w)); otherwise the normal approximation
    z = (w - n(n+1)/4) / sqrt((n(n+1)(2n+1) - sum(t^3 - t)/2) / 24) over the m non-zero differences, no
    continuity correction. (n <= 13 with ties is a permutation test; the runs here have n = 30.)"""
    nonzero = d[d != 0]
    m = len(nonzero)
    ranks = stats.rankdata(np.abs(nonzero))
    w = float(ranks[nonzero > 0].sum())
    _, ties = np.unique(np.abs(nonzero), return_counts=True)
    if len(d) <= 50 and m == len(d) and np.all(ties == 1):
        counts = np.zeros(m * (m + 1) // 2 + 1)
        counts[0] = 1
        for r in range(1, m + 1):
            counts[r:] = counts[r:] + counts[:-r].copy()
        pmf = counts / counts.sum()
        return min(1.0, 2 * min(pmf[: int(np.ceil(w)) + 1].sum(), pmf[int(np.floor(w)):].sum()))
    assert len(d) > 13, "n <= 13 with ties: scipy runs a permutation test this oracle does not write out"
    sd = np.sqrt((m * (m + 1) * (2 * m + 1) - np.sum(ties ** 3 - ties) / 2) / 24)
    return float(2 * stats.norm.sf(abs(w - m * (m + 1) / 4) / sd))


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
    zero_diff_seen = ties_seen = discordant_seen = exact_wilcoxon_seen = False
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
            tied = bool(np.sum(d == 0)) or len(set(np.abs(d[d != 0]))) < np.sum(d != 0)
            ties_seen |= tied
            exact_wilcoxon_seen |= not tied
            assert row["p"]["t"] == pytest.approx(_paired_t_p(a, b))
            assert row["p"]["wilcoxon"] == pytest.approx(_wilcoxon_p(d))
            if np.sum(d != 0) <= 13:  # exact: every sign flip
                assert row["p"]["permutation"] == pytest.approx(_exact_sign_flip_p(d))
            else:  # Monte Carlo (9,999 flips): within sampling error of scipy with another seed. Two estimates of
                # 9,999 flips each differ by a standard deviation of at most sqrt(2 * 0.25 / 9999) = 0.0071; 5 of
                # them (0.02, 2.8 of them, failed once on 2026-12-05 with 0.4858 against 0.508, and passed on rerun)
                other = stats.permutation_test((a, b), lambda x, y, axis: np.mean(y - x, axis=axis),
                                               permutation_type="samples", rng=np.random.default_rng(7)).pvalue
                assert row["p"]["permutation"] == pytest.approx(other, abs=5 * math.sqrt(2 * 0.25 / 9999))
    assert zero_diff_seen and ties_seen and discordant_seen and exact_wilcoxon_seen  # every corner, real runs
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
    a, b = _tagged_copy(scifact_runs["fts"], tmp_path / "a"), _tagged_copy(scifact_runs["hybrid"], tmp_path / "b")
    code, out, _ = cli(["compare", str(a), str(b), "--json", "--metrics", "ndcg@10,mrr@10,hit@10"])
    result = json.loads(out)
    records = [json.loads(line) for line in (a / "cases.jsonl").read_text().splitlines()]
    groups = {tag: sorted(r["name"] for r in records if tag in r["tags"])
              for tag in ("relevant:one", "relevant:several")}
    assert code == 0 and all(len(g) >= 2 for g in groups.values())
    assert set(result["segments"]) == set(groups)
    for tag, names in groups.items():
        segment = result["segments"][tag]
        assert segment["cases"] == len(names)
        va, vb = _case_values(a, "ndcg@10"), _case_values(b, "ndcg@10")
        x, y = np.array([va[n] for n in names]), np.array([vb[n] for n in names])
        row = next(r for r in segment["comparisons"] if r["metric"] == "ndcg@10")
        assert (row["mean_a"], row["mean_b"]) == (pytest.approx(x.mean()), pytest.approx(y.mean()))
        if np.any(x != y):
            assert row["p"]["t"] == pytest.approx(_paired_t_p(x, y))
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


PRICES = {"a": {"input": 0.15, "output": 0.6}, "b": {"input": 2.5, "output": 10.0}}  # USD per 1M tokens
QA_FAILED_CASE = 0  # in run b, the answer stage of this case (in sorted order) failed: no answer, no usage


def _evouna_pairs(n: int) -> list[dict]:
    """The first n proper EVOUNA NQ questions that both FiD and ChatGPT answered with a human verdict."""
    rows = []
    with gzip.open(DATA / "evouna" / "NQ.jsonl.gz", "rt") as handle:
        for row in map(json.loads, handle):
            if not row["improper"] and isinstance(row["judge_fid"], bool) and isinstance(row["judge_chatgpt"], bool):
                rows.append(row)
            if len(rows) == n:
                return rows
    raise AssertionError("EVOUNA NQ has fewer proper rows than asked for")


def _with_answers(run: Path, out: Path, side: str, evouna: list[dict]) -> dict[str, dict]:
    """A copy of ``run`` whose cases carry EVOUNA answers: side a = FiD's answer and human verdict, side b =
    ChatGPT's, as the ``llm_judge`` verdict; tokens = words of the question (+100 prompt) in, of the answer out;
    the summary's prices per side. Returns the records as written (case name -> record)."""
    shutil.copytree(run, out)
    records = sorted((json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()),
                     key=lambda r: r["name"])
    system = {"a": "fid", "b": "chatgpt"}[side]
    for i, (record, row) in enumerate(zip(records, evouna)):
        record["gold_answers"], record["answerable"] = [row["golden_answer"]], True
        if side == "b" and i == QA_FAILED_CASE:
            record["qa"] = {"status": "failed", "error": "model returned malformed JSON"}
            record["answer"], record["usage"] = None, {}
            continue
        answer = row[f"answer_{system}"]
        record["qa"] = {"status": "ok", "mode": "tool"}
        record["answer"] = {"answer": answer, "cited_ids": [], "confidence": None}
        record.setdefault("judges", {})["llm_judge"] = row[f"judge_{system}"]
        record["usage"] = {"input_tokens": 100 + len(row["question"].split()), "output_tokens": len(answer.split())}
    (out / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = json.loads((out / "summary.json").read_text())
    summary.setdefault("answers", {})["cost_usd"] = {"price_per_1m_tokens": PRICES[side]}
    (out / "summary.json").write_text(json.dumps(summary))
    return {r["name"]: r for r in records}


def test_judge_verdicts_tokens_and_cost_against_oracles(scifact_runs, tmp_path, cli):
    """McNemar on real human verdicts (FiD vs ChatGPT on the same EVOUNA questions, a failed answer counted as
    incorrect), and the token and cost measures recomputed from cases.jsonl: lower is better, a case whose answer
    stage ran without recorded usage counts 0 tokens (the summary's rule, docs/experiments.md), the identical
    input tokens giving zero differences on every other case."""
    n = len(_case_values(scifact_runs["fts"], "ndcg@10"))
    evouna = _evouna_pairs(n)
    ra = _with_answers(scifact_runs["fts"], tmp_path / "a", "a", evouna)
    rb = _with_answers(scifact_runs["hybrid"], tmp_path / "b", "b", evouna)
    measures = ["llm_judge", "tokens_per_query", "input_tokens_per_query", "output_tokens_per_query",
                "cost_per_query"]
    code, out, err = cli(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", "--metrics",
                          ",".join(measures)])
    assert code == 0, err
    result = json.loads(out)
    rows = {r["metric"]: r for r in result["comparisons"]}
    assert set(rows) == set(measures)

    # verdicts: a case counts 1 when its answer was judged correct, 0 otherwise (the failed answer included)
    names = sorted(ra)
    va = np.array([float(ra[c]["judges"]["llm_judge"]) for c in names])
    vb = np.array([float(rb[c].get("judges", {}).get("llm_judge") is True) for c in names])
    n01, n10 = int(np.sum((va == 1) & (vb == 0))), int(np.sum((va == 0) & (vb == 1)))
    assert n01 > 0 and n10 > 0  # real disagreement both ways
    judge = rows["llm_judge"]
    assert judge["kind"] == "binary" and judge["higher_is_better"] is True and judge["n"] == n
    both, neither = int(np.sum((va == 1) & (vb == 1))), int(np.sum((va == 0) & (vb == 0)))
    assert judge["table"] == [[both, n01], [n10, neither]]
    assert judge["p"] == {"mcnemar": pytest.approx(stats.binomtest(min(n01, n10), n01 + n10, 0.5).pvalue)}
    assert (judge["mean_a"], judge["mean_b"]) == (pytest.approx(va.mean()), pytest.approx(vb.mean()))
    assert (judge["wins"], judge["ties"], judge["losses"]) == (n10, n - n01 - n10, n01)
    regressed = sorted(r["case"] for r in result["regressions"] if r["metric"] == "llm_judge")
    assert regressed == sorted(c for c, x, y in zip(names, va, vb) if x == 1 and y == 0)
    assert va[QA_FAILED_CASE] == 1 and names[QA_FAILED_CASE] in regressed  # a failed answer is a regression

    # tokens and cost: per case whose answer stage ran, from usage (missing counts 0) and the run's own prices
    def per_case(records: dict[str, dict], prices: dict[str, float]) -> dict[str, dict[str, float]]:
        out = {}
        for name, r in records.items():
            if r["qa"]["status"] != "skipped":
                i, o = r["usage"].get("input_tokens", 0), r["usage"].get("output_tokens", 0)
                out[name] = {"tokens_per_query": i + o, "input_tokens_per_query": i, "output_tokens_per_query": o,
                             "cost_per_query": (i * prices["input"] + o * prices["output"]) / 1e6}
        return out

    ca, cb = per_case(ra, PRICES["a"]), per_case(rb, PRICES["b"])
    paired = sorted(set(ca) & set(cb))
    assert len(paired) == n and cb[names[QA_FAILED_CASE]]["tokens_per_query"] == 0
    same_prompt = np.array([cb[c]["input_tokens_per_query"] - ca[c]["input_tokens_per_query"] for c in paired])
    assert np.count_nonzero(same_prompt) == 1  # only the failed answer's 0 differs
    for metric in measures[1:]:
        row = rows[metric]
        a, b = np.array([ca[c][metric] for c in paired]), np.array([cb[c][metric] for c in paired])
        d = b - a
        assert row["kind"] == "continuous" and row["higher_is_better"] is False and row["n"] == len(paired)
        assert (row["mean_a"], row["mean_b"], row["diff"]) == (pytest.approx(a.mean()), pytest.approx(b.mean()),
                                                              pytest.approx(d.mean()))
        assert (row["wins"], row["ties"], row["losses"]) == (int(np.sum(d < 0)), int(np.sum(d == 0)),
                                                             int(np.sum(d > 0)))
        assert row["p"]["t"] == pytest.approx(_paired_t_p(a, b))
        assert row["p"]["wilcoxon"] == pytest.approx(_wilcoxon_p(d))
    assert rows["output_tokens_per_query"]["ties"] > 0  # some answers have the same length in both systems


def test_a_measure_without_paired_values_is_left_out(scifact_runs, tmp_path, cli):
    """A judge scored on disjoint cases in the two runs has nothing to pair: no row, no error."""
    def scored(run: Path, out: Path, parity: int) -> Path:
        shutil.copytree(run, out)
        records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
        for i, record in enumerate(records):
            if i % 2 == parity:
                record.setdefault("judges", {})["token_f1"] = 0.5
        (out / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        return out

    a, b = scored(scifact_runs["fts"], tmp_path / "a", 0), scored(scifact_runs["hybrid"], tmp_path / "b", 1)
    code, out, err = cli(["compare", str(a), str(b), "--json", "--metrics", "token_f1,ndcg@10"])
    assert code == 0 and "Traceback" not in err
    assert [r["metric"] for r in json.loads(out)["comparisons"]] == ["ndcg@10"]


def test_a_metric_one_run_lacks_names_the_run_and_its_cut_offs(scifact_runs, tmp_path, cli):
    """Runs scored at other cut-offs: the error names the run without the metric and its cut-offs, and lists only
    metrics every run has (it said "unknown metric 'ndcg@10'" and listed ndcg@10 among those to use)."""
    from conftest import assert_one_error

    root = scifact_runs["fts"].parent
    short = tmp_path / "k1-5"
    code, _, err = cli(["beir", str(root / "data"), "--search-mode", "fts", "--skip-qa", "--no-progress", "--k", "1,5",
                        "--config", str(root / "base.yaml"), "--db", str(root / "db-base"), "--out", str(short)])
    assert code == 0, err
    code, out, err = cli(["compare", str(scifact_runs["fts"]), str(short), "--metrics", "ndcg@10"])
    assert_one_error(code, out + err, f"'ndcg@10' has values in {scifact_runs['fts']} but none in {short} "
                                      "(its cut-offs: 1, 5)")
    listed = err.split("use a metric every run has: ")[1].split(";")[0].split(", ")
    assert "ndcg@5" in listed and "mrr@1" in listed and not {"ndcg@10", "ndcg@3", "recall@100"} & set(listed)
    code, out, _ = cli(["compare", str(scifact_runs["fts"]), str(short), "--metrics", "ndcg@5", "--json"])
    assert code == 0 and [r["metric"] for r in json.loads(out)["comparisons"]] == ["ndcg@5"]
