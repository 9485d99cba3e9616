"""The on-disk model-call cache (evaluations/models/cache.py) with real pydantic-ai agents and a real HTTP server.

Calls are counted where they land: at tests/fake_llm_server.py. Two processes share one cache file; the CLI's
``--no-cache`` reaches the config. (A whole CLI run, cold then warm: benchmarks/cache_rerun.py.)
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import REPLIQA_20, SCIFACT
from fake_llm_server import FakeLLMServer, Fault, bow_vector, tool_call
from pydantic import BaseModel
from pydantic_ai import Agent

from evaluations.core.config import load_config
from evaluations.models.embedders import build_embedder
from evaluations.models.ladder import forget_failures
from evaluations.models.cache import CALL_STATS, CachedModel, ModelCache, call_stats_line, reset_call_stats
from evaluations.pipeline.qa_agent import INSTRUCTIONS, SERVED_LADDER, answer_question, build_qa_agent
from evaluations.models.chat import build_model, model_settings
from evaluations.core.types import RetrievedChunk

CHAT = "/v1/chat/completions"
PROMPT = "Context:\n[c1] The capital of France is Paris.\n\nQuestion: What is the capital of France?"


def _answer(request):
    tool = request["tools"][0]["function"]
    return tool_call(tool["name"], {"answer": f"Paris ({request['model']})", "cited_ids": ["c1"], "confidence": 0.9})


def _agent(base_url: str, cache_path, name="qa-llm", enabled=True, **sampling):
    config = load_config(None, {
        "qa.model": {"provider": "openai", "name": name, "base_url": base_url, **sampling},
        "cache": {"enabled": enabled, "path": str(cache_path)}, "requests": {"retries": 0},
    })
    return build_qa_agent(build_model(config.qa.model, config), model_settings(config.qa.model))


@pytest.fixture(autouse=True)
def _fresh_stats():
    reset_call_stats()


def test_repeated_request_is_answered_from_the_cache_and_every_key_part_misses(tmp_path):
    cache = tmp_path / "calls.sqlite"
    with FakeLLMServer(models=("qa-llm", "other-llm"), responder=_answer) as server, \
            FakeLLMServer(models=("qa-llm",), responder=_answer) as second:
        first = _agent(server.openai_url, cache).run_sync(PROMPT).output
        assert len(server.calls(CHAT)) == 1
        again = _agent(server.openai_url, cache).run_sync(PROMPT)  # a new agent and model: same request
        assert len(server.calls(CHAT)) == 1 and again.output == first
        assert again.usage.input_tokens > 0  # the cached reply keeps its usage
        # each part of the key: sampling, model, message, base URL -> a new call each
        _agent(server.openai_url, cache, temperature=0.7).run_sync(PROMPT)
        _agent(server.openai_url, cache, name="other-llm").run_sync(PROMPT)
        _agent(server.openai_url, cache).run_sync(PROMPT + " ")
        _agent(server.openai_url, cache, max_tokens=17).run_sync(PROMPT)
        assert len(server.calls(CHAT)) == 5
        _agent(second.openai_url, cache).run_sync(PROMPT)
        assert len(second.calls(CHAT)) == 1
        # and each of them is now cached too
        _agent(server.openai_url, cache, temperature=0.7).run_sync(PROMPT)
        _agent(second.openai_url, cache).run_sync(PROMPT)
        assert len(server.calls(CHAT)) == 5 and len(second.calls(CHAT)) == 1
    assert CALL_STATS["chat"].as_dict() == {"calls": 9, "cached": 3, "live": 6, "failed": 0}
    assert call_stats_line() == "model calls: 9 (cached 3)"
    with sqlite3.connect(cache) as conn:
        assert conn.execute("SELECT COUNT(*) FROM calls WHERE kind = 'chat'").fetchone()[0] == 6


def test_output_schema_is_part_of_the_key(tmp_path):
    class Other(BaseModel):  # another output schema, same instructions and messages
        answer: str
        source: str

    with FakeLLMServer(models=("qa-llm",), responder=lambda r: tool_call(
            r["tools"][0]["function"]["name"], {"answer": "Paris", "source": "c1", "cited_ids": []})) as server:
        qa = _agent(server.openai_url, tmp_path / "c.sqlite")
        qa.run_sync(PROMPT)
        other = Agent(qa.model, output_type=Other, instructions=INSTRUCTIONS).run_sync(PROMPT)
        assert len(server.calls(CHAT)) == 2 and other.output.source == "c1"


def test_failed_calls_are_never_cached(tmp_path):
    cache = tmp_path / "calls.sqlite"
    with FakeLLMServer(models=("qa-llm",), responder=_answer) as server:
        server.inject("500", times=1, path=CHAT)
        with pytest.raises(Exception, match="500"):
            _agent(server.openai_url, cache).run_sync(PROMPT)
        assert len(ModelCache(cache)) == 0
        answer = _agent(server.openai_url, cache).run_sync(PROMPT).output  # reaches the server again
        assert len(server.calls(CHAT)) == 2 and answer.answer == "Paris (qa-llm)"
    assert CALL_STATS["chat"].as_dict() == {"calls": 2, "cached": 0, "live": 2, "failed": 1}


def test_disabled_cache_calls_the_model_every_time_and_still_counts(tmp_path):
    cache = tmp_path / "calls.sqlite"
    with FakeLLMServer(models=("qa-llm",), responder=_answer) as server:
        agent = _agent(server.openai_url, cache, enabled=False)
        assert isinstance(agent.model, CachedModel) and agent.model.cache is None
        agent.run_sync(PROMPT)
        agent.run_sync(PROMPT)
        assert len(server.calls(CHAT)) == 2
    assert not cache.exists()
    assert CALL_STATS["chat"].as_dict() == {"calls": 2, "cached": 0, "live": 2, "failed": 0}


def test_cache_file_is_shared_by_threads(tmp_path):
    cache = ModelCache(tmp_path / "calls.sqlite")

    def write(worker: int) -> None:
        for i in range(40):
            cache.put("chat", f"{worker}-{i}", json.dumps([worker, i]))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(8)))
    assert len(cache) == 320
    assert json.loads(ModelCache(tmp_path / "calls.sqlite").get("7-39")) == [7, 39]


def test_server_embeddings_are_cached_per_text(tmp_path):
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        texts = [f"{r['title']} {r['text']}" for r in map(json.loads, itertools.islice(f, 6))]
    with FakeLLMServer(models=("embed-model",)) as server:
        config = load_config(None, {
            "embeddings.model": {"provider": "openai", "name": "embed-model", "vector_dim": 64, "batch_size": 4,
                                 "base_url": server.openai_url},
            "cache.path": str(tmp_path / "calls.sqlite"),
        })
        first = build_embedder(config).embed(texts[:4])
        assert [len(c.body["input"]) for c in server.calls("/v1/embeddings")] == [4]
        both = build_embedder(config).embed(texts)  # 4 cached, 2 new: one request with the 2 new texts
        assert [c.body["input"] for c in server.calls("/v1/embeddings")][1] == texts[4:]
    expected = np.asarray([bow_vector(t, 64) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(both, expected, atol=1e-6)
    np.testing.assert_array_equal(first, both[:4])
    assert CALL_STATS["embed"].as_dict() == {"calls": 10, "cached": 4, "live": 6, "failed": 0}


_PROCESS = """
import sys
from evaluations.core.config import load_config
from evaluations.models.cache import call_stats
from evaluations.pipeline.qa_agent import build_qa_agent
from evaluations.models.chat import build_model, model_settings

config = load_config(None, {"qa.model": {"provider": "openai", "name": "qa-llm", "base_url": sys.argv[1]}})
agent = build_qa_agent(build_model(config.qa.model, config), model_settings(config.qa.model))
print(agent.run_sync(sys.argv[2]).output.answer)
print(call_stats()["chat"]["cached"])
"""


def test_cache_persists_across_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATIONS_CACHE_PATH", str(tmp_path / "shared.sqlite"))  # config default, both processes
    with FakeLLMServer(models=("qa-llm",), responder=_answer) as server:
        outputs = []
        for _ in range(2):
            proc = subprocess.run([sys.executable, "-c", _PROCESS, server.openai_url, PROMPT], capture_output=True,
                                  text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr
            outputs.append(proc.stdout.split())
        assert len(server.calls(CHAT)) == 1  # the second process asked nobody
    assert outputs[0][-1] == "0" and outputs[1][-1] == "1"  # cached calls in each process
    assert outputs[0][:-1] == outputs[1][:-1] == ["Paris", "(qa-llm)"]


def test_no_cache_flag_turns_the_cache_off(tmp_path, monkeypatch):
    """``--no-cache`` reaches the run's config as ``cache.enabled: false`` (the run itself is stubbed)."""
    from click.testing import CliRunner

    import evaluations.pipeline.runner
    from evaluations.cli.root import cli

    seen = []

    def fake_run(spec, options, config, **kwargs):
        seen.append(config.cache.enabled)
        raise SystemExit(0)

    monkeypatch.setattr(evaluations.pipeline.runner, "run", fake_run)
    for flags in ([], ["--no-cache"]):
        result = CliRunner().invoke(cli, ["repliqa", "--source", str(REPLIQA_20), "--skip-qa", "--db",
                                          str(tmp_path / "db"), "--out", str(tmp_path / f"out{len(flags)}"), *flags])
        assert result.exit_code == 0, result.output
    assert seen == [True, False]


def test_a_rerun_repeats_none_of_the_ladders_failed_calls(tmp_path):
    """A server like llama.cpp's: the output tool is ignored (the model chats), a JSON-schema response_format is
    refused with HTTP 500, the schema in the prompt works. The first run walks the ladder (tool x3, native,
    prompted); the same question again is replayed from the cache: the refused call is not made again, the
    answer, mode and usage are the first run's, and every request counts as cached."""
    def reply(request):
        if request.get("response_format", {}).get("type") == "json_schema":
            return Fault("500-rejected")
        if request.get("tools"):
            return "The capital is Paris, I think."
        return json.dumps({"answer": "Paris", "cited_ids": ["c1"], "confidence": 0.8})

    chunks = [RetrievedChunk(chunk_id="c1", doc_id="d1", text="The capital of France is Paris.", score=1.0)]
    cache = tmp_path / "calls.sqlite"
    with FakeLLMServer(models=("qa-llm",), responder=reply) as server:
        def ask(enabled: bool = True):
            forget_failures()  # a new command (cli.root.main)
            agent = _agent(server.openai_url, cache, enabled=enabled)  # a new agent: nothing remembered in-process
            return asyncio.run(answer_question(agent, "What is the capital of France?", chunks, modes=SERVED_LADDER))

        first = ask()
        live = len(server.calls(CHAT))
        assert first.mode == "prompted" and first.answer.answer == "Paris"
        assert [a.mode for a in first.attempts] == ["tool", "native", "prompted"] and live == 3 + 1 + 1
        assert "500" in first.attempts[1].error and CALL_STATS["chat"].as_dict()["failed"] == 1
        reset_call_stats()
        again = ask()
        assert len(server.calls(CHAT)) == live  # not one request: the refused one is not asked again
        assert (again.answer, again.mode, again.raw_text, again.usage) == (first.answer, first.mode, first.raw_text,
                                                                          first.usage)
        assert "not in the model-call cache" in again.attempts[1].error
        assert CALL_STATS["chat"].as_dict() == {"calls": 4, "cached": 4, "live": 0, "failed": 0}
        # without the cache the ladder runs live, refused call included
        reset_call_stats()
        third = ask(enabled=False)
        assert third.answer == first.answer and len(server.calls(CHAT)) == 2 * live


def test_cache_files_of_the_old_format_are_ignored_not_fatal(tmp_path, monkeypatch):
    """The embedded judge's verdicts and the semantic judge's embeddings had SQLite files of their own format
    (tables ``verdict`` and ``emb``). Opened by the one store they are neither read nor broken: the old entries
    are ignored (a planted wrong vector and verdict are not returned), new ones are stored beside them."""
    import hashlib

    from evaluations.judging.correctness import semantic
    from evaluations.judging.correctness.embedded import VerdictCache, default_verdict_cache

    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", str(tmp_path))
    text = "The capital of France is Paris."
    old_key = hashlib.sha256(f"all-MiniLM-L6-v2\0{text}".encode()).hexdigest()  # the old file's key of `text`
    semantic.default_cache_path().parent.mkdir(parents=True)
    with sqlite3.connect(semantic.default_cache_path()) as db:
        db.execute("CREATE TABLE emb (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        db.execute("INSERT INTO emb VALUES (?, ?)", (old_key, np.ones(384, dtype=np.float32).tobytes()))
    verdict_key = VerdictCache.key("judge", "q", ["gold"], "answer")
    with sqlite3.connect(default_verdict_cache()) as db:
        db.execute("CREATE TABLE verdict (key TEXT PRIMARY KEY, p REAL NOT NULL, info TEXT)")
        db.execute("INSERT INTO verdict VALUES (?, ?, ?)", (verdict_key, 0.5, "{}"))

    cache = VerdictCache()
    assert cache.entry(verdict_key) is None and len(cache) == 0
    cache.put(verdict_key, 0.75, {"yes_no_mass": 0.9})
    assert VerdictCache().entry(verdict_key) == (0.75, {"yes_no_mass": 0.9})

    vector = semantic.embed_texts([text])[0]
    expected = semantic._get_embedder().embed([text])[0]  # the model itself, no cache
    np.testing.assert_allclose(vector, expected, atol=1e-6)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)  # not the planted all-ones vector
    np.testing.assert_array_equal(semantic.embed_texts([text])[0], vector)  # now from the store
    with sqlite3.connect(semantic.default_cache_path()) as db:
        assert db.execute("SELECT COUNT(*) FROM emb").fetchone()[0] == 1  # the old table is left as it was
        assert db.execute("SELECT kind, COUNT(*) FROM calls GROUP BY kind").fetchall() == [("judge_embedding", 1)]
