"""Per-call timeout and retries (evaluations/models/retry.py) against a real HTTP server injecting faults.

Real pydantic-ai agents (the QA agent of ``evaluations.qa``) and the real openai / ollama embedding clients
talk to tests/fake_llm_server.py. Waits are checked through the backoff tenacity chose (``RETRY_STATS.waits``),
never by timing the test.
"""

from __future__ import annotations

import gzip
import itertools
import json

import numpy as np
import pytest
from conftest import SCIFACT
from fake_llm_server import FakeLLMServer, bow_vector, tool_call
from pydantic_ai.exceptions import ModelHTTPError

from evaluations.core.config import load_config
from evaluations.models.embedders import build_embedder
from evaluations.models.cache import CALL_STATS, reset_call_stats
from evaluations.models.retry import RETRY_STATS
from evaluations.pipeline.qa_agent import build_qa_agent
from evaluations.models.chat import build_model, model_settings

CHAT = "/v1/chat/completions"
FAST = {"timeout": 0.4, "retries": 3, "backoff": 0.01, "max_backoff": 0.05}


def _answer(request):
    tool = request["tools"][0]["function"]
    return tool_call(tool["name"], {"answer": "Paris", "cited_ids": ["c1"], "confidence": 0.9})


def _agent(server: FakeLLMServer, **requests):
    config = load_config(None, {"qa.model": {"provider": "openai", "name": "qa-llm", "base_url": server.openai_url},
                                "requests": {**FAST, **requests}, "cache.enabled": False})
    return build_qa_agent(build_model(config.qa.model, config), model_settings(config.qa.model))


def _ask(agent):
    """One run of the real QA agent (output tool mode): (answer, usage)."""
    result = agent.run_sync("Context:\n[c1] The capital of France is Paris.\n\nQuestion: What is the capital?")
    return result.output, {"requests": result.usage.requests}


@pytest.fixture(autouse=True)
def _fresh_stats():
    RETRY_STATS.reset()
    reset_call_stats()


@pytest.mark.parametrize("kind", ["500", "429", "timeout", "malformed", "drop"])
def test_each_transient_fault_is_retried_until_the_answer_arrives(kind):
    with FakeLLMServer(models=("qa-llm",), responder=_answer, hang=1.0, retry_after=0) as server:
        server.inject(kind, times=2, path=CHAT)
        answer, usage = _ask(_agent(server))
        requests = server.calls(CHAT)
    assert answer.answer == "Paris" and answer.cited_ids == ["c1"]
    assert len(requests) == 3 and usage["requests"] == 1  # two faults, one answer; the agent saw one request
    stats = RETRY_STATS.as_dict()
    assert stats["retries"] == 2 and stats["gave_up"] == 0
    reason = {"500": "HTTP 500", "429": "HTTP 429", "timeout": "ReadTimeout", "malformed": "MalformedResponse",
              "drop": "RemoteProtocolError"}[kind]
    assert stats["by_reason"] == {reason: 2}
    assert CALL_STATS["chat"].as_dict() == {"calls": 1, "cached": 0, "live": 1, "failed": 0}


def test_exponential_backoff_with_jitter_stays_in_its_bounds():
    with FakeLLMServer(models=("qa-llm",), responder=_answer) as server:
        server.inject("500", times=3, path=CHAT)
        _ask(_agent(server, backoff=0.02, max_backoff=1.0))
    waits = [w for _, w in RETRY_STATS.waits]
    # wait_n = min(max_backoff, backoff * 2^(n-1) + U(0, backoff))
    assert len(waits) == 3
    for n, wait in enumerate(waits, start=1):
        assert 0.02 * 2 ** (n - 1) <= wait <= 0.02 * 2 ** (n - 1) + 0.02


def test_retry_after_is_honoured_and_capped():
    with FakeLLMServer(models=("qa-llm",), responder=_answer, retry_after=1) as server:
        server.inject("429", times=1, path=CHAT)
        _ask(_agent(server))
        server.retry_after = 30  # above requests.max_retry_after: waits the cap, not 30 s
        server.inject("429", times=1, path=CHAT)
        _ask(_agent(server, max_retry_after=0.2))
    assert list(RETRY_STATS.waits) == [("HTTP 429", 1.0), ("HTTP 429", 0.2)]  # not the 0.01 s backoff


@pytest.mark.parametrize("kind", ["400", "missing-model", "500-rejected"])
def test_other_4xx_are_not_retried(kind):
    """Nor a 500 whose body says the request was refused (llama-cpp-python's answer to an unknown
    response_format): the same request gets the same refusal, so waiting for it only costs the backoff."""
    with FakeLLMServer(models=("qa-llm",) if kind == "400" else ("another",), responder=_answer) as server:
        if kind != "missing-model":
            server.inject(kind, times=1, path=CHAT)
        with pytest.raises(ModelHTTPError) as err:
            _ask(_agent(server))
        assert len(server.calls(CHAT)) == 1
    assert err.value.status_code == {"400": 400, "missing-model": 404, "500-rejected": 500}[kind]
    assert RETRY_STATS.as_dict()["retries"] == 0
    assert CALL_STATS["chat"].as_dict()["failed"] == 1


def test_retries_exhausted_surface_the_servers_last_reply():
    with FakeLLMServer(models=("qa-llm",), responder=_answer) as server:
        server.inject("500", times=10, path=CHAT)
        with pytest.raises(ModelHTTPError) as err:
            _ask(_agent(server, retries=2))
        assert len(server.calls(CHAT)) == 3
    assert err.value.status_code == 500 and "injected" in str(err.value.body)
    assert RETRY_STATS.as_dict()["gave_up"] == 1


def _scifact_texts(n: int) -> list[str]:
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        return [f"{r['title']} {r['text']}" for r in map(json.loads, itertools.islice(f, n))]


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_embedding_requests_recover_from_faults(provider):
    texts = _scifact_texts(5)
    path = "/api/embed" if provider == "ollama" else "/v1/embeddings"
    with FakeLLMServer(models=("embed-model",), hang=1.0) as server:
        config = load_config(None, {
            "providers.ollama.base_url": server.url, "requests": {**FAST, "retries": 5}, "cache.enabled": False,
            "embeddings.model": {"provider": provider, "name": "embed-model", "vector_dim": 64, "batch_size": 2,
                                 "base_url": server.openai_url if provider == "openai" else ""},
        })
        embedder = build_embedder(config)
        for kind in ("drop", "malformed", "429", "timeout", "500"):
            server.inject(kind, times=1, path=path)
        vectors = embedder.embed(texts)
        assert len(server.calls(path)) == 3 + 5  # 3 batches + 5 retried faults
    np.testing.assert_allclose(vectors, np.asarray([bow_vector(t, 64) for t in texts], dtype=np.float32), atol=1e-6)
    assert RETRY_STATS.as_dict()["retries"] == 5
