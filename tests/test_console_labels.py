"""The run's console table (pydantic-evals' own, through ``reports.console.readable``): its averages row gives a
label's share of all cases. pydantic-evals averages a label over the cases that have it, so the main job's 5
restatements among 18 answers printed as "answer_kind: restatement 0.625" (of the 8 non-answers), and the label
given by two judges printed twice (``answer_kind_2``)."""

from __future__ import annotations

import io
from collections import Counter

from conftest import DATA
from pydantic_evals import Case, Dataset
from pydantic_evals.reporting import ReportCaseAggregate
from rich.console import Console

from evaluations.core.types import Answer, CaseMetadata, CaseOutput, RetrievalInputs
from evaluations.evaluators.answers import OfflineJudge
from evaluations.judging.labels.data import load_labelled
from evaluations.reports.console import NO_LABEL, readable


def test_the_averages_give_each_labels_share_of_all_cases(tmp_path):
    examples = load_labelled(DATA / "evouna" / "NQ.jsonl.gz", limit=12)
    echoed = {i for i in range(len(examples)) if i % 4 == 0}  # a quarter of the answers restate their question
    by_name = {f"q{i}": (e, e.question if i in echoed else e.answer) for i, e in enumerate(examples)}
    cases = [Case(name=name, inputs=RetrievalInputs(query=e.question, case_id=name),
                  metadata=CaseMetadata(query_id=name, answers=list(e.references)))
             for name, (e, _) in by_name.items()]

    async def answer(inputs: RetrievalInputs) -> CaseOutput:
        return CaseOutput(answer=Answer(answer=by_name[inputs.case_id][1], confidence=None), qa_status="ok",
                          qa_mode="log")

    judges = [OfflineJudge(cache_dir=str(tmp_path)), OfflineJudge(cache_dir=str(tmp_path))]  # both screen answers
    report = Dataset(name="labels", cases=cases, evaluators=judges).evaluate_sync(answer, progress=False)
    kinds = Counter(c.labels["answer_kind"].value for c in report.cases if "answer_kind" in c.labels)
    assert kinds and sum(kinds.values()) < len(report.cases)  # some cases carry the label, not all
    assert {c.name for c in report.cases if "answer_kind" in c.labels} >= {f"q{i}" for i in echoed}
    assert "answer_kind_2" in {n for c in report.cases for n in c.labels}  # pydantic-evals numbered the second

    shown = readable(report)
    averages = ReportCaseAggregate.average(list(shown.cases)).labels
    n = len(report.cases)
    assert averages["answer_kind"] == {**{k: v / n for k, v in kinds.items()}, NO_LABEL: (n - sum(kinds.values())) / n}
    assert "answer_kind_2" not in averages  # the same value in every case: shown once
    assert [c.labels["answer_kind"].value for c in shown.cases] == [
        c.labels["answer_kind"].value if "answer_kind" in c.labels else NO_LABEL for c in report.cases]

    out = io.StringIO()
    shown.print(console=Console(file=out, width=300), include_averages=True, include_input=False,
                include_output=False)
    assert "answer_kind_2" not in out.getvalue() and "(none)" in out.getvalue()
