"""Runs made by the previous version (commit 751b299) still load, summarise, compare, gate, record and report.

``tests/data/runs_751b299/`` holds two run folders that version's CLI wrote (``summary.json`` + ``cases.jsonl``):
``retrieval`` (5 SciFact test queries over 26 documents, BM25, retrieval only) and ``answers`` (6 RepliQA questions,
hybrid search, answers from the protocol-level test LLM server, judged by the lexical, offline and served LLM
judges). The texts of the third-party data (queries, gold answers, answers, contexts) were replaced by
"[text removed]" before they were checked in; ids, relevance, scores, metrics, verdicts, latencies are as written.

The oracles are those files themselves: what the old code wrote, read here with ``json`` only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

OLD = Path(__file__).parent / "data" / "runs_751b299"


def _json(folder: Path) -> tuple[dict, list[dict]]:
    summary = json.loads((folder / "summary.json").read_text())
    records = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines() if line.strip()]
    return summary, records


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(OLD / name, tmp_path / name))


@pytest.mark.parametrize("name", ["retrieval", "answers"])
def test_old_run_loads_and_writes_back_the_same_summary(name):
    from evaluations.results.rundata import load_run

    summary, records = _json(OLD / name)
    run = load_run(OLD / name)
    assert run.summary.to_dict() == summary  # every key kept, none added
    assert [r.name for r in run.records] == [r["name"] for r in records]
    assert run.summary.counts.cases == summary["counts"]["cases"] == len(records)
    assert run.summary.metrics["ndcg@10"] == summary["metrics"]["ndcg@10"]
    assert run.dataset.fingerprint == summary["dataset"]["fingerprint"]


@pytest.mark.parametrize("name", ["retrieval", "answers"])
def test_old_records_summarise_to_the_old_numbers(name):
    """The summary rebuilt from the old cases.jsonl has the old summary.json's numbers (the same averaging)."""
    from evaluations.results.rundata import load_run
    from evaluations.results.summary import summarize

    old, records = _json(OLD / name)
    assert "warnings" not in old
    answers = old.get("answers") or {}
    new = summarize(load_run(OLD / name).records, name=old["name"], ks=[1, 3, 5, 10, 100],
                    extra={k: old[k] for k in ("dataset", "index", "run", "config", "config_source", "model_calls")},
                    primary_judge=answers.get("primary_judge"), analyses=old["analyses"],
                    primary_validation=answers.get("primary_validation"),
                    primary_chosen_by=answers.get("primary_chosen_by")).to_dict()
    if "calibration" in old:  # made by results.calibration from the same records; not part of summarize
        new["calibration"] = old["calibration"]
    # every query's text was replaced by "[text removed]" before check-in, so every case "asks" one question
    repeated = [w for w in new.pop("warnings", []) if w["kind"] == "repeated_questions"]
    assert len(repeated) == 1 and repeated[0]["message"].startswith(f"{len(records) - 1} case(s) ask a question")
    assert json.dumps(new, sort_keys=True) == json.dumps(old, sort_keys=True)


def test_old_runs_compare_with_scores_read_as_scores(tmp_path):
    """compare on an old answers run: a judge probability named ``*_p_correct`` is a score (its per-case value),
    not a verdict; the 751b299 code read it as a verdict outcome, 0 for every case."""
    from evaluations.experiments.compare import compare_runs

    a, b = OLD / "answers", _copy("answers", tmp_path)
    _, records = _json(b)
    for record in records:  # b: the offline judge's probability lowered by 0.1 on every case
        record["judges"]["offline_p_correct"] -= 0.1
    (b / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = compare_runs([a, b], metrics=["offline_p_correct", "ndcg@10", "llm_judge"])
    rows = {r["metric"]: r for r in result["comparisons"]}
    _, original = _json(a)
    expected = np.mean([r["judges"]["offline_p_correct"] for r in original])
    assert rows["offline_p_correct"]["mean_a"] == pytest.approx(expected) and expected > 0.5
    assert rows["offline_p_correct"]["diff"] == pytest.approx(-0.1)
    # the verdict counts as accuracy does: the old summary's accuracy
    old_summary, _ = _json(a)
    assert rows["llm_judge"]["mean_a"] == pytest.approx(old_summary["answers"]["judges"]["llm_judge"]["accuracy"])
    assert rows["ndcg@10"]["mean_a"] == pytest.approx(old_summary["metrics"]["ndcg@10"])


def test_old_run_gates_records_and_reports(tmp_path):
    from evaluations.experiments.gate import parse_rules, run_gate
    from evaluations.experiments.history import list_runs, record_run
    from evaluations.reports.writer import write_reports
    from evaluations.results.rundata import load_run

    folder = _copy("retrieval", tmp_path)
    summary, records = _json(folder)
    ndcg = summary["metrics"]["ndcg@10"]
    rules = parse_rules({"rules": [{"metric": "ndcg@10", "min": round(ndcg + 0.01, 4)},
                                   {"metric": "recall@100", "max_drop": 0.0}]})
    result = run_gate(load_run(folder), rules, load_run(OLD / "retrieval"))
    assert not result["passed"] and len(result["broken"]) == 1 and result["broken"][0].startswith("ndcg@10")
    assert result["checks"][0]["value"] == pytest.approx(ndcg)

    history = tmp_path / "history.sqlite"
    record_run(folder, path=history)
    (row,) = list_runs(history)
    assert row["metrics"]["ndcg@10"] == pytest.approx(ndcg)
    assert row["metrics"]["latency_p50_ms"] == pytest.approx(
        np.percentile([r["latency_ms"]["total"] for r in records], 50))

    written = write_reports(folder)
    assert f"| nDCG@10 | {ndcg:.4f} |" in written.markdown.read_text()
