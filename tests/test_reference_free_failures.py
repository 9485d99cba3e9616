"""A reference-free judge that fails on every case (its served checker answers /v1/models, then fails every
question) is counted under its metric in summary.json and on the console, never dropped from the section; and a
questions-only run cites no correctness judge."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fake_llm_server import Fault, FakeLLMServer
from inprocess import run_evaluations

ROOT = Path(__file__).resolve().parents[1]
SYSTEM = '''
def answer(request):
    return {"retrieved": [{"id": "d1"}, {"id": "d2"}], "answer": "The tower opened in 1889."}
'''
QUESTIONS = ["When did the tower open?", "When was the tower opened to the public?", "In what year did it open?"]


def test_a_judge_failing_on_every_case_is_counted_under_its_metric(tmp_path, run_reports):
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "query": q}) + "\n"
                                              for i, q in enumerate(QUESTIONS)))
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "text": "The tower opened to the public in 1889 after two years of work."}) + "\n"
        + json.dumps({"_id": "d2", "text": "The river floods in spring."}) + "\n")
    (tmp_path / "failing_judge_sys.py").write_text(SYSTEM)
    with FakeLLMServer(models=("judge",), responder=lambda body: Fault("500")) as server:
        config = tmp_path / "config.yaml"
        config.write_text(
            "judge:\n  retries: 0\n  reference_free: [faithfulness, answer_relevance, context_relevance]\n"
            f"  model:\n    provider: openai\n    name: judge\n    base_url: {server.openai_url}\n"
            f"cache:\n  enabled: false\n  path: {tmp_path / 'calls.sqlite'}\nrequests:\n  retries: 0\n")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]), "OPENAI_API_KEY": "x",
               "EVALUATIONS_CACHE_DIR": str(tmp_path / "cache")}
        out = tmp_path / "run"
        proc = run_evaluations(["run", str(tmp_path / "q.jsonl"), "--corpus",
                               str(tmp_path / "corpus.jsonl"), "--system", "failing_judge_sys:answer", "--config",
                               str(config), "--out", str(out), "--no-progress"], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=600)
        asked = server.calls("/v1/chat/completions")
        url = server.openai_url
    output = proc.stdout + proc.stderr
    assert asked, output  # the judges did ask the server
    assert proc.returncode == 3, output  # judge failures are counted failures
    assert "Traceback" not in output
    summary = json.loads((out / "summary.json").read_text())
    metadata = json.loads((out / "report.json").read_text())["experiment_metadata"]
    assert metadata["reference_free_judge"] == "openai:judge"  # the served checker the judges asked
    metrics = summary["reference_free"]["metrics"]
    for name in ("faithfulness", "context_relevance"):
        entry = metrics[name]
        assert entry["n"] == 0 and entry["mean"] is None, (name, entry)
        assert entry["failed"] == len(QUESTIONS) and entry["not_applicable"] == 0, (name, entry)
        assert entry["kinds"] == {"judge failed": len(QUESTIONS)}
    # answer relevance needs no model: it still judged every answer
    assert metrics["answer_relevance"]["n"] == len(QUESTIONS) and metrics["answer_relevance"]["failed"] == 0
    # the first judge error, whole on its own line (the per-case table cut the server's URL over two lines)
    first = next(ln for ln in output.splitlines() if ln.startswith("first judge failure ("))
    assert "on case q0): " in first and url.split("//")[1].rstrip("/") in first, first
    line = next(ln for ln in output.splitlines() if ln.startswith("reference-free:"))
    assert f"faithfulness — (n 0, {len(QUESTIONS)} failed)" in line, line
    assert f"context_relevance — (n 0, {len(QUESTIONS)} failed)" in line, line
    # no gold answers: no correctness judge can have judged anything, so none is cited as the primary judge
    assert summary["answers"]["cases_to_answer"] == {"gold": 0, "unanswerable": 0, "no_gold": len(QUESTIONS)}
    assert summary["answers"]["primary_judge"] is None and summary["answers"]["primary_validation"] is None
    assert "Primary judge" not in (out / "report.html").read_text() and "primary judge" not in output
    records = [json.loads(ln) for ln in (out / "cases.jsonl").read_text().splitlines()]
    assert all({"faithfulness", "context_relevance"} <= {e["evaluator"] for e in r["judge_errors"]} for r in records)


def test_first_relevant_hit_rate_and_mrr_by_hand():
    """Four cases judged (first relevant chunk at rank 1, at rank 3, none, at rank 2) and one not judged:
    hit rate 3/4, MRR (1 + 1/3 + 0 + 1/2) / 4, Wilson interval of 3/4 (statsmodels)."""
    from statsmodels.stats.proportion import proportion_confint

    from evaluations.results.records import CaseRecord
    from evaluations.results.reference_free import first_relevant

    def record(name: str, verdicts: list[bool] | None) -> CaseRecord:
        chunks = None if verdicts is None else [{"rank": i, "id": f"d{i}", "relevant": v, "p": 0.9 if v else 0.1}
                                                for i, v in enumerate(verdicts, 1)]
        first = next((i for i, v in enumerate(verdicts or [], 1) if v), None)
        return CaseRecord(name=name, chunk_relevance=chunks, first_relevant_rank=first)

    records = [record("a", [True, False]), record("b", [False, False, True]), record("c", [False, False]),
               record("d", [False, True, True]), record("e", None)]
    got = first_relevant(records)
    assert got["cases"] == 4 and got["hit_rate"] == 0.75
    assert got["mrr"] == pytest.approx((1 + 1 / 3 + 0 + 1 / 2) / 4)
    assert got["ci95"] == list(proportion_confint(3, 4, method="wilson"))
    assert first_relevant([record("e", None)]) is None


def test_summary_and_compare_name_why_a_score_is_missing_alike():
    """A case that answered faithfully in the baseline and later (1) failed in the system, (2) failed in its answer
    stage, (3) had its judge fail, or (4) refused: the summary counts (1)-(3) as failed and (4) as not applicable,
    and compare's regressions name each the way the summary's kinds do. Context relevance does not read the answer,
    so a failed answer stage leaves its verdict standing."""
    from evaluations.experiments.compare import regressions
    from evaluations.results.records import CaseRecord, JudgeError, QARecord
    from evaluations.results.reference_free import score_summary
    from evaluations.results.rundata import RunData

    def record(name: str, **changes) -> CaseRecord:
        base = {"name": name, "case": name, "query": f"question {name}", "qa": QARecord(status="ok"),
                "judges": {"faithfulness": 1.0, "context_relevance": 1.0},
                "judge_labels": {"faithfulness_kind": "claims", "context_relevance_kind": "judged"}}
        return CaseRecord(**{**base, **changes})

    names = ["system", "answer", "judge", "refusal"]
    before = RunData(records=[record(n) for n in names], label="before")
    after = RunData(label="after", records=[
        record("system", status="failed", error="boom", qa=QARecord(status="skipped"), judges={}, judge_labels={}),
        record("answer", qa=QARecord(status="failed", error="no output"), judges={"context_relevance": 1.0},
               judge_labels={"context_relevance_kind": "judged"}),
        record("judge", judges={"context_relevance": 1.0}, judge_labels={"context_relevance_kind": "judged"},
               judge_errors=[JudgeError(evaluator="faithfulness", error="HTTP 500")]),
        record("refusal", judges={"context_relevance": 1.0},
               judge_labels={"faithfulness_kind": "refusal", "context_relevance_kind": "judged"})])

    entry = score_summary(after, "faithfulness")
    assert entry["kinds"] == {"case failed": 2, "judge failed": 1, "refusal": 1}
    assert (entry["n"], entry["failed"], entry["not_applicable"]) == (0, 3, 1)
    context = score_summary(after, "context_relevance")
    assert (context["n"], context["failed"], context["kinds"]) == (3, 1, {"case failed": 1, "judged": 3})

    lapsed = {r["case"]: r["now"] for r in regressions(before, after, ["faithfulness"], set(names))}
    assert lapsed == {"system": "case failed", "answer": "case failed", "judge": "judge failed",
                      "refusal": "refusal"}


def test_qrels_agreement_counts_a_case_judged_only_grade_0():
    """A case whose qrels judge its documents grade 0 only has qrels: its chunks are negatives by them, compared
    like any case's (they were left out). Oracle: scikit-learn over the four chunks by hand."""
    from sklearn.metrics import accuracy_score, cohen_kappa_score

    from evaluations.results.records import CaseRecord
    from evaluations.results.reference_free import qrels_agreement

    def record(name: str, relevant: dict[str, int], verdicts: dict[str, bool]) -> CaseRecord:
        chunks = [{"rank": i, "id": d, "doc": d, "relevant": v, "p": 0.9 if v else 0.1}
                  for i, (d, v) in enumerate(verdicts.items(), 1)]
        return CaseRecord(name=name, relevant=relevant, chunk_relevance=chunks)

    records = [record("a", {"d1": 1}, {"d1": True, "d2": False}), record("b", {"d3": 0}, {"d3": True, "d4": False}),
               record("c", {}, {"d5": True})]  # c has no qrels: left out
    got = qrels_agreement(records, resamples=0)
    labels, verdicts = [True, False, False, False], [True, False, True, False]
    assert got["chunks"] == 4 and got["cases"] == 2
    assert got["accuracy"]["value"] == pytest.approx(accuracy_score(labels, verdicts))
    assert got["kappa"]["value"] == pytest.approx(cohen_kappa_score(labels, verdicts))
    assert got["qrels_precision"] == pytest.approx((1 / 2 + 0 / 2) / 2)
