"""`evaluations gate` and the pytest helper on real SciFact runs: values, verdicts, exit codes, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from evaluations.core.errors import EvaluationsError
from evaluations.experiments.pytest_gate import assert_gate

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "gate.yaml"


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines()]


def test_example_rules_pass_on_the_baseline_itself(scifact_runs, cli):
    code, out, _ = cli(["gate", str(scifact_runs["fts"]), "--baseline", str(scifact_runs["fts"]),
                         "--rules", str(EXAMPLE)])
    assert code == 0 and out.startswith("gate PASS")


def test_worse_run_breaks_the_gate_with_readable_reasons(scifact_runs, cli):
    fts, worse = scifact_runs["fts"], scifact_runs["worse"]
    code, out, _ = cli(["gate", str(worse), "--baseline", str(fts), "--rules", str(EXAMPLE), "--json"])
    result = json.loads(out)
    assert code == 1 and not result["passed"]
    checks = {c["text"]: c for c in result["checks"]}
    summary = json.loads((worse / "summary.json").read_text())
    # values equal the run pipeline's own summary.json
    ndcg = next(c for t, c in checks.items() if t.startswith("ndcg@10"))
    assert ndcg["value"] == pytest.approx(summary["metrics"]["ndcg@10"])
    p95 = next(c for t, c in checks.items() if t.startswith("latency_p95_ms <="))
    assert p95["value"] == pytest.approx(np.percentile([r["latency_ms"]["total"] for r in _records(worse)], 95))
    # BM25 over 8-token chunks loses documents: hit@10 regressions read straight from both cases.jsonl
    base_hit = {r["name"]: r["metrics"]["hit@10"] for r in _records(fts)}
    lost = sorted(r["name"] for r in _records(worse) if base_hit[r["name"]] == 1.0 and r["metrics"]["hit@10"] == 0.0)
    assert lost, "the subset has a query that BM25 over tiny chunks loses from the top 10"
    zero = next(c for c in result["checks"] if c["rule"] == {"zero_tolerance": "hit@10"})
    assert not zero["holds"] and sorted(zero["regressed_cases"]) == lost
    recall = next(c for t, c in checks.items() if t.startswith("recall@100"))
    base_recall = json.loads((fts / "summary.json").read_text())["metrics"]["recall@100"]
    assert recall["baseline"] == pytest.approx(base_recall)
    assert recall["holds"] == (summary["metrics"]["recall@100"] >= base_recall * 0.98 - 1e-12)
    broken = [c["text"] for c in result["checks"] if not c["holds"]]
    assert result["broken"] and len(result["broken"]) == len(broken)
    code, text, _ = cli(["gate", str(worse), "--baseline", str(fts), "--rules", str(EXAMPLE)])
    assert code == 1 and text.startswith(f"gate FAIL: {len(broken)} of {len(result['checks'])} rules broken")
    assert "✗ hit@10" in text and all(case in text for case in lost)


def test_only_if_significant_uses_the_paired_test(scifact_runs, tmp_path, cli):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: mrr@10, max_drop: 0.0, only_if_significant: true}\n"
                     "  - {metric: hit@10, max_drop: 0.0, only_if_significant: true}\n"
                     "  - {metric: hit@10, max_drop: 0.0}\n")
    fts, worse = str(scifact_runs["fts"]), str(scifact_runs["worse"])
    code, out, _ = cli(["gate", worse, "--baseline", fts, "--rules", str(rules), "--json"])
    mrr, hit_sig, hit_plain = json.loads(out)["checks"]
    code, out, _ = cli(["compare", fts, worse, "--metrics", "mrr@10,hit@10", "--json", "--no-segments"])
    p = {r["metric"]: r["p_holm"] for r in json.loads(out)["comparisons"]}  # Holm over the same two measures
    assert mrr["change"] < 0 and hit_sig["change"] < 0  # both fell in the worse run
    assert mrr["p_holm"] == pytest.approx(p["mrr@10"]) and hit_sig["p_holm"] == pytest.approx(p["hit@10"])
    assert mrr["holds"] == (p["mrr@10"] >= 0.05)
    # one lost case is no evidence (McNemar p = 1): the significance-gated rule holds, the plain one breaks
    assert hit_sig["holds"] and "not significant" in hit_sig["note"] and not hit_plain["holds"]


@pytest.mark.parametrize("text, needle", [
    ("rules:\n  - {metric: ndcg@11, min: 0.5}\n", "'ndcg@11'"),
    ("rules:\n  - {metric: ndcg@10, minimum: 0.5}\n", "'minimum'"),
    ("rules: []\nzero_tolerence: [hit@10]\n", "'zero_tolerence'"),
    ("rules:\n  - {metric: ndcg@10}\n", "at least one of"),
    ("zero_tolerance: [ndcg@10]\n", "not a pass/fail verdict"),
])
def test_bad_rules_exit_2_naming_the_problem(scifact_runs, tmp_path, cli, text, needle):
    rules = tmp_path / "rules.yaml"
    rules.write_text(text)
    code, _, err = cli(["gate", str(scifact_runs["worse"]), "--baseline", str(scifact_runs["fts"]),
                         "--rules", str(rules)])
    assert code == 2 and needle in err


def test_relative_rule_without_baseline_is_bad_input(scifact_runs, cli):
    code, _, err = cli(["gate", str(scifact_runs["fts"]), "--rules", str(EXAMPLE)])
    assert code == 2 and "--baseline" in err


def test_pytest_helper(scifact_runs):
    """The documented helper: `pytest -k eval` gates in CI."""
    held = assert_gate(scifact_runs["fts"], {"rules": [{"metric": "ndcg@10", "min": 0.1}]})
    assert held["passed"]
    with pytest.raises(AssertionError, match="hit@10"):
        assert_gate(scifact_runs["worse"], EXAMPLE, baseline=scifact_runs["fts"])
    with pytest.raises(EvaluationsError, match="unknown metric"):
        assert_gate(scifact_runs["fts"], {"rules": [{"metric": "bleu", "min": 0.1}]})
    # a reference-free judge the run did not compute is not "unknown": the error says what it needs
    with pytest.raises(EvaluationsError, match="the run has no 'faithfulness' values: it needs answers") as err:
        assert_gate(scifact_runs["fts"], {"rules": [{"metric": "faithfulness", "min": 0.5}]})
    assert "judge.reference_free" in (err.value.fix or "")


def test_significance_rule_without_paired_values_breaks_readably(scifact_runs, tmp_path, cli):
    """A judge scored on disjoint cases in the two runs: no case can be paired, so the change cannot be measured and
    the rule breaks, saying so (no KeyError traceback, exit 1, the reason in the check)."""
    def scored(run: Path, out: Path, parity: int, value: float) -> Path:
        shutil.copytree(run, out)
        records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
        for i, record in enumerate(records):
            if i % 2 == parity:
                record.setdefault("judges", {})["token_f1"] = value
        (out / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        return out

    base = scored(scifact_runs["fts"], tmp_path / "base", 0, 0.9)
    run = scored(scifact_runs["worse"], tmp_path / "run", 1, 0.1)
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: token_f1, max_drop: 0.1, only_if_significant: true}\n")
    code, out, err = cli(["gate", str(run), "--baseline", str(base), "--rules", str(rules), "--json"])
    (check,) = json.loads(out)["checks"]
    assert code == 1 and "Traceback" not in err
    n = len([line for line in (base / "cases.jsonl").read_text().splitlines()])
    assert not check["holds"] and "change" not in check
    assert check["problems"] == [f"no case has a value in both runs (this run {n // 2}, the baseline {n - n // 2} of "
                                 f"the {n} shared cases): the change cannot be measured"]


def test_a_relative_rule_pairs_the_cases_and_zero_tolerance_names_why():
    """Baseline faithfulness a 1.0, b 0.5, c 1.0; the run's judge failed on c. Over the cases with a value in both
    runs (a, b) the means are 0.75 and 0.75: no drop (unpaired, 0.75 against the baseline's 0.8333 was -10%, over a
    5% limit). c passed and now has no value: a zero-tolerance regression, its reason named."""
    from evaluations.experiments.gate import Rules, render, run_gate
    from evaluations.results.records import CaseRecord, JudgeError, QARecord
    from evaluations.results.rundata import RunData

    def record(name: str, value: float | None) -> CaseRecord:
        errors = [JudgeError(evaluator="faithfulness", error="HTTP 500")] if value is None else []
        return CaseRecord(name=name, case=name, query=f"question {name}", qa=QARecord(status="ok"),
                          judges={} if value is None else {"faithfulness": value},
                          judge_labels={} if value is None else {"faithfulness_kind": "claims"}, judge_errors=errors)

    base = RunData(path=Path("base"), records=[record("a", 1.0), record("b", 0.5), record("c", 1.0)])
    run = RunData(path=Path("run"), records=[record("a", 1.0), record("b", 0.5), record("c", None)])
    rules = Rules.model_validate({"rules": [{"metric": "faithfulness", "max_drop": 0.05}],
                                  "zero_tolerance": ["faithfulness"]})
    result = run_gate(run, rules, base)
    relative, zero = result["checks"]
    assert relative["holds"] and relative["value_shared"] == relative["baseline"] == 0.75
    assert (relative["paired_cases"], relative["shared_cases"]) == (2, 3)
    assert not zero["holds"] and zero["regressed_cases"] == ["c"]
    text = render(result)
    assert "2 of 3 shared cases with a value in both 0.75 vs baseline 0.75, +0.0%" in text
    assert "1 case(s) passed in the baseline and fail now: c (now judge failed)" in text


def test_a_rule_on_a_judge_that_ran_with_nothing_to_judge_says_so():
    """The run asked for faithfulness (its summary lists it) but answered nothing (retrieval only): the error says
    the judge ran with nothing to judge and how to give it answers, not to turn on a judge that was on."""
    from evaluations.core.errors import EvaluationsError
    from evaluations.experiments.gate import Rules, run_gate
    from evaluations.results.records import CaseRecord
    from evaluations.results.rundata import RunData, RunSummary

    summary = RunSummary.model_validate({"reference_free": {"metrics": {"faithfulness": {"mean": None, "n": 0}}}})
    run = RunData(path=Path("run"), summary=summary, records=[
        CaseRecord(name=n, case=n, query=f"question {n}", metrics={"ndcg@10": 0.5},
                   latency_ms={"embed": 1.0, "retrieve": 2.0, "total": 3.0}) for n in ("a", "b")])
    with pytest.raises(EvaluationsError) as err:
        run_gate(run, Rules.model_validate({"rules": [{"metric": "faithfulness", "min": 0.9}]}))
    assert "its judge ran on run but had nothing to judge" in str(err.value)
    assert "not --skip-qa, or a --system that returns an answer" in err.value.fix
    assert "judge.reference_free listing" not in err.value.fix and "latency_llm_ms" not in err.value.fix
