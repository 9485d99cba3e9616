"""The one structured-output ladder (evaluations/models/ladder.py) as its three users walk it against a real HTTP
server: the QA agent, the served LLM judge and the question writer. One fail-over policy (a refused request form
and invalid output move on; overload does not), memory per ladder instance, what one stage learnt about a served
model read by the others, and a cached re-run with 0 live calls.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
from fake_llm_server import FakeLLMServer, Fault, tool_call
from pydantic_ai.exceptions import ModelHTTPError

from evaluations.core.config import load_config
from evaluations.core.types import RetrievedChunk
from evaluations.judging.correctness.llm import answer_grader
from evaluations.models.cache import CALL_STATS, reset_call_stats
from evaluations.models.ladder import forget_failures, known_failures
from evaluations.models.chat import build_model, model_settings
from evaluations.pipeline.qa_agent import OUTPUT_RETRIES, QAFailed, answer_question, build_qa_agent, qa_ladder
from evaluations.synth.generate import QuestionWriter, WriteFailed, build_synth_agent

CHAT = "/v1/chat/completions"
QUESTION = "What is the capital of France?"
CHUNKS = [RetrievedChunk(chunk_id="c1", doc_id="d1", text="The capital of France is Paris.", score=1.0)]
PASSAGE = "Paris is the capital and largest city of France, on the Seine."


def _config(url: str, tmp_path, *, retries: int = 0, enabled: bool = True):
    model = {"provider": "openai", "name": "small-llm", "base_url": url}
    return load_config(None, {"qa.model": model, "judge.model": model, "judge.retries": 0,
                              "cache": {"enabled": enabled, "path": str(tmp_path / "calls.sqlite")},
                              "requests": {"retries": retries, "backoff": 0.0}})


class _Users:
    """The three users of the ladder on one config, each with its own ladder instance."""

    def __init__(self, config):
        model_cfg = config.qa.model
        self.agent = build_qa_agent(build_model(model_cfg, config), model_settings(model_cfg))
        self.qa_ladder = qa_ladder(self.agent)
        self.writer = QuestionWriter(build_synth_agent(build_model(model_cfg, config), model_settings(model_cfg)))
        self.grader = answer_grader(config.judge.model, config)

    async def qa(self, question: str = QUESTION):
        return await answer_question(self.agent, question, CHUNKS, ladder=self.qa_ladder)

    async def synth(self, passage: str = PASSAGE):
        return await self.writer.write(passage)

    async def judge(self, answer: str = "Paris"):
        return await self.grader.grade(QUESTION, answer, ["Paris"])


def _small_model(request: dict):
    """Like a small model behind llama-cpp-python's server: ignores the output tool (chats), refuses a JSON-schema
    response_format (HTTP 500 naming a validation error), follows a schema written in the instructions."""
    if request.get("response_format", {}).get("type") == "json_schema":
        return Fault("500-rejected")
    if request.get("tools"):
        return "I believe the answer is Paris."
    said = json.dumps(request["messages"])
    if "cited_ids" in said:
        return json.dumps({"answer": "Paris", "cited_ids": ["c1"], "confidence": 0.9})
    if "<Rubric>" in said:
        return json.dumps({"reason": "same city", "pass": True, "score": 1.0})
    return json.dumps({"question": "What is the capital of France?", "answer": "Paris"})


async def _walk(server: FakeLLMServer, tmp_path) -> None:
    config = _config(server.openai_url, tmp_path)
    users = _Users(config)
    before = len(server.calls(CHAT))
    result = await users.qa()
    # tool (tries), native (refused: 1 request, not retried), prompted (works: 1 request)
    assert len(server.calls(CHAT)) - before == 1 + OUTPUT_RETRIES + 1 + 1
    assert result.mode == "prompted" and [a.mode for a in result.attempts] == ["tool", "native", "prompted"]
    assert known_failures(users.agent.model) == {"tool", "native"}
    # the other stages on the same served model try those modes last: prompted first, one request each
    for name in ("synth", "judge"):
        before = len(server.calls(CHAT))
        assert (await getattr(users, name)()).mode == "prompted", name
        assert len(server.calls(CHAT)) - before == 1, name
    calls = len(server.calls(CHAT))
    # the next request of each starts at the mode that worked: one request each, failed modes not paid again
    assert (await users.qa("Which city is the capital of France?")).answer.answer == "Paris"
    assert (await users.synth(PASSAGE + " It has about two million inhabitants.")).pair.answer == "Paris"
    assert (await users.judge("It is Paris.")).verdict is True
    assert len(server.calls(CHAT)) == calls + 3

    # new ladder instances in a new command remember nothing and the cache replays every mode they walk, the
    # refused request included: 0 live calls
    forget_failures()
    reset_call_stats()
    fresh = _Users(config)
    assert fresh.qa_ladder.worked is None and fresh.grader.ladder.worked is None
    again = (await fresh.qa(), await fresh.synth(), await fresh.judge())
    assert len(server.calls(CHAT)) == calls + 3
    assert [r.mode for r in again] == ["prompted"] * 3
    assert [a.mode for a in again[0].attempts] == ["tool", "native", "prompted"]
    assert CALL_STATS["chat"].as_dict()["live"] == 0


def _judge_first(request: dict):
    """A served model whose output tool works for the judge's verdict but not for the QA agent's answer."""
    if request.get("tools") and "<Rubric>" in json.dumps(request["messages"]):
        return tool_call(request["tools"][0]["function"]["name"], {"reason": "same", "pass": True})
    return _small_model(request)


def test_a_mode_another_stage_failed_is_tried_last_not_skipped(tmp_path):
    """The judge after a QA agent that could not use the output tool: prompted first, then (prompted failing)
    the output tool after all, which works; it then counts as working again for the model."""
    with FakeLLMServer(models=("small-llm",), responder=_judge_first) as server:
        users = _Users(_config(server.openai_url, tmp_path, enabled=False))
        assert asyncio.run(users.qa()).mode == "prompted"
        assert known_failures(users.agent.model) == {"tool", "native"}
        users.grader = replace(users.grader, modes=("tool", "native"))  # the tool is the judge's only way
        verdict = asyncio.run(users.judge())
        assert verdict.mode == "tool" and verdict.verdict is True
        assert known_failures(users.agent.model) == {"native"}
    assert server.errors == []


def test_refused_form_and_invalid_output_move_on_each_ladder_remembers_and_a_rerun_is_cached(tmp_path):
    with FakeLLMServer(models=("small-llm",), responder=_small_model) as server:
        asyncio.run(_walk(server, tmp_path))
    assert server.errors == []


async def _overloaded(server: FakeLLMServer, tmp_path) -> None:
    users = _Users(_config(server.openai_url, tmp_path, retries=1, enabled=False))
    with pytest.raises(QAFailed) as qa_failed:
        await users.qa()
    assert [a.mode for a in qa_failed.value.attempts] == ["tool"] and "500" in qa_failed.value.error
    assert len(server.calls(CHAT)) == 2  # 1 try + 1 transport retry, one mode
    with pytest.raises(WriteFailed) as write_failed:
        await users.synth()
    assert write_failed.value.reason == "model_error" and len(server.calls(CHAT)) == 4
    with pytest.raises(ModelHTTPError) as judge_failed:
        await users.judge()
    assert judge_failed.value.status_code == 500 and len(server.calls(CHAT)) == 6


def test_overload_is_not_degraded_by_any_user(tmp_path):
    """HTTP 500 without a refusal (an overloaded or crashed server) is retried by the transport, then ends the
    ladder: another output mode cannot help, so none is tried."""
    with FakeLLMServer(models=("small-llm",), responder=lambda request: Fault("500")) as server:
        asyncio.run(_overloaded(server, tmp_path))


def test_what_a_ray_worker_learnt_reaches_the_drivers_judges(tmp_path):
    """On Ray the QA agent answers in a worker process, the judges ask from the driver: the worker hands its ladder's
    record back with each case's counts (``ray_executor._count``), so the driver's judge on the same served model
    starts at the mode that worked, as in one process (one request, not the QA agent's three)."""
    from evaluations.models.ladder import lessons
    from evaluations.pipeline.ray_executor import _count

    with FakeLLMServer(models=("small-llm",), responder=_small_model) as server:
        config = _config(server.openai_url, tmp_path, enabled=False)
        worker = _Users(config)
        assert asyncio.run(worker.qa()).mode == "prompted"
        learnt = lessons()
        assert [(url.rstrip("/"), name, modes) for (url, name), modes in learnt.items()] == [
            (server.openai_url.rstrip("/"), "small-llm", {"tool", "native"})]
        forget_failures()  # the driver: another process, which has learnt nothing itself
        driver = _Users(config)
        assert known_failures(driver.agent.model) == frozenset()
        _count({"calls": {}, "waits": [], "gave_up": 0, "ladder": learnt})
        assert known_failures(driver.agent.model) == {"tool", "native"}
        before = len(server.calls(CHAT))
        assert asyncio.run(driver.judge()).mode == "prompted"
        assert len(server.calls(CHAT)) - before == 1
    assert server.errors == []
