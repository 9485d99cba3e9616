"""Real run folders for the report tests (session fixtures, registered in conftest.py).

- the shared SciFact runs (``scifact_runs``: fts, hybrid, worse), their comparison (``compare_runs`` +
  ``write_compare``, what ``evaluations compare --out`` does) and a history of them (``list_runs``, what
  ``evaluations history --json`` prints);
- an answers run: real EVOUNA answers with their human labels, judged by the real judges (lexical + the
  calibrated offline judge) and the JudgeAgreement report evaluator through pydantic-evals, written as a run
  folder by the run package's own record/summary code (no retrieval: EVOUNA has no passages);
- a matrix.json over the three SciFact runs in the shape ``evaluations matrix`` writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EVOUNA_ANSWERS = 80  # the first labelled answers of EVOUNA NQ (16 questions × their 5 systems)
SMALL_TIER = {"fid": "small"}  # FiD is the small extractive reader; the other EVOUNA systems are LLMs


@pytest.fixture(scope="session")
def report_runs(scifact_runs, tmp_path_factory) -> dict[str, Path]:
    """The shared SciFact runs (fts, hybrid, worse), their comparison as ``compare --out`` writes it, and a history
    of the three as ``history --json`` prints it."""
    from evaluations.experiments.compare import compare_runs, write_compare
    from evaluations.experiments.history import list_runs, record_run

    root = tmp_path_factory.mktemp("report_runs")
    write_compare(compare_runs([scifact_runs["fts"], scifact_runs["hybrid"], scifact_runs["worse"]]), root / "compare")
    history = root / "history.sqlite"
    for name in ("worse", "fts", "hybrid"):
        record_run(scifact_runs[name], path=history)
    (root / "history").mkdir()
    (root / "history" / "history.json").write_text(json.dumps(list_runs(history), indent=2))
    return {**scifact_runs, "compare": root / "compare", "history": root / "history", "root": root}


@pytest.fixture(scope="session")
def answers_run(tmp_path_factory) -> Path:
    """EVOUNA NQ answers (first questions) judged for real; tags = the answering system, tier = its size."""
    from pydantic_evals import Case, Dataset

    from conftest import DATA

    from evaluations.judging.labels.data import load_labelled
    from evaluations.evaluators.answers import (Containment, ExactMatch, JudgeAgreement, KeywordOverlap, OfflineJudge,
                                               TokenF1)
    from evaluations.results.records import record_from_case
    from evaluations.results.summary import summarize
    from evaluations.core.types import Answer, CaseMetadata, CaseOutput, RetrievalInputs

    source = DATA / "evouna" / "NQ.jsonl.gz"
    examples = load_labelled(source, limit=EVOUNA_ANSWERS)
    by_name = {f"{e.group}:{e.system}": e for e in examples}
    cases = [Case(name=name, inputs=RetrievalInputs(query=e.question, case_id=name),
                  metadata=CaseMetadata(query_id=e.group, answers=list(e.references), label=e.label,
                                        tags=[f"system:{e.system}"]))
             for name, e in by_name.items()]

    async def answer(inputs: RetrievalInputs) -> CaseOutput:
        example = by_name[inputs.case_id]
        return CaseOutput(answer=Answer(answer=example.answer, confidence=None), qa_status="ok", qa_mode="log",
                          tier=SMALL_TIER.get(example.system, "large"), model=example.system)

    dataset = Dataset(name="evouna-nq", cases=cases, evaluators=[KeywordOverlap(), TokenF1(), ExactMatch(),
                                                                 Containment(), OfflineJudge()],
                      report_evaluators=[JudgeAgreement(resamples=200)])
    report = dataset.evaluate_sync(answer, progress=False)
    records = [record_from_case(c) for c in [*report.cases, *report.failures]]
    summary = summarize(records, name="evouna-nq-answers", ks=[], scored=False, primary_judge="offline_correct",
                        analyses=[a.model_dump(mode="json") for a in report.analyses],
                        extra={"dataset": {"name": "evouna-nq", "source": str(source), "queries": len(records)},
                               "run": {"qa_model": "EVOUNA systems (logged answers)", "judge_model": None}})
    folder = tmp_path_factory.mktemp("answers_run")
    (folder / "cases.jsonl").write_text("".join(r.dump_line() for r in records))
    (folder / "summary.json").write_text(summary.dump_json())
    return folder


@pytest.fixture(scope="session")
def matrix_dir(report_runs) -> Path:
    """matrix.json in the shape of issue 8 over the three real SciFact runs (no Pareto flags: the report computes
    the frontier)."""
    cells = []
    for params, name in (({"search_mode": "fts", "chunk_size": 256}, "fts"),
                         ({"search_mode": "hybrid", "chunk_size": 256}, "hybrid"),
                         ({"search_mode": "fts", "chunk_size": 8}, "worse")):
        summary = json.loads((report_runs[name] / "summary.json").read_text())
        latency = {k: summary["latency_ms"][k] for k in ("p50", "p95", "p99", "mean")}
        cells.append({"params": params, "metrics": summary["metrics"], "latency_ms": latency,
                      "tokens": {"per_query": None}, "cost_per_query": None, "run_dir": str(report_runs[name])})
    folder = report_runs["root"] / "matrix"
    folder.mkdir(exist_ok=True)
    (folder / "matrix.json").write_text(json.dumps({"cells": cells, "comparisons": []}, indent=2))
    return folder
