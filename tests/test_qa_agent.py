"""The QA agent driven by pydantic-ai FunctionModels over real RepliQA paragraphs.

The FunctionModels read what the agent really sends (instructions, output tool, context) and reply like a model
would; the asserts check the agent's own behaviour: structured output, validation retries, usage sums, context.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from evaluations.core.context import context_text
from evaluations.pipeline.qa_agent import OUTPUT_RETRIES, QAFailed, answer_question, build_qa_agent
from evaluations.core.types import Answer, RetrievedChunk

REPLIQA_20 = Path(__file__).resolve().parents[2] / "shared" / "data" / "repliqa_samples" / "repliqa_sample20.jsonl.gz"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with gzip.open(REPLIQA_20, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _chunks(row: dict, n: int = 3, words: int | None = None) -> list[RetrievedChunk]:
    """The first ``n`` paragraphs of more than 12 words as retrieved chunks (each cut to its first ``words`` words)."""
    paragraphs = [p for p in row["document_extracted"].split("\n") if len(p.split()) > 12][:n]
    return [
        RetrievedChunk(chunk_id=f"s{row['sample_id']}-c{i}", doc_id=str(row["sample_id"]),
                       text=p if words is None else " ".join(p.split()[:words]), score=1.0 - i / 10)
        for i, p in enumerate(paragraphs)
    ]


def _user_prompt(messages: list[ModelMessage]) -> str:
    return next(
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    )


def _call(info: AgentInfo, args: str | dict, usage: tuple[int, int] = (11, 7)) -> ModelResponse:
    return ModelResponse(
        parts=[ToolCallPart(tool_name=info.output_tools[0].name, args=args)],
        usage=RequestUsage(input_tokens=usage[0], output_tokens=usage[1]),
    )


def test_structured_output_cites_the_ids_shown_in_the_context(rows):
    chunks = _chunks(rows[7])
    seen: dict = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["info"] = info
        prompt = _user_prompt(messages)
        ids = re.findall(r"^\[([^\]]+)\] ", prompt, flags=re.M)
        # "answer" with the first sentence of the first passage, citing the ids the prompt shows
        first = prompt.split("] ", 1)[1].split(". ")[0]
        return _call(info, {"answer": first, "cited_ids": ids, "confidence": 0.8})

    answer, usage = asyncio.run(answer_question(build_qa_agent(FunctionModel(model)), rows[7]["question"], chunks))

    info = seen["info"]
    assert not info.allow_text_output and len(info.output_tools) == 1  # structured output goes through a tool
    assert set(info.output_tools[0].parameters_json_schema["properties"]) == {"answer", "cited_ids", "confidence"}
    assert "only" in info.instructions and "don't know" in info.instructions and "cited_ids" in info.instructions
    assert isinstance(answer, Answer)
    assert answer.cited_ids == [c.chunk_id for c in chunks]
    assert answer.answer and answer.answer in chunks[0].text
    assert answer.confidence == 0.8
    assert usage == {"input_tokens": 11, "output_tokens": 7, "requests": 1}


def test_confidence_out_of_bounds_is_sent_back_and_retried(rows):
    replies = iter([1.7, 0.6])
    feedback: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        feedback.extend(
            p.model_response_str() for p in last.parts if hasattr(p, "model_response_str")
        )  # the retried tool call's return
        return _call(info, {"answer": "x", "cited_ids": [], "confidence": next(replies)})

    answer, usage = asyncio.run(answer_question(build_qa_agent(FunctionModel(model)), "q?", _chunks(rows[1])))
    assert answer.confidence == 0.6
    assert usage["requests"] == 2
    assert len(feedback) == 1 and "confidence" in feedback[0] and "less than or equal to 1" in feedback[0]


def test_malformed_first_reply_is_retried_and_usage_sums_over_requests(rows):
    calls = {"n": 0}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls["n"] += 1
        if calls["n"] == 1:
            return _call(info, '{"answer": "Healthy Horizons trained', usage=(100, 5))  # cut-off JSON
        return _call(info, '{"answer": "first-aid training", "cited_ids": ["s7-c0"], "confidence": 0.9}', (120, 9))

    agent = build_qa_agent(FunctionModel(model))
    answer, usage = asyncio.run(answer_question(agent, rows[7]["question"], _chunks(rows[7])))
    assert answer == Answer(answer="first-aid training", cited_ids=["s7-c0"], confidence=0.9)
    assert usage == {"input_tokens": 220, "output_tokens": 14, "requests": 2}


def test_still_invalid_after_the_retries_raises(rows):
    calls = {"n": 0}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls["n"] += 1
        return _call(info, '{"answer": 3}')  # answer must be a string

    with pytest.raises(QAFailed) as failed:
        asyncio.run(answer_question(build_qa_agent(FunctionModel(model)), "q?", _chunks(rows[2])))
    assert calls["n"] == OUTPUT_RETRIES + 1
    assert "Exceeded maximum output retries" in failed.value.error
    assert failed.value.raw_text == '{"answer": 3}' and failed.value.usage["requests"] == OUTPUT_RETRIES + 1


def test_model_settings_reach_the_model(rows):
    seen = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.update(info.model_settings or {})
        return _call(info, {"answer": "a"})

    agent = build_qa_agent(FunctionModel(model), model_settings={"temperature": 0.0, "seed": 7, "max_tokens": 64})
    asyncio.run(answer_question(agent, "q?", _chunks(rows[3])))
    assert seen["seed"] == 7 and seen["max_tokens"] == 64 and seen["temperature"] == 0.0


def test_format_context_prefixes_ids_in_rank_order(rows):
    chunks = _chunks(rows[9])
    text = context_text(chunks)
    blocks = text.split("\n\n")
    assert [b.split("] ", 1)[0][1:] for b in blocks] == [c.chunk_id for c in chunks]
    assert blocks[0] == f"[{chunks[0].chunk_id}] " + " ".join(chunks[0].text.split())


def test_format_context_truncates_to_max_chars_keeping_the_best_chunk(rows):
    chunks = _chunks(rows[9])
    full = context_text(chunks)
    first_len = len(context_text(chunks[:1]))
    limit = first_len + 40  # room for the first chunk and the start of the second
    cut = context_text(chunks, max_chars=limit)
    assert len(cut) <= limit < len(full)
    assert cut.startswith(context_text(chunks[:1]))
    assert f"[{chunks[1].chunk_id}]" in cut and f"[{chunks[2].chunk_id}]" not in cut
    tiny = context_text(chunks, max_chars=50)
    assert len(tiny) == 50 and tiny.startswith(f"[{chunks[0].chunk_id}] ")
    assert context_text([]) == ""


def test_a_system_returning_ids_only_gets_the_corpus_text_to_the_qa_agent(rows):
    """Defect: a ``--system`` that returned ids without text left the QA agent an empty context. The task now looks
    each id up in the corpus (``RagTask.texts``); the prompt the model receives holds the document's text."""
    from evaluations.core.types import RetrievalInputs
    from evaluations.pipeline.task import RagTask
    from evaluations.systems.base import RetrievedItem, SystemResponse

    row = rows[3]
    doc_id, text = f"doc-{row['sample_id']}", row["document_extracted"]

    class IdsOnly:
        id = "ids-only"

        async def __call__(self, request):
            return SystemResponse(retrieved=[RetrievedItem(id=doc_id, score=1.0), RetrievedItem(id="unknown")])

    seen = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["prompt"] = _user_prompt(messages)
        return _call(info, {"answer": "from the context", "cited_ids": [doc_id], "confidence": 0.5})

    task = RagTask(system=IdsOnly(), agent=build_qa_agent(FunctionModel(model)), texts={doc_id: text})
    output, _ = asyncio.run(task.run_case(RetrievalInputs(query=row["question"], case_id="c1")))
    given = " ".join(text.split())  # the context is whitespace-normalised
    assert output.chunks[0].text == given and output.chunks[1].text == ""  # an id the corpus lacks stays empty
    assert given[:300] in seen["prompt"] and output.qa_status == "ok"



def test_an_answer_that_is_not_unicode_fails_the_answer_as_a_systems_reply_does(rows):
    """A lone surrogate in the QA model's answer (a served model's reply in text mode, parsed from JSON that may
    carry one) fails that case's answer with the message a system's reply gets (the field, the character, its
    index), the usage and the reply kept, escaped: the case's record is written as UTF-8 instead of failing when
    the run writes its files."""
    from evaluations.core.types import RetrievalInputs
    from evaluations.pipeline.qa_agent import qa_ladder
    from evaluations.pipeline.task import RagTask
    from evaluations.systems.base import RetrievedItem, SystemResponse

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(content="In 1889\ud800.")],
                             usage=RequestUsage(input_tokens=11, output_tokens=7))

    expected = "field 'answer' is not valid Unicode text: a lone surrogate '\\ud800' at index 7"
    with pytest.raises(QAFailed) as failed:
        asyncio.run(answer_question(build_qa_agent(FunctionModel(model)), "When?", _chunks(rows[3]), modes=("text",)))
    assert expected in failed.value.error and "fix: " in failed.value.error
    assert failed.value.usage == {"input_tokens": 11, "output_tokens": 7, "requests": 1}
    assert failed.value.raw_text == "In 1889\\ud800."  # the reply, its surrogate escaped

    class Retrieves:
        id = "retrieves"

        async def __call__(self, request):
            return SystemResponse(retrieved=[RetrievedItem(id="d1", text="The tower was completed in 1889.")])

    agent = build_qa_agent(FunctionModel(model))
    task = RagTask(system=Retrieves(), agent=agent, ladder=qa_ladder(agent, ("text",)))
    output, _ = asyncio.run(task.run_case(RetrievalInputs(query="When was the tower completed?", case_id="c1")))
    assert output.qa_status == "failed" and expected in output.qa_error and output.answer is None
    assert output.documents == ["d1"] and output.usage["input_tokens"] == 11  # retrieval and usage are kept
    output.model_dump_json().encode("utf-8")  # what cases.jsonl is written from: no surrogate left to fail on


def test_context_relevance_judges_every_retrieved_chunk_whoever_answers(rows, tmp_path, monkeypatch):
    """The built-in QA agent reads the chunks its context budget holds (here one of three); context relevance judges
    the three retrieved, as it does when a user's system answers: the same retrieval got another score depending on
    who answered (0.20 with a system's answer, 0.44 with SmolLM2's in an outside probe). The chunks are the
    paragraphs' first 20 words: each is a forward pass of the judge model, and which chunks are judged is the point."""
    from pydantic_evals import Case, Dataset

    from evaluations.core.types import RetrievalInputs
    from evaluations.evaluators.reference_free import ContextRelevance
    from evaluations.index.search import Retrieval
    from evaluations.pipeline.task import RagTask

    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", str(tmp_path / "judge_cache"))
    row = rows[7]
    chunks = _chunks(row, words=20)
    assert len(chunks) == 3

    class Retrieved:  # the retriever's output as the built-in pipeline gives it, without an index to build
        def retrieve(self, query: str) -> Retrieval:
            return Retrieval(documents=[chunks[0].doc_id], scores=[1.0], chunks=chunks, latency_ms={})

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = _user_prompt(messages).split("] ", 1)[1].split(". ")[0]
        return _call(info, {"answer": first, "cited_ids": [chunks[0].chunk_id], "confidence": 0.8})

    budget = len(chunks[0].text) + 10  # the first chunk fits, the second does not
    task = RagTask(retriever=Retrieved(), agent=build_qa_agent(FunctionModel(model)), max_context_chars=budget)
    output, _ = asyncio.run(task.run_case(RetrievalInputs(query=row["question"], case_id="c")))
    assert [c.chunk_id for c in output.chunks] == [chunks[0].chunk_id]  # what the model read
    assert [c.chunk_id for c in output.retrieved_chunks] == [c.chunk_id for c in chunks]

    async def same(inputs: RetrievalInputs):
        return output

    report = Dataset(name="budget", cases=[Case(name="c", inputs=RetrievalInputs(query=row["question"], case_id="c"))],
                     evaluators=[ContextRelevance()]).evaluate_sync(same, progress=False)
    from evaluations.results.records import record_from_case

    record = record_from_case(report.cases[0])
    assert [c.id for c in record.chunk_relevance] == [c.chunk_id for c in chunks]
