"""Percentiles and confidence calibration against independent oracles, on real data.

- latency percentiles: summary.json's ``latency_ms`` (p50/p95/p99/mean/max, per stage too) of a real SciFact run
  vs ``numpy.percentile`` of the per-case latencies read straight from its cases.jsonl;
- calibration (``results.confidence.calibration``, used by ``score`` logs and the run's calibration block): on
  real EVOUNA answers with their human labels, confidence = the answer's token F1 against its gold answers
  (many ties at 0, 1 and exactly on bin edges such as 0.5); oracles written here: bins by the right-closed rule
  in plain Python, Brier as mean squared error, Pearson r by ``numpy.corrcoef``, Spearman by ``numpy.corrcoef``
  of ``scipy.stats.rankdata`` ranks.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import DATA
from scipy.stats import rankdata
from sklearn.calibration import calibration_curve

from evaluations.judging.labels.data import load_labelled
from evaluations.judging.correctness.lexical import token_f1
from evaluations.results.calibration import reliability
from evaluations.results.confidence import calibration
from evaluations.results.stats import distribution, percentile


@pytest.fixture(scope="module")
def evouna_pairs() -> tuple[list[float], list[bool]]:
    """The first 600 labelled EVOUNA NQ answers: (token F1 against the gold answers, human label)."""
    rows = load_labelled(DATA / "evouna" / "NQ.jsonl.gz", limit=600)
    return [token_f1(list(e.references), e.answer) for e in rows], [bool(e.label) for e in rows]


def _oracle_bins(c: list[float], y: list[bool], bins: int) -> dict[int, tuple[int, float, float]]:
    """{bin: (n, mean confidence, accuracy)}: bin 1 is [0, 1/B], bin j is ((j-1)/B, j/B]."""
    members: dict[int, list[int]] = {}
    for i, value in enumerate(c):
        j = next(j for j in range(1, bins + 1) if value <= j / bins)
        members.setdefault(j, []).append(i)
    return {j: (len(ix), sum(c[i] for i in ix) / len(ix), sum(y[i] for i in ix) / len(ix))
            for j, ix in sorted(members.items())}


def test_summary_latency_percentiles_are_numpys_on_the_cases(scifact_runs):
    for run in scifact_runs.values():
        summary = json.loads((run / "summary.json").read_text())
        records = [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines()]
        ok = [r for r in records if r["status"] == "ok"]
        total = np.array([r["latency_ms"]["total"] for r in ok])
        assert len(set(total)) > 10  # real timings, not a constant
        latency = summary["latency_ms"]
        for q in (50, 95, 99):
            assert latency[f"p{q}"] == pytest.approx(float(np.percentile(total, q)), rel=1e-12)
        assert latency["mean"] == pytest.approx(total.mean())
        assert latency["by_stage"]["total"]["max"] == total.max()
        for stage, values in latency["by_stage"].items():
            # a stage that did not run (no reranker, no QA agent here) is not recorded: no values, no percentile
            times = np.array([r["latency_ms"][stage] for r in ok if stage in r["latency_ms"]])
            assert values["n"] == len(times), stage
            if not len(times):
                assert values["p50"] is None and values["max"] is None, stage
                continue
            assert values["max"] == times.max(), stage
            for q in (50, 95, 99):
                assert values[f"p{q}"] == pytest.approx(float(np.percentile(times, q)), rel=1e-12), stage
        assert latency["by_stage"]["total"]["n"] == len(ok)  # every case that ran has a total


def test_percentile_and_distribution_edges():
    assert percentile([], 50) is None
    assert distribution([]) == {"n": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    assert distribution([None, 4.0]) == {"n": 1, "mean": 4.0, "p50": 4.0, "p95": 4.0, "p99": 4.0, "max": 4.0}
    # ties and interpolation by hand: sorted [1, 2, 2, 2, 10], rank 0.95 * 4 = 3.8 -> 2 + 0.8 * (10 - 2) = 8.4
    assert percentile([2, 10, 2, 1, 2], 95) == pytest.approx(8.4)
    assert percentile([2, 10, 2, 1, 2], 50) == 2.0


def test_calibration_matches_hand_written_oracles_on_evouna(evouna_pairs):
    c, y = evouna_pairs
    assert 0.3 < np.mean(y) < 0.95 and sum(v == 0.5 for v in c) > 0 and sum(v in (0.0, 1.0) for v in c) > 100
    result = calibration(c, y, bins=10)
    oracle = _oracle_bins(c, y, 10)
    assert [(b["range"], b["n"]) for b in result["buckets"]] == [([(j - 1) / 10, j / 10], n)
                                                                 for j, (n, _, _) in oracle.items()]
    for bucket, (n, conf, acc) in zip(result["buckets"], oracle.values()):
        assert bucket["confidence"] == pytest.approx(conf) and bucket["accuracy"] == pytest.approx(acc)
    gaps = [abs(acc - conf) for n, conf, acc in oracle.values()]
    assert result["ece"] == pytest.approx(sum(n / len(c) * g for (n, _, _), g in zip(oracle.values(), gaps)))
    assert result["mce"] == pytest.approx(max(gaps))
    assert result["brier"] == pytest.approx(sum((ci - yi) ** 2 for ci, yi in zip(c, y)) / len(c))
    assert result["pointbiserial_r"] == pytest.approx(np.corrcoef(c, y)[0, 1])
    assert result["spearman_rho"] == pytest.approx(np.corrcoef(rankdata(c), rankdata(y))[0, 1])
    assert result["n"] == len(c) and result["accuracy"] == pytest.approx(np.mean(y))
    # five bins: the edges move, the rule is the same
    five = calibration(c, y, bins=5)
    assert [b["n"] for b in five["buckets"]] == [n for n, _, _ in _oracle_bins(c, y, 5).values()]


def test_calibration_empty_constant_and_single_inputs():
    empty = calibration([], [])
    assert empty["n"] == 0 and empty["buckets"] == [] and empty["ece"] is None and empty["brier"] is None
    # every outcome the same: no correlation, but bins, ECE and Brier are defined
    same = calibration([0.2, 0.2, 0.9], [True, True, True], bins=10)
    assert same["pointbiserial_r"] is None and same["spearman_rho"] is None
    assert [b["n"] for b in same["buckets"]] == [2, 1]
    assert same["ece"] == pytest.approx(2 / 3 * 0.8 + 1 / 3 * 0.1) and same["mce"] == pytest.approx(0.8)
    assert same["brier"] == pytest.approx((0.64 + 0.64 + 0.01) / 3)
    # constant confidence: no correlation either
    flat = calibration([0.7, 0.7], [True, False])
    assert flat["pointbiserial_r"] is None and flat["spearman_rho"] is None and flat["ece"] == pytest.approx(0.2)
    one = calibration([1.0], [False])
    assert one["buckets"] == [{"range": [0.9, 1.0], "n": 1, "confidence": 1.0, "accuracy": 0.0}]
    assert one["brier"] == 1.0 and one["pointbiserial_r"] is None and math.isclose(one["ece"], 1.0)
    # 0.0 sits in the first bin, 0.1 too (right-closed), 0.1000001 in the second
    edges = calibration([0.0, 0.1, 0.1000001], [False, False, True])
    assert [(b["range"], b["n"]) for b in edges["buckets"]] == [([0.0, 0.1], 2), ([0.1, 0.2], 1)]


def test_reliability_drops_and_clips_like_its_docstring(evouna_pairs):
    """The run's calibration (results.calibration.reliability): pairs without a probability or a truth are dropped
    and counted, probabilities are clipped to [0, 1]; the rest is binned as above."""
    c, y = evouna_pairs
    broken = [(None, True), (0.4, None), (float("nan"), False), (True, True), (1.7, False), (-0.2, True)]
    result = reliability("token_f1", [*zip(c, y), *broken], probability="token F1", truth="human label")
    kept_c, kept_y = [*c, 1.0, 0.0], [*y, False, True]
    assert (result.n, result.dropped) == (len(c) + 2, 4)
    oracle = _oracle_bins(kept_c, kept_y, 10)
    assert [b["n"] for b in result.bins] == [n for n, _, _ in oracle.values()]
    assert result.ece == pytest.approx(sum(n / len(kept_c) * abs(acc - conf) for n, conf, acc in oracle.values()))
    assert result.brier == pytest.approx(np.mean((np.array(kept_c) - np.array(kept_y)) ** 2))
    # and scikit-learn's own reliability curve over the same pairs
    accuracy, confidence = calibration_curve(kept_y, kept_c, n_bins=10, strategy="uniform")
    assert [b["accuracy"] for b in result.bins] == pytest.approx(list(accuracy))
    assert [b["confidence"] for b in result.bins] == pytest.approx(list(confidence))
    empty = reliability("nothing", [(None, None)], probability="p", truth="t")
    assert (empty.n, empty.dropped, empty.ece, empty.bins) == (0, 1, None, [])
