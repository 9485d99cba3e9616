"""Report evaluators over a whole run (``pipeline.runner``): one that raises is recorded in report.json the way
pydantic-evals records it (name, message, the real stack trace), the others still run, and the run finishes.

The run is real: 20 SciFact test queries searched by a user's BM25 system (``tests/scifact_bm25.py``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic_evals.evaluators import ReportEvaluator, ReportEvaluatorContext
from pydantic_evals.reporting import EvaluationReportAdapter
from pydantic_evals.reporting.analyses import ScalarResult

from conftest import write_scifact_subset
from evaluations.core.config import load_config
from evaluations.datasets import get_spec
from evaluations.pipeline.plan import QAPlan
from evaluations.pipeline.runner import RunOptions, run

USER_MODULE = '''
from scifact_bm25 import BM25

_index = BM25({folder!r})


def search(request):
    return {{"retrieved": _index.search(request["query"], request["k"])}}
'''


@dataclass
class BrokenEvaluator(ReportEvaluator):
    def evaluate(self, ctx: ReportEvaluatorContext) -> ScalarResult:
        return ScalarResult(title="never", value=_divide(len(ctx.report.cases), 0))


def _divide(a: int, b: int) -> float:
    return a / b


@dataclass
class CaseCount(ReportEvaluator):
    def evaluate(self, ctx: ReportEvaluatorContext) -> ScalarResult:
        return ScalarResult(title="finished cases", value=len(ctx.report.cases))


@dataclass
class AsyncFailedCount(ReportEvaluator):
    """An async report evaluator (pydantic-evals awaits ``evaluate_async``): its result is recorded, not a
    coroutine."""

    async def evaluate(self, ctx: ReportEvaluatorContext) -> ScalarResult:
        return ScalarResult(title="failed cases", value=len(ctx.report.failures))


def test_failing_report_evaluator_keeps_its_stack_trace_and_the_run_finishes(tmp_path, monkeypatch):
    scifact = write_scifact_subset(tmp_path / "scifact", 20, 30)
    queries = [json.loads(line) for line in (scifact / "queries.jsonl").read_text().splitlines() if line.strip()]
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "report_eval_rag.py").write_text(USER_MODULE.format(folder=str(scifact)))
    monkeypatch.syspath_prepend(str(tmp_path / "user"))
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # scifact_bm25
    config = load_config(None, {"storage.data_dir": str(tmp_path / "home"), "cache.enabled": False})
    qa = QAPlan(agent=None, evaluators=[], report_evaluators=[BrokenEvaluator(), CaseCount(), AsyncFailedCount()], metadata={},
                primary_judge="exact_match")
    options = RunOptions(source=scifact, out=tmp_path / "run", system="report_eval_rag:search", progress=False,
                         ks=[1, 10], skip_qa=True)

    result = run(get_spec("beir"), options, config, qa=qa)

    assert (result.out_dir / "summary.json").is_file() and (result.out_dir / "cases.jsonl").is_file()
    report = EvaluationReportAdapter.validate_json((result.out_dir / "report.json").read_text())
    assert len(report.cases) == len(queries) == 20
    [failure] = report.report_evaluator_failures
    assert failure.name == "BrokenEvaluator"
    assert failure.error_type == "ZeroDivisionError"
    assert failure.error_message == "ZeroDivisionError: division by zero"
    trace = failure.error_stacktrace
    assert trace.startswith("Traceback (most recent call last):")
    assert "in _divide" in trace and "return a / b" in trace and "ZeroDivisionError: division by zero" in trace
    # the evaluator after the failing one still ran, over every case of the run
    assert [(a.title, a.value) for a in report.analyses] == [("finished cases", len(queries)), ("failed cases", 0)]
    summary = json.loads((result.out_dir / "summary.json").read_text())
    assert [a["value"] for a in summary["analyses"] if a["title"] == "finished cases"] == [len(queries)]
