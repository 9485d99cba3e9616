"""Small models behind a server answer instead of failing: the output-mode ladder of the QA agent.

Unit tests drive the ladder with pydantic-ai FunctionModels that only manage some modes (what the agent really
sends is read from ``AgentInfo``); the end-to-end test runs the CLI against a real llama.cpp OpenAI-compatible
server (tests/llama_server.py) with SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest
from conftest import REPLIQA_20
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.usage import RequestUsage

from evaluations.pipeline.qa_agent import (
    OUTPUT_RETRIES,
    SERVED_LADDER,
    QAFailed,
    QAResult,
    answer_question,
    build_qa_agent,
    output_modes,
    qa_ladder,
)
from evaluations.core.types import Answer, RetrievedChunk

_JSON_PROFILE = ModelProfile(supports_json_schema_output=True, supports_json_object_output=True)


@pytest.fixture(scope="module")
def row() -> dict:
    with gzip.open(REPLIQA_20, "rt", encoding="utf-8") as handle:
        return json.loads(handle.readline())


def _chunks(row: dict) -> list[RetrievedChunk]:
    paragraphs = [p for p in row["document_extracted"].split("\n") if len(p.split()) > 12][:2]
    return [RetrievedChunk(chunk_id=f"c{i}", doc_id="d", text=p, score=1.0) for i, p in enumerate(paragraphs)]


def _mode(info: AgentInfo) -> str:
    """The mode the agent asked for, as the model sees it."""
    if info.output_tools:
        return "tool"
    return info.model_request_parameters.output_mode  # "native" | "prompted" | "text"


def _reply(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content=text)], usage=RequestUsage(input_tokens=10, output_tokens=3))


def _run(model: FunctionModel, row: dict, **kw) -> QAResult:
    return asyncio.run(answer_question(build_qa_agent(model), row["question"], _chunks(row), **kw))


def test_a_model_without_tool_calls_falls_back_to_json_schema(row):
    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(_mode(info))
        if info.output_tools:  # a small model ignores the tool and chats
            return _reply("The answer is in the first passage.")
        schema = info.model_request_parameters.output_object.json_schema
        assert set(schema["properties"]) == {"answer", "cited_ids", "confidence"}
        return _reply('{"answer": "Healthy Horizons", "cited_ids": ["c0"], "confidence": 0.7}')

    agent = build_qa_agent(FunctionModel(model, profile=_JSON_PROFILE))
    ladder = qa_ladder(agent, SERVED_LADDER)  # one per run, as the run's task keeps it
    result = asyncio.run(answer_question(agent, row["question"], _chunks(row), ladder=ladder))
    assert seen == ["tool"] * (OUTPUT_RETRIES + 1) + ["native"]
    assert result.mode == "native"
    assert result.answer == Answer(answer="Healthy Horizons", cited_ids=["c0"], confidence=0.7)
    assert result.raw_text == '{"answer": "Healthy Horizons", "cited_ids": ["c0"], "confidence": 0.7}'
    assert [(a.mode, a.error is None) for a in result.attempts] == [("tool", False), ("native", True)]
    assert "UnexpectedModelBehavior" in result.attempts[0].error
    assert result.attempts[0].raw_text == "The answer is in the first passage."
    # usage sums every request of every attempt
    assert result.usage == {"input_tokens": 10 * len(seen), "output_tokens": 3 * len(seen), "requests": len(seen)}
    answer, usage = result  # the old (answer, usage) unpacking still works
    assert answer is result.answer and usage is result.usage

    # the next question starts at the mode that worked: the failed tool calls are not paid again
    seen.clear()
    again = asyncio.run(answer_question(agent, row["question"], _chunks(row), ladder=ladder))
    assert seen == ["native"] and again.mode == "native" and [a.mode for a in again.attempts] == ["native"]


def test_prompted_json_then_plain_text(row):
    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        mode = _mode(info)
        seen.append(mode)
        if mode == "prompted":  # the schema travels in the instructions
            assert '"cited_ids"' in (info.instructions or "")
            return _reply('{"answer": "x", "confidence": 7}')  # out of bounds: retried, then given up
        if mode == "text":
            return _reply("  Healthy Horizons trained the volunteers.  ")
        return _reply("no structure here")

    result = _run(FunctionModel(model, profile=_JSON_PROFILE), row, modes=SERVED_LADDER)
    per_mode = OUTPUT_RETRIES + 1
    assert seen == ["tool"] * per_mode + ["native"] * per_mode + ["prompted"] * per_mode + ["text"]
    assert result.mode == "text" and [a.mode for a in result.attempts] == list(SERVED_LADDER)
    assert result.answer.answer == "Healthy Horizons trained the volunteers."
    assert result.answer.cited_ids == [] and result.answer.confidence is None  # plain text: no citations/confidence
    assert result.attempts[2].raw_text == '{"answer": "x", "confidence": 7}'
    assert result.usage["requests"] == len(seen)


def test_total_failure_raises_with_what_the_model_said(row):
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if _mode(info) == "text":
            return ModelResponse(parts=[], usage=RequestUsage(input_tokens=10, output_tokens=0))  # says nothing
        return ModelResponse(parts=[ToolCallPart(tool_name="nope", args="{}")] if info.output_tools else
                             [TextPart(content="{broken json")], usage=RequestUsage(input_tokens=10, output_tokens=2))

    with pytest.raises(QAFailed) as failed:
        _run(FunctionModel(model, profile=_JSON_PROFILE), row, modes=SERVED_LADDER)
    err = failed.value
    assert [a.mode for a in err.attempts] == list(SERVED_LADDER)
    assert all(a.error for a in err.attempts)
    assert err.raw_text == "{broken json"  # the last non-empty reply (prompted JSON), not the empty one
    assert err.error == err.attempts[-1].error
    assert err.usage["requests"] == sum(a.usage["requests"] for a in err.attempts) >= 4
    assert err.usage["input_tokens"] == 10 * err.usage["requests"]


def test_modes_follow_the_model_kind():
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    served = OpenAIChatModel("m", provider=OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="x"))
    assert output_modes(served) == SERVED_LADDER
    assert output_modes(FunctionModel(lambda m, i: _reply(""), model_name="embedded:smollm2-135m")) == ("grammar",)
    assert output_modes(FunctionModel(lambda m, i: _reply(""))) == ("tool",)


def test_cli_against_a_real_llama_cpp_server_answers_the_repliqa_sample(llama_server, repliqa_db, tmp_path,
                                                                         fresh_model_cache, cli, monkeypatch):
    """SmolLM2-135M behind llama.cpp's OpenAI-compatible server: >= 90% of the first RepliQA questions answered
    (two: the first pays the ladder's refused modes, the second starts at the mode that worked). The index is the
    session's RepliQA index (``repliqa_db``); the call cache is this test's own (its calls are counted). The CLI
    runs in-process (``cli``): what is tested is the command against the real server, not a process boundary (a
    subprocess re-imports everything, seconds per run)."""
    out = tmp_path / "out"
    # short answers (16 tokens) from a short context (400 characters) keep the test fast: every request is a prompt
    # the real server reads whole (the ladder's modes each change it), and the first question pays the ladder's
    # refused modes, eight requests; the base URL comes from the env
    config = tmp_path / "haiku.rag.yaml"
    config.write_text("qa:\n  model: {provider: openai, name: x, max_tokens: 16}\n  max_context_chars: 400\n")
    monkeypatch.setenv("OPENAI_BASE_URL", llama_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "")
    code, _, err = cli(["repliqa", "--source", str(REPLIQA_20), "--limit", "2", "--config", str(config),
                        "--qa-model", f"openai:{llama_server.model_id}", "--db", str(repliqa_db), "--out", str(out),
                        "--no-progress", "--concurrency", "1"])
    assert code == 0, err[-3000:] + "\n--- server log ---\n" + llama_server.log[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert summary["run"]["qa_model"]["provider"] == "openai"
    assert summary["run"]["qa_model"]["base_url"] == llama_server.base_url
    assert len(records) == summary["counts"]["cases"] == 2
    answered = [r for r in records if r["answer"] and r["answer"]["answer"].strip()]
    modes = {}
    for r in records:
        modes[r["qa"]["mode"]] = modes.get(r["qa"]["mode"], 0) + 1
    print(f"\nanswered {len(answered)}/{len(records)}; modes {modes}")
    assert len(answered) / len(records) >= 0.9, [(r["qa"]["error"], r["qa"]["raw_text"]) for r in records]
    for r in answered:
        assert r["qa"]["status"] == "ok" and r["qa"]["mode"] in SERVED_LADDER
        assert r["usage"]["requests"] >= 1 and r["usage"]["input_tokens"] > 0
        assert r["qa"]["raw_text"]
    # retrieval stayed on: every case has a ranking and metrics
    assert all(r["retrieved"] and "ndcg@10" in r["metrics"] for r in records)
    # the server refuses response_format json_schema with HTTP 500 and a validation error: not retried
    calls = summary["model_calls"]
    assert calls["retries"]["retries"] == 0 and calls["chat"]["live"] == calls["chat"]["calls"] > len(records)

    # the same command again: every reply from the cache, none of the refused calls repeated, the same answers
    again = tmp_path / "again"
    code, _, err = cli(["repliqa", "--source", str(REPLIQA_20), "--limit", "2", "--config", str(config),
                        "--qa-model", f"openai:{llama_server.model_id}", "--db", str(repliqa_db), "--out", str(again),
                        "--no-progress", "--concurrency", "1", "--skip-db"])
    assert code == 0, err[-3000:]
    warm = json.loads((again / "summary.json").read_text())
    assert warm["model_calls"]["chat"]["live"] == 0 and warm["model_calls"]["chat"]["cached"] > 0
    warm_records = [json.loads(line) for line in (again / "cases.jsonl").read_text().splitlines()]
    for cold, hot in zip(records, warm_records, strict=True):
        assert (hot["answer"], hot["qa"]["mode"], hot["qa"]["raw_text"], hot["usage"]) == \
            (cold["answer"], cold["qa"]["mode"], cold["qa"]["raw_text"], cold["usage"])
    assert warm["answers"]["judges"] == summary["answers"]["judges"]
