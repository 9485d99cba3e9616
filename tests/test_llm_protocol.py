"""The LLM/embedding server layer against a real HTTP server speaking Ollama's and OpenAI's APIs.

Drives the real ``ollama`` client, the real ``openai`` client and real pydantic-ai / pydantic-evals
through ``tests/fake_llm_server.py``; the LLM judge is also unit-tested with pydantic-ai's FunctionModel.
Texts come from the real SciFact corpus and EVOUNA (human-labelled answers) in ../shared/data.
"""

from __future__ import annotations

import asyncio
import gzip
import importlib.util
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from fake_llm_server import Fault, FakeLLMServer, bow_vector, closed_port_url, fake_llm_server, tool_call  # noqa: F401
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_evals import Case, Dataset

from evaluations.core.config import load_config
from evaluations.core.errors import EvaluationsError
from evaluations.models.embedders import build_embedder
from evaluations.models.remote_embedders import OllamaEmbedder, OpenAIEmbedder
from evaluations.evaluators.llm_judges import AnswerEquivalenceJudge, llm_judge
from evaluations.judging.correctness.llm import load_rubric
from evaluations.models.chat import build_model, check_model, describe_model, model_settings, ollama_v1_url
from evaluations.core.types import Answer, CaseMetadata, CaseOutput, RetrievalInputs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SYSTEMS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")


@pytest.fixture(scope="module")
def scifact_texts() -> list[str]:
    with gzip.open(DATA / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in itertools.islice(f, 7)]
    return [f"{r['title']} {r['text']}" for r in rows]


@pytest.fixture(scope="module")
def evouna_cases() -> list[tuple[str, list[str], str, bool]]:
    """(question, gold alternatives, a system's answer, the human label): 4 correct, 4 incorrect."""
    picked: dict[bool, list] = {True: [], False: []}
    with gzip.open(DATA / "evouna" / "NQ.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["improper"]:
                continue
            for system in SYSTEMS:
                label, answer = row[f"judge_{system}"], row[f"answer_{system}"]
                if isinstance(label, bool) and answer and len(picked[label]) < 4:
                    picked[label].append((row["question"], row["golden_answer"].split("/"), answer, label))
                    break
            if all(len(v) == 4 for v in picked.values()):
                break
    return picked[True] + picked[False]


def _config(server_url: str, **overrides):
    return load_config(None, {"providers.ollama.base_url": server_url, **overrides})


def _ollama_embed_config(url: str, **extra):
    return _config(url, **{"embeddings.model.provider": "ollama", "embeddings.model.name": "nomic-embed-text",
                           "embeddings.model.vector_dim": 64, "embeddings.model.batch_size": 3, **extra})


# -- embeddings --------------------------------------------------------------------------------------
def test_ollama_embedder_round_trip_in_batches(scifact_texts):
    with FakeLLMServer() as server:
        embedder = build_embedder(_ollama_embed_config(server.url))
        assert isinstance(embedder, OllamaEmbedder) and embedder.id == "ollama:nomic-embed-text"
        embedder.check()
        vectors = embedder.embed(scifact_texts)
        calls = server.calls("/api/embed")
    assert vectors.dtype == np.float32 and vectors.shape == (7, 64)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    expected = np.asarray([bow_vector(t, 64) for t in scifact_texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)  # row order survives batching
    # check() probes once, then batches of 3: 3 + 3 + 1
    assert [len(c.body["input"]) for c in calls] == [1, 3, 3, 1]
    assert all(c.body["model"] == "nomic-embed-text" for c in calls)


def test_openai_embedder_round_trip_with_api_key(scifact_texts):
    with FakeLLMServer(models=("text-embedding-3-small",)) as server:
        config = load_config(None, {
            "embeddings.model": {"provider": "openai", "name": "text-embedding-3-small", "vector_dim": 64,
                                 "base_url": server.openai_url, "batch_size": 4},
            "providers.api_keys": {"openai": "sk-test-123"},
        })
        embedder = build_embedder(config)
        assert isinstance(embedder, OpenAIEmbedder) and embedder.id == "openai:text-embedding-3-small"
        embedder.check()
        vectors = embedder.embed(scifact_texts)
        calls = server.calls("/v1/embeddings")
        listing = server.calls("/v1/models")
    expected = np.asarray([bow_vector(t, 64) for t in scifact_texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert [len(c.body["input"]) for c in calls] == [1, 4, 3]
    assert listing and all(c.headers.get("authorization") == "Bearer sk-test-123" for c in calls + listing)


def test_similar_texts_are_closer_than_unrelated(scifact_texts, fake_llm_server):
    embedder = build_embedder(_ollama_embed_config(fake_llm_server.url))
    doc, other = scifact_texts[0], scifact_texts[3]
    v = embedder.embed([doc, doc[: len(doc) // 2], other])
    assert v[0] @ v[1] > v[0] @ v[2]


def test_embedder_dimension_mismatch_names_the_key(scifact_texts):
    with FakeLLMServer() as server:
        embedder = build_embedder(_ollama_embed_config(server.url, **{"embeddings.model.vector_dim": 384}))
        with pytest.raises(EvaluationsError) as err:
            embedder.embed(scifact_texts[:2])
    assert err.value.where == "embeddings.model.vector_dim"
    assert "64" in err.value.message and "384" in err.value.message and "vector_dim: 64" in err.value.fix


def test_embedder_unreachable_server_names_url_key_and_fix():
    url = closed_port_url()
    embedder = build_embedder(_ollama_embed_config(url))
    with pytest.raises(EvaluationsError) as err:
        embedder.check()
    text = str(err.value)
    assert url in text and "providers.ollama.base_url" in text
    assert "start the server" in text and "embeddings.model.provider: embedded" in text


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_embedder_missing_model(provider):
    with FakeLLMServer(models=("llama3.2",)) as server:
        config = load_config(None, {
            "providers.ollama.base_url": server.url,
            "embeddings.model": {"provider": provider, "name": "mxbai-embed-large", "vector_dim": 64,
                                 "base_url": server.openai_url if provider == "openai" else ""},
        })
        embedder = build_embedder(config)
        with pytest.raises(EvaluationsError) as check_err:
            embedder.check()
        with pytest.raises(EvaluationsError) as embed_err:  # the server's 404 for an unknown model
            embedder.embed(["text"])
    for err in (check_err.value, embed_err.value):
        assert err.where == "embeddings.model.name" and "mxbai-embed-large" in err.message
        assert "embedded" in err.fix
    if provider == "ollama":
        assert "ollama pull mxbai-embed-large" in check_err.value.fix


def test_embedder_server_error_is_one_clear_error():
    with FakeLLMServer() as server:
        server.inject("500", times=10, path="/api/embed")
        embedder = build_embedder(_ollama_embed_config(server.url, **{"requests.backoff": 0.0}))
        with pytest.raises(EvaluationsError) as err:
            embedder.embed(["a", "b"])
        assert err.value.where == "providers.ollama.base_url" and server.url in err.value.message
        assert "500" in err.value.message


def test_ollama_client_chat_with_tool_calls():
    import ollama

    def responder(request):
        assert request["tools"][0]["function"]["name"] == "lookup"
        return tool_call("lookup", {"city": "Paris"})

    with FakeLLMServer(responder=responder) as server:
        response = ollama.Client(host=server.url).chat(
            model="llama3.2", messages=[{"role": "user", "content": "weather?"}],
            tools=[{"type": "function", "function": {"name": "lookup", "description": "d",
                                                     "parameters": {"type": "object", "properties": {}}}}],
        )
    assert response.message.tool_calls[0].function.name == "lookup"
    assert response.message.tool_calls[0].function.arguments == {"city": "Paris"}
    assert response.prompt_eval_count > 0 and response.eval_count > 0


# -- model factory and checks ---------------------------------------------------------------------
@pytest.mark.parametrize("url", ["http://h:11434", "http://h:11434/", "http://h:11434/v1", "http://h:11434/v1/",
                                 "http://h:11434/v1/v1"])
def test_ollama_url_ends_in_exactly_one_v1(url):
    assert ollama_v1_url(url) == "http://h:11434/v1"


def _answer_responder(request):
    tools = request.get("tools") or []
    if tools:
        return tool_call(tools[0]["function"]["name"], {"answer": "Paris", "cited_ids": ["d1"], "confidence": 0.9})
    return json.dumps({"answer": "Lyon", "cited_ids": [], "confidence": 0.25})


def test_agent_structured_output_through_tool_call_with_pinned_sampling():
    with FakeLLMServer(responder=_answer_responder) as server:
        config = _config(server.url + "/v1/", **{"qa.model": {"provider": "ollama", "name": "llama3.2",
                                                             "temperature": 0.3, "seed": 7, "max_tokens": 99}})
        model = build_model(config.qa.model, config)
        result = Agent(model, output_type=Answer).run_sync(
            "What is the capital of France?", model_settings=model_settings(config.qa.model))
        (call,) = server.calls("/v1/chat/completions")
    assert result.output == Answer(answer="Paris", cited_ids=["d1"], confidence=0.9)
    body = call.body
    assert body["model"] == "llama3.2" and body["stream"] is False
    assert body["temperature"] == 0.3 and body["seed"] == 7
    assert body["max_tokens"] == 99 and "max_completion_tokens" not in body  # Ollama ignores the latter
    assert body["tools"][0]["function"]["name"] == "final_result" and body["tool_choice"] == "required"
    usage = result.usage
    assert usage.input_tokens > 0 and usage.output_tokens > 0 and usage.requests == 1


def test_agent_native_json_schema_output_through_openai_provider():
    with FakeLLMServer(models=("gpt-test",), responder=_answer_responder) as server:
        config = load_config(None, {"qa.model": {"provider": "openai", "name": "gpt-test",
                                                 "base_url": server.openai_url},
                                    "providers.openai.api_key": "sk-abc"})
        check_model(config.qa.model, config, key="qa.model")
        result = Agent(build_model(config.qa.model, config), output_type=NativeOutput(Answer)).run_sync("capital?")
        (call,) = server.calls("/v1/chat/completions")
    assert result.output.answer == "Lyon" and result.output.confidence == 0.25
    assert call.body["response_format"]["type"] == "json_schema"
    assert call.body["response_format"]["json_schema"]["name"] == "Answer"
    assert call.headers["authorization"] == "Bearer sk-abc"


def test_check_model_unreachable_names_url_key_and_embedded_alternative():
    url = closed_port_url()
    config = _config(url, **{"qa.model": {"provider": "ollama", "name": "llama3.2"}})
    with pytest.raises(EvaluationsError) as err:
        check_model(config.qa.model, config, key="qa.model")
    text = str(err.value)
    assert f"{url}/api/tags" in text and "providers.ollama.base_url" in text and "qa.model" in text
    assert "--qa-model embedded" in text


def test_check_model_openai_unreachable_names_its_key():
    url = closed_port_url() + "/v1"
    config = load_config(None, {"judge.model": {"provider": "openai", "name": "gpt-x", "base_url": url}})
    with pytest.raises(EvaluationsError) as err:
        check_model(config.judge.model, config, key="judge.model")
    assert err.value.where == "judge.model.base_url" and f"{url}/models" in err.value.message
    assert "--judge embedded" in err.value.fix


def test_check_model_missing_model_and_present_model():
    with FakeLLMServer(models=("llama3.2",)) as server:
        config = _config(server.url + "/v1", **{"judge.model": {"provider": "ollama", "name": "qwen3"},
                                                 "qa.model": {"provider": "ollama", "name": "llama3.2"}})
        check_model(config.qa.model, config, key="qa.model")  # bare name matches "llama3.2:latest"
        with pytest.raises(EvaluationsError) as err:
            check_model(config.judge.model, config, key="judge.model")
        paths = [r.path for r in server.requests]
    assert paths == ["/api/tags", "/api/tags"]  # the /v1 in the base URL is stripped for the native API
    assert err.value.where == "judge.model.name" and "ollama pull qwen3" in err.value.fix
    assert "llama3.2:latest" in err.value.message


def test_check_model_embedded_matches_installed_runtime():
    config = load_config(None)
    has_runtime = importlib.util.find_spec("llama_cpp") is not None
    if has_runtime:
        check_model(config.qa.model, config, key="qa.model")
    else:
        with pytest.raises(EvaluationsError) as err:
            check_model(config.qa.model, config, key="qa.model")
        assert "pip install llama-cpp-python" in err.value.fix and err.value.where == "qa.model.provider"


def test_describe_model_records_resolved_url_and_sampling():
    config = _config("http://gpu:11434/", **{"qa.model": {"provider": "ollama", "name": "qwen3", "seed": 3}})
    assert describe_model(config.qa.model, config) == {
        "provider": "ollama", "name": "qwen3", "base_url": "http://gpu:11434/v1",
        "temperature": 0.0, "seed": 3, "max_tokens": 256,
    }
    assert model_settings(config.qa.model) == {"temperature": 0.0, "seed": 3, "max_tokens": 256}


# -- the LLM judge over the wire -------------------------------------------------------------------------
def _section(prompt: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, re.S)
    assert match, f"no <{tag}> in the judge prompt"
    return match.group(1)


def _user_prompt(request) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


def _dataset(cases, judge) -> Dataset:
    return Dataset(name="evouna-nq", evaluators=[judge], cases=[
        Case(name=f"q{i}", inputs=RetrievalInputs(query=q), metadata=CaseMetadata(query_id=f"q{i}", answers=gold))
        for i, (q, gold, _, _) in enumerate(cases)
    ])


def _task(cases):
    answers = {q: a for q, _, a, _ in cases}

    async def task(inputs: RetrievalInputs) -> CaseOutput:
        return CaseOutput(answer=Answer(answer=answers[inputs.query]))

    return task


def test_judge_verdicts_reach_the_report(evouna_cases):
    """A scripted judge returns the human label of each EVOUNA case; the report must show exactly those."""
    by_question = {q: (gold, a, label) for q, gold, a, label in evouna_cases}
    seen = []

    def responder(request):
        prompt = _user_prompt(request)
        question = _section(prompt, "Input")
        gold, answer, label = by_question[question]
        seen.append((question, _section(prompt, "Output"), _section(prompt, "ExpectedOutput").split("\n")))
        assert _section(prompt, "Rubric") == load_rubric()
        name = request["tools"][0]["function"]["name"]
        return tool_call(name, {"reason": f"human label {label}", "pass": label, "score": float(label)})

    with FakeLLMServer(models=("judge-llm",), responder=responder) as server:
        config = _config(server.url, **{"judge.model": {"provider": "ollama", "name": "judge-llm", "seed": 5}})
        judge = llm_judge(config.judge.model, config)
        report = _dataset(evouna_cases, judge).evaluate_sync(_task(evouna_cases), max_concurrency=4, progress=False)
        bodies = [c.body for c in server.calls("/v1/chat/completions")]
    assert server.errors == []
    assert sorted(seen) == sorted((q, a, gold) for q, gold, a, _ in evouna_cases)
    assert all(b["seed"] == 5 and b["temperature"] == 0.0 for b in bodies)
    verdicts = {c.inputs.query: c.assertions["llm_judge"].value for c in report.cases}
    assert verdicts == {q: label for q, _, _, label in evouna_cases}
    assert sum(verdicts.values()) == 4 and not report.failures
    assert all(not c.evaluator_failures for c in report.cases)


@pytest.mark.parametrize("fault", ["malformed_output", "http_500", "malformed_json", "drop"])
def test_judge_faults_are_retried_then_counted_as_evaluator_failures(evouna_cases, fault):
    cases = evouna_cases[:2]

    def responder(request):
        if fault == "malformed_output":  # arguments / text that are not JSON: pydantic-ai asks again
            if request.get("tools"):
                return tool_call(request["tools"][0]["function"]["name"], '{"reason": "x", "pass": ')
            return '{"reason": "x", "pass": '
        return Fault({"http_500": "500", "malformed_json": "malformed", "drop": "drop"}[fault])

    with FakeLLMServer(models=("judge-llm",), responder=responder) as server:
        config = _config(server.url, **{"judge.model": {"provider": "ollama", "name": "judge-llm"},
                                        "judge.retries": 1, "requests": {"retries": 2, "backoff": 0.0}})
        report = _dataset(cases, llm_judge(config.judge.model, config)).evaluate_sync(_task(cases), progress=False)
        n_requests = len(server.calls("/v1/chat/completions"))
    # malformed output: 1 try + judge.retries in each structured mode (tool, native, prompted), then one
    # plain-text try that is neither yes nor no (judges.llm degrades); 500 / dropped connection / a 200
    # whose body is not JSON: 1 try + requests.retries (evaluations.models.retry), not degraded
    tries = {"malformed_output": 3 * 2 + 1, "http_500": 3, "drop": 3, "malformed_json": 3}[fault]
    # the plain-text try asks for logprobs: the first is streamed (models.streamed) and, its stream carrying none,
    # asked again plainly; the other case's, asked meanwhile, waits for it and goes plainly
    streamed = sum(bool(c.body.get("stream")) for c in server.calls("/v1/chat/completions"))
    assert streamed == (fault == "malformed_output")
    assert n_requests == len(cases) * tries + streamed
    for case in report.cases:
        assert case.assertions == {}
        (failure,) = case.evaluator_failures
        assert failure.name == "AnswerEquivalenceJudge" and failure.error_message
    assert len([f for c in report.cases for f in c.evaluator_failures]) == len(cases)


def test_judge_transient_500_is_retried_and_then_judges():
    def responder(request):
        return tool_call(request["tools"][0]["function"]["name"], {"reason": "same", "pass": True, "score": 1.0})

    cases = [("who wrote hamlet", ["William Shakespeare"], "Shakespeare", True)]
    with FakeLLMServer(models=("judge-llm",), responder=responder) as server:
        server.inject("500", times=1, path="/v1/chat/completions")
        config = _config(server.url, **{"judge.model": {"provider": "ollama", "name": "judge-llm"}})
        report = _dataset(cases, llm_judge(config.judge.model, config)).evaluate_sync(_task(cases), progress=False)
        assert len(server.calls("/v1/chat/completions")) == 2
    assert report.cases[0].assertions["llm_judge"].value is True


# -- the LLM judge, unit tests with FunctionModel -----------------------------------------------------------
class _ScriptedJudge:
    """A FunctionModel judge: pass iff a gold alternative occurs in the output; records what it saw."""

    def __init__(self, malformed: bool = False):
        self.prompts: list[str] = []
        self.settings: list[dict] = []
        self.malformed = malformed

    def __call__(self, messages, info: AgentInfo) -> ModelResponse:
        prompt = messages[0].parts[-1].content
        self.prompts.append(prompt)
        self.settings.append(dict(info.model_settings or {}))
        name = info.output_tools[0].name
        if self.malformed:
            return ModelResponse(parts=[ToolCallPart(name, {"reason": "no verdict"})])  # `pass` missing
        output = _section(prompt, "Output").lower()
        ok = any(g.lower() in output for g in _section(prompt, "ExpectedOutput").split("\n"))
        return ModelResponse(parts=[ToolCallPart(name, {"reason": "checked", "pass": ok, "score": float(ok)})])


def _judge(script: _ScriptedJudge, retries: int = 2) -> AnswerEquivalenceJudge:
    return AnswerEquivalenceJudge(model=FunctionModel(script), rubric=load_rubric(), retries=retries,
                                  model_settings={"temperature": 0.0, "seed": 11, "max_tokens": 64})


def test_judge_sees_question_answer_text_and_all_gold_alternatives():
    script = _ScriptedJudge()
    cases = [("who sang hey jude", ["The Beatles", "Beatles"], "It was the Beatles.", True),
             ("capital of australia", ["Canberra"], "Sydney", False)]
    report = _dataset(cases, _judge(script)).evaluate_sync(_task(cases), progress=False)
    assert {c.inputs.query: c.assertions["llm_judge"].value for c in report.cases} == {
        "who sang hey jude": True, "capital of australia": False}
    assert report.cases[0].assertions["llm_judge"].reason == "checked"
    beatles = next(p for p in script.prompts if "hey jude" in p)
    assert _section(beatles, "Input") == "who sang hey jude"
    assert _section(beatles, "Output") == "It was the Beatles."  # the answer text, not the CaseOutput JSON
    assert _section(beatles, "ExpectedOutput").split("\n") == ["The Beatles", "Beatles"]
    assert _section(beatles, "Rubric") == load_rubric()
    assert all(s == {"temperature": 0.0, "seed": 11, "max_tokens": 64} for s in script.settings)


def test_judge_gives_no_verdict_without_answer_or_gold():
    script = _ScriptedJudge()
    dataset = Dataset(name="x", evaluators=[_judge(script)], cases=[
        Case(name="no-gold", inputs=RetrievalInputs(query="q1"), metadata=CaseMetadata(query_id="1")),
        Case(name="no-answer", inputs=RetrievalInputs(query="q2"), metadata=CaseMetadata(query_id="2", answers=["x"])),
        Case(name="blank", inputs=RetrievalInputs(query="q3"), metadata=CaseMetadata(query_id="3", answers=["x"])),
    ])

    async def task(inputs: RetrievalInputs) -> CaseOutput:
        return {"q1": CaseOutput(answer=Answer(answer="something")), "q2": CaseOutput(),
                "q3": CaseOutput(answer=Answer(answer="  "))}[inputs.query]

    report = dataset.evaluate_sync(task, progress=False)
    assert script.prompts == []  # the model is asked nothing
    by_name = {c.name: c for c in report.cases}
    # no gold: nothing to judge; no answer (QA skipped or failed): counted by the summary, not judged here
    assert by_name["no-gold"].assertions == {} and by_name["no-answer"].assertions == {}
    # a blank answer is a non-answer: incorrect, decided by the screen (judging.correctness.nonanswer) without the model
    blank = by_name["blank"]
    assert blank.assertions["llm_judge"].value is False and blank.labels["answer_kind"].value == "empty"
    assert not any(c.evaluator_failures for c in report.cases)


@pytest.mark.parametrize("retries", [0, 3])
def test_judge_invalid_verdict_retried_judge_retries_times(retries):
    script = _ScriptedJudge(malformed=True)
    cases = [("who sang hey jude", ["The Beatles"], "The Beatles", True)]
    judge = _judge(script, retries=retries)
    judge.modes = ("tool",)  # one output mode: no degradation (tested in tests/test_judge_embedded.py)
    report = _dataset(cases, judge).evaluate_sync(_task(cases), progress=False)
    assert len(script.prompts) == 1 + retries
    (failure,) = report.cases[0].evaluator_failures
    assert "retries" in failure.error_message and report.cases[0].assertions == {}


def test_llm_judge_factory_pins_model_settings_and_retries():
    config = _config("http://gpu:11434", **{"judge.model": {"provider": "ollama", "name": "qwen3", "seed": 9,
                                                             "max_tokens": 32}, "judge.retries": 4})
    judge = llm_judge(config.judge.model, config)
    assert judge.model.model_name == "qwen3" and judge.model.base_url == "http://gpu:11434/v1/"
    assert judge.model_settings == {"temperature": 0.0, "seed": 9, "max_tokens": 32}
    assert judge.retries == 4 and judge.rubric == load_rubric()
    assert judge.build_serialization_arguments()["model"] == judge.model.model_id


def test_streaming_chat_both_apis():
    """``stream: true`` is honoured: SSE for /v1 (pydantic-ai run_stream), NDJSON for /api/chat."""
    import ollama

    with FakeLLMServer(responder=_answer_responder) as server:
        config = _config(server.url, **{"qa.model": {"provider": "ollama", "name": "llama3.2"}})
        agent = Agent(build_model(config.qa.model, config), output_type=Answer)

        async def stream() -> Answer:
            async with agent.run_stream("capital?") as run:
                return await run.get_output()

        streamed = asyncio.run(stream())
        parts = list(ollama.Client(host=server.url).chat(
            model="llama3.2", messages=[{"role": "user", "content": "hi"}], stream=True))
        (call,) = server.calls("/v1/chat/completions")
    assert call.body["stream"] is True and streamed.answer == "Paris"
    assert "".join(p.message.content for p in parts) == json.dumps(
        {"answer": "Lyon", "cited_ids": [], "confidence": 0.25}) and parts[-1].done


def test_batch_judge_served_bounds_concurrency_caches_verdicts_and_counts_failures(evouna_cases, tmp_path,
                                                                                     monkeypatch):
    """judge-agreement's served LLM judge: one verdict per example (the human label the scripted judge returns),
    at most ``concurrency`` requests in flight, a non-answer screened without a request, a judge failure NaN;
    verdicts cached on disk (a second pass asks nothing), ``cache=False`` neither reads nor writes them."""
    import threading
    import time

    from evaluations.judging.labels.data import LabelledAnswer
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.correctness.llm import batch_judge

    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", str(tmp_path))
    by_question = {q: label for q, _, _, label in evouna_cases}
    lock, in_flight, peak = threading.Lock(), [0], [0]

    def responder(request):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1
        question = _section(_user_prompt(request), "Input")
        if question == "broken":
            return Fault("400")  # refused in every mode: the ladder gives up, the verdict is not judged
        label = by_question[question]
        return tool_call(request["tools"][0]["function"]["name"], {"reason": "label", "pass": label,
                                                                   "score": float(label)})

    examples = [LabelledAnswer(q, tuple(gold), a, label, q) for q, gold, a, label in evouna_cases]
    examples += [LabelledAnswer("who wrote hamlet", ("Shakespeare",), "", False, "empty"),
                 LabelledAnswer("broken", ("x",), "y", False, "broken")]
    with FakeLLMServer(models=("judge-llm",), responder=responder) as server:
        config = _config(server.url, **{"judge.model": {"provider": "ollama", "name": "judge-llm"},
                                        "judge.retries": 0, "requests": {"retries": 0}, "cache.enabled": False})
        verdicts = batch_judge(config.judge.model, config, concurrency=2)(examples)
        asked, peak_of_two = len(server.calls("/v1/chat/completions")), peak[0]
        peak[0] = 0
        again = batch_judge(config.judge.model, config, concurrency=2)(examples)
        cached_pass = len(server.calls("/v1/chat/completions")) - asked
        uncached = batch_judge(config.judge.model, config, concurrency=3, cache=False)(examples)
        uncached_pass = len(server.calls("/v1/chat/completions")) - asked - cached_pass
    expected = [float(label) for _, _, _, label in evouna_cases] + [0.0, float("nan")]
    np.testing.assert_array_equal(verdicts, expected)
    np.testing.assert_array_equal(again, expected)
    np.testing.assert_array_equal(uncached, expected)
    # one request per judged example; 6 for the broken one: tool, native, prompted refused once each, text refused
    # with logprobs (streamed, then plainly: models.streamed) and again without them
    assert asked == len(evouna_cases) + 6 and uncached_pass == asked
    assert cached_pass == 6  # only the failed verdict is asked again: nothing is cached for it
    assert peak_of_two == 2 and 1 < peak[0] <= 3
    assert len(VerdictCache()) == len(evouna_cases)
