"""What judging costs (issue 45/46 item 3): each judge that takes time records, per case, its wall seconds and the
model calls it made (``CaseRecord.judge_cost``); ``summary.json`` ``judging`` sums them per judge beside the answer
stage; the console and the report show a latency row per judge.

A real run of three questions with gold answers, answered by a callable system, judged by the judges that need no
server and no judge model file (semantic similarity, the offline judge, answer relevance: all-MiniLM-L6-v2). The
first run has an empty judge cache (this test's own folder): every text the judges read has to be embedded, so they
make model calls and take time. The second run reads the same cache: no judge makes a model call. An old
``cases.jsonl`` line without the field loads and summarises as before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from inprocess import run_evaluations

ROOT = Path(__file__).resolve().parents[1]

SYSTEM = '''
ANSWERS = {"q1": "Bram Stoker wrote Dracula.", "q2": "Mars has two moons, Phobos and Deimos.",
           "q3": "Canberra is the capital of Australia."}
TEXTS = {"q1": "Dracula is an 1897 novel by Bram Stoker.", "q2": "Mars has two small moons, Phobos and Deimos.",
         "q3": "Canberra is the capital city of Australia."}

def answer(request):
    case = request["case_id"]
    return {"retrieved": [{"id": "d" + case, "text": TEXTS[case], "score": 1.0}], "answer": ANSWERS[case]}
'''

ROWS = [{"id": "q1", "query": "Who wrote Dracula?", "answers": ["Bram Stoker"]},
        {"id": "q2", "query": "How many moons does Mars have?", "answers": ["two"]},
        {"id": "q3", "query": "What is the capital of Australia?", "answers": ["Canberra"]}]

#: the judges this run has that embed texts (``evaluators.cost``: their cost names)
EMBEDDING_JUDGES = {"semantic_similarity", "offline_judge", "answer_relevance"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The same run twice on one judge cache: ``cold`` (empty cache) and ``cached``."""
    tmp = tmp_path_factory.mktemp("judge_cost")
    (tmp / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp / "corpus.jsonl").write_text("".join(json.dumps({"id": f"d{r['id']}", "text": r["query"]}) + "\n"
                                              for r in ROWS))
    (tmp / "costsys.py").write_text(SYSTEM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp)]),
           "EVALUATIONS_CACHE_DIR": str(tmp / "judge_cache"), "EVALUATIONS_REFERENCE_FREE": "answer_relevance"}
    outs = {}
    for name in ("cold", "cached"):
        out = tmp / name
        proc = run_evaluations(["run", str(tmp / "questions.jsonl"), "--corpus", str(tmp / "corpus.jsonl"),
                                "--system", "costsys:answer", "--out", str(out), "--no-progress", "--name", name],
                               cwd=tmp, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (out / "console.txt").write_text(proc.stdout + proc.stderr)
        outs[name] = out
    return outs


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]


def test_each_judge_records_its_seconds_and_calls_per_case(runs):
    records = _records(runs["cold"])
    assert [r["name"] for r in records] == [r["id"] for r in ROWS]
    for record in records:
        cost = record["judge_cost"]
        assert set(cost) == EMBEDDING_JUDGES, cost
        assert all(c["seconds"] > 0 for c in cost.values())
        assert not any(name.endswith("_cost") for name in record["judge_labels"])  # a cost is no judge's label
    # a cold cache: every distinct text was embedded by one of the judges (each answer at least), never from a cache
    answers = {r["answer"]["answer"] for r in records}
    assert sum(c["calls"] for r in records for c in r["judge_cost"].values()) >= len(answers)
    assert sum(r["judge_cost"]["answer_relevance"]["calls"] for r in records) > 0


def test_a_cached_rerun_makes_no_model_call(runs):
    for record in _records(runs["cached"]):
        assert {name: c["calls"] for name, c in record["judge_cost"].items()} == dict.fromkeys(EMBEDDING_JUDGES, 0)
    summary = json.loads((runs["cached"] / "summary.json").read_text())
    assert summary["judging"]["calls"] == 0


def test_summary_has_a_judging_section_per_judge(runs):
    summary = json.loads((runs["cold"] / "summary.json").read_text())
    judging = summary["judging"]
    records = _records(runs["cold"])
    assert set(judging["judges"]) == EMBEDDING_JUDGES
    for name, entry in judging["judges"].items():
        seconds = [r["judge_cost"][name]["seconds"] for r in records]
        calls = [r["judge_cost"][name]["calls"] for r in records]
        assert entry["cases"] == len(ROWS) and entry["seconds"]["n"] == len(ROWS)
        assert entry["seconds"]["mean"] == pytest.approx(sum(seconds) / len(seconds))
        assert entry["seconds"]["max"] == pytest.approx(max(seconds))
        assert entry["seconds"]["p50"] == pytest.approx(sorted(seconds)[1])  # the median of three
        assert (entry["calls"]["total"], entry["calls"]["mean"]) == (sum(calls), pytest.approx(sum(calls) / 3))
    assert judging["judge_seconds"] == pytest.approx(sum(c["seconds"] for r in records
                                                        for c in r["judge_cost"].values()))
    # a case's judges run at once: judging took, per case, the span their intervals cover together, measured
    # here on a 1 ms grid from each judge's start and seconds
    def covered(costs: list[dict]) -> float:
        ticks = set()
        for c in costs:
            ticks.update(range(round(c["started"] * 1000), round((c["started"] + c["seconds"]) * 1000)))
        return len(ticks) / 1000

    spans = [covered(list(r["judge_cost"].values())) for r in records]
    assert judging["seconds"] == pytest.approx(sum(spans), abs=0.002 * len(records) * len(EMBEDDING_JUDGES))
    assert judging["seconds"] <= judging["judge_seconds"] + 1e-9
    assert judging["calls"] > 0
    # the system answered by itself: no answer stage (llm) was timed to set judging beside
    assert judging["answering_seconds"] is None and judging["judging_per_answering"] is None


def test_console_and_reports_show_a_row_per_judge(runs, tmp_path):
    console = (runs["cold"] / "console.txt").read_text()
    for name in EMBEDDING_JUDGES:
        assert f"judge {name}" in console
    assert "judging " in console and "model calls" in console
    assert not any(f"{name}_cost" in console for name in EMBEDDING_JUDGES)  # no cost label printed as a label
    proc = run_evaluations(["report", str(runs["cold"])], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    markdown = (runs["cold"] / "report.md").read_text()
    page = (runs["cold"] / "report.html").read_text()
    for name in EMBEDDING_JUDGES:
        assert f"judge {name}" in markdown and f"judge {name}" in page
    assert "Judging took" in markdown


def test_an_old_record_without_the_field_loads_and_has_no_judging_section(tmp_path):
    from evaluations.results.records import CaseRecord
    from evaluations.results.summary import summarize

    old = {"schema": 2, "name": "q1", "query": "Who wrote Dracula?", "answer": {"answer": "Bram Stoker"},
           "qa": {"status": "ok"}, "judges": {"semantic_similarity": 0.9}, "latency_ms": {"total": 12.0}}
    record = CaseRecord.model_validate_json(json.dumps(old))
    assert record.judge_cost is None
    assert "judge_cost" not in json.loads(record.dump_line())  # left out of the line, as written before
    summary = summarize([record], name="old", ks=[10], extra={}).to_dict()
    assert "judging" not in summary


def test_a_served_llm_judge_counts_the_requests_it_sends_and_none_replayed(tmp_path):
    """The served LLM judge behind the model-call cache, through pydantic-evals: each case's calls are the requests
    the (scripted) model received for it; a second evaluation replays them all from the cache: 0 calls."""
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_evals import Case, Dataset

    from evaluations.core.types import Answer, CaseMetadata, CaseOutput, RetrievalInputs
    from evaluations.evaluators.llm_judges import AnswerEquivalenceJudge
    from evaluations.judging.correctness.llm import load_rubric
    from evaluations.models.cache import CachedModel, open_store
    from evaluations.results.records import record_from_case

    received: list[str] = []

    def model(messages, info: AgentInfo) -> ModelResponse:
        received.append(messages[0].parts[-1].content)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"reason": "ok", "pass": True,
                                                                              "score": 1.0})])

    judge = AnswerEquivalenceJudge(model=CachedModel(FunctionModel(model), open_store(tmp_path / "calls.sqlite")),
                                   rubric=load_rubric(), retries=0)
    answers = {"Who wrote Dracula?": "Bram Stoker wrote it.", "What is the capital of Australia?": "Canberra."}
    dataset = Dataset(name="served", evaluators=[judge], cases=[
        Case(name=f"q{i}", inputs=RetrievalInputs(query=q), metadata=CaseMetadata(query_id=f"q{i}", answers=[a]))
        for i, (q, a) in enumerate(answers.items())])

    async def task(inputs: RetrievalInputs) -> CaseOutput:
        return CaseOutput(answer=Answer(answer=answers[inputs.query]))

    def costs() -> dict[str, tuple[int, float]]:
        report = dataset.evaluate_sync(task, progress=False)
        return {r.query: (r.judge_cost["llm_judge"].calls, r.judge_cost["llm_judge"].seconds)
                for r in map(record_from_case, report.cases)}

    first = costs()
    assert {q: calls for q, (calls, _) in first.items()} == {
        q: sum(q in prompt for prompt in received) for q in answers}
    assert all(calls >= 1 and seconds > 0 for calls, seconds in first.values())
    sent = len(received)
    assert {q: calls for q, (calls, _) in costs().items()} == dict.fromkeys(answers, 0) and len(received) == sent


def test_judging_seconds_count_overlapping_judges_once_and_old_costs_added_up():
    """Two judges of one case that ran at once took the span they cover together (here 0-10 s and 2-5 s: 10 s), one
    that ran after a gap adds its own (12-13 s: 1 s); a case whose costs carry no start (written before ``started``
    was kept) counts its judges' seconds added up, as before."""
    from evaluations.results.judging import judging_summary
    from evaluations.results.records import CaseRecord, JudgeCost

    def record(name: str, costs: dict[str, JudgeCost]) -> CaseRecord:
        return CaseRecord.model_validate({"schema": 2, "name": name, "query": "q", "qa": {"status": "ok"},
                                          "latency_ms": {"total": 1.0, "llm": 4000.0}, "judge_cost": costs})

    at = 1_700_000_000.0
    records = [record("a", {"faithfulness": JudgeCost(seconds=10, calls=3, started=at),
                            "context_relevance": JudgeCost(seconds=3, calls=5, started=at + 2),
                            "llm_judge": JudgeCost(seconds=1, calls=1, started=at + 12)}),
               record("b", {"faithfulness": JudgeCost(seconds=2, calls=1), "llm_judge": JudgeCost(seconds=0.5)})]
    judging = judging_summary(records)
    assert judging["seconds"] == pytest.approx(10 + 1 + 2.5)
    assert judging["judge_seconds"] == pytest.approx(14 + 2.5)
    assert judging["calls"] == 10
    assert judging["answering_seconds"] == pytest.approx(8.0)
    assert judging["judging_per_answering"] == pytest.approx(13.5 / 8.0)


def test_judges_asking_one_server_take_turns_up_to_the_runs_concurrency():
    """``evaluators.cost.server_turn``: a case's evaluators run at once; the ones that ask the same server take turns
    (at most the run's concurrency at once), so one judge's questions reach it one after another; a judge that asks
    no server, or another server, does not wait."""
    import asyncio
    from dataclasses import dataclass

    from evaluations.evaluators.cost import MeasuredJudge

    @dataclass
    class Judge(MeasuredJudge):
        name: str
        url: str | None
        width: int
        log: list

        def cost_name(self) -> str:
            return self.name

        def served_at(self):
            return self.url, self.width

        async def judge_case(self, ctx):
            self.log.append(("start", self.name))
            await asyncio.sleep(0.05)
            self.log.append(("end", self.name))
            return {self.name: 1.0}

    def run(judges: list[Judge]) -> list:
        async def together():
            return await asyncio.gather(*(j.evaluate(None) for j in judges))
        asyncio.run(together())
        return judges[0].log

    log: list = []
    one = [Judge(n, "http://127.0.0.1:9/v1/", 1, log) for n in ("faithfulness", "context_relevance")]
    one.append(Judge("llm_judge", "http://127.0.0.1:9/v1", 1, log))  # the same server, spelt with no slash
    one.append(Judge("answer_relevance", None, 1, log))  # asks no server
    events = run(one)
    served = [e for e in events if e[1] != "answer_relevance"]
    assert served == [(k, n) for n in ("faithfulness", "context_relevance", "llm_judge") for k in ("start", "end")]
    assert events.index(("start", "answer_relevance")) < events.index(("end", "faithfulness"))  # did not wait
    log2: list = []
    two = [Judge(n, "http://127.0.0.1:9/v1", 2, log2) for n in ("faithfulness", "context_relevance")]
    assert [k for k, _ in run(two)] == ["start", "start", "end", "end"]  # concurrency 2: both at once


def test_served_judges_name_their_server_and_the_runs_concurrency(tmp_path):
    from fake_llm_server import FakeLLMServer

    from evaluations.core.config import Config
    from evaluations.evaluators.llm_judges import llm_judge
    from evaluations.evaluators.reference_free import reference_free_evaluators

    with FakeLLMServer(models=("judge",)) as server:
        model = {"provider": "openai", "name": "judge", "base_url": server.openai_url}
        config = Config.model_validate({"cache": {"enabled": False}, "evaluation": {"concurrency": 3},
                                        "judge": {"reference_free": ["faithfulness", "context_relevance"],
                                                  "model": model}})
        made = reference_free_evaluators(config, answers=True, retrieval=True)
        judge = llm_judge(config.judge.model, config)
        urls = {e.served_at()[0].rstrip("/") for e in [*made, judge]}
        assert urls == {server.openai_url.rstrip("/")} and {e.served_at()[1] for e in [*made, judge]} == {3}
    embedded = Config.model_validate({"judge": {"reference_free": ["faithfulness"]}})
    assert [e.served_at() for e in reference_free_evaluators(embedded, answers=True, retrieval=False)] == [(None, 1)]
