"""`evaluations synth CORPUS --n N` over real SciFact documents.

Scripted pydantic-ai FunctionModels (and the protocol-level fake Ollama server, driven by the real client) read the
passage the writer really sends and answer like a model would: a good question, a malformed reply, an unsupported
answer, a refusal, a failed call, ...; the asserts check the counts per reason, the kept records, the file (loader and
published JSON schema) and `evaluations run` on it. One test runs the real embedded model.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import random
import re
import statistics
from pathlib import Path

import jsonschema
import pytest
from conftest import SCIFACT
from fake_llm_server import FakeLLMServer, closed_port_url
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from test_cli_retrieval import run_cli

from evaluations.datasets.generic import read_documents, read_records
from evaluations.judging.basics.text import keywords
from evaluations.pipeline.qa_agent import OUTPUT_RETRIES
from evaluations.cli.synth import write_dataset
from evaluations.synth.core import REASONS, SynthOptions, passage, sample_order, synthesize
from evaluations.synth.filters import check_pair
from evaluations.synth.generate import QuestionWriter, build_synth_agent
from evaluations.core.types import Document

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "datasets" / "schemas" / "dataset_record.schema.json").read_text())
SEED = 7
MAX_CHARS = 2000


@pytest.fixture(scope="module")
def scifact_rows() -> list[dict]:
    """The first 300 SciFact corpus rows (real abstracts, BEIR fields _id/title/text)."""
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [json.loads(line) for _, line in zip(range(300), handle)]


@pytest.fixture(scope="module")
def corpus_file(scifact_rows, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("synth") / "scifact300.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in scifact_rows))
    return path


def _prompt(messages: list[ModelMessage]) -> str:
    return next(p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, UserPromptPart))


def _passage_of(messages: list[ModelMessage]) -> str:
    text = _prompt(messages)
    assert text.startswith("Passage:\n")
    return text[len("Passage:\n"):]


def good_pair(doc: Document, shown: str) -> dict[str, str]:
    """What a decent model writes: a question naming the document's subject (its title) and an answer copied from
    a sentence of the passage it was shown."""
    body = shown[len(" ".join(doc.title.split())):].strip() if shown.startswith(" ".join(doc.title.split())) else shown
    sentence = re.split(r"(?<=[.!?])\s+", body)[0]
    return {"question": f"What is known about {doc.title.rstrip('.')}?", "answer": " ".join(sentence.split()[:12])}


def scripted(behaviour_of: dict[str, tuple[Document, str]], calls: dict[str, int]) -> FunctionModel:
    """A model answering each passage by the behaviour the test gave it."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        shown = _passage_of(messages)
        doc, behaviour = behaviour_of[shown]
        calls[doc.id] = calls.get(doc.id, 0) + 1
        pair = good_pair(doc, shown)
        if behaviour == "model_error":
            raise RuntimeError("connection reset by the model server")
        if behaviour == "malformed":
            return ModelResponse(parts=[ToolCallPart(tool_name=info.output_tools[0].name, args='{"question": "Wha')])
        if behaviour == "empty":
            pair["question"] = "  "
        elif behaviour == "refusal":
            pair["answer"] = "The passage does not mention this."
        elif behaviour == "unsupported":
            pair["answer"] = "Green cheese from the far side of the moon"
        elif behaviour == "answer_in_question":
            pair = {"question": f"Is it true that {pair['answer']}?", "answer": pair["answer"]}
        elif behaviour == "vague":
            pair["question"] = "What is this about?"
        elif behaviour == "not_a_question":
            pair["question"] = f"The passage discusses {doc.title.rstrip('.')}."
        elif behaviour == "not_standalone":
            pair["question"] = f"What does the passage say about {doc.title.rstrip('.')}?"
        return ModelResponse(parts=[ToolCallPart(tool_name=info.output_tools[0].name, args=pair)])

    return FunctionModel(reply)


def _writer(model: FunctionModel) -> QuestionWriter:
    return QuestionWriter(build_synth_agent(model))


def _passages(docs: list[Document], behaviours: dict[str, str]) -> dict[str, tuple[Document, str]]:
    return {passage(d, MAX_CHARS, SEED): (d, behaviours.get(d.id, "good")) for d in docs}


# -- filters, sampling, passages ------------------------------------------------------------------------
def test_each_filter_on_a_real_passage(scifact_rows):
    doc = read_documents_from(scifact_rows[:1])[0]
    shown = passage(doc, MAX_CHARS, SEED)
    good = good_pair(doc, shown)
    assert check_pair(good["question"], good["answer"], shown) is None
    assert check_pair("", good["answer"], shown) == "empty"
    assert check_pair(good["question"], "It is not mentioned in the text.", shown) == "refusal"
    assert check_pair(good["question"], "Unknown", shown) == "refusal"
    assert check_pair(good["question"], "Cannot be determined from the passage", shown) == "refusal"
    assert check_pair(good["question"], "Green cheese from the far side of the moon", shown) == "unsupported"
    assert check_pair(f"Does {good['answer']}?", good["answer"], shown) == "answer_in_question"
    assert check_pair("What is this about?", good["answer"], shown) == "vague"
    # statements are not questions; imperatives and questions without "?" are
    title = doc.title.rstrip(".")
    assert check_pair(f"The passage discusses {title}.", good["answer"], shown) == "not_a_question"
    assert check_pair(title, good["answer"], shown) == "not_a_question"
    assert check_pair(f"Describe {title}", good["answer"], shown) is None
    assert check_pair(f"what is known about {title}", good["answer"], shown) is None
    # a question that points at its source cannot be asked of a corpus
    for question in (f"What does the passage say about {title}?", f"According to the text, what is {title}?",
                     f"What did this study find about {title}?", f"What do the authors conclude on {title}?"):
        assert check_pair(question, good["answer"], shown) == "not_standalone", question
    assert check_pair(f"What did the 2010 study of {title} find?", good["answer"], shown) is None  # a named study
    assert check_pair(f"What is the text encoding of {title}?", good["answer"], shown) is None
    # half of the answer's keywords from the passage is not enough (SUPPORT_MIN 0.6); 2 of 3 is
    words = sorted(keywords(good["answer"]))[:2]
    assert check_pair(good["question"], f"{words[0]} zorblax", shown) == "unsupported"
    assert check_pair(good["question"], f"{words[0]} {words[1]} zorblax", shown) is None


def read_documents_from(rows: list[dict]) -> list[Document]:
    return [Document(id=r["_id"], text=f"{r['title']}\n{r['text']}", title=r["title"]) for r in rows]


def test_sampling_and_passages_are_seeded_and_bounded(scifact_rows):
    docs = read_documents_from(scifact_rows[:60])
    short = Document(id="short", text=docs[0].title)  # a title alone: 131 characters
    order = sample_order([*docs, short], SEED, 200)
    assert [d.id for d in order] == [d.id for d in sample_order([*docs, short], SEED, 200)]
    assert [d.id for d in order] != [d.id for d in sample_order([*docs, short], SEED + 1, 200)]
    assert sorted(d.id for d in order) == sorted(d.id for d in docs)  # all long documents, the short one skipped
    for doc in docs:
        flat = " ".join(doc.text.split())
        shown = passage(doc, 600, SEED)
        assert shown == passage(doc, 600, SEED) and shown in flat
        if len(flat) <= 600:
            assert shown == flat
            continue
        assert 300 <= len(shown) <= 600
        start = flat.index(shown)
        assert start == 0 or re.search(r"[.!?][\"')\]]?\s$", flat[:start])  # starts at a sentence start
        assert re.search(r"[.!?][\"')\]]?$", shown) or len(shown) > 590  # ends at a sentence end (or a word)
        assert passage(doc, 20000, SEED) == flat  # short enough: the whole text


# -- the loop with scripted models ----------------------------------------------------------------------
BAD = ["malformed", "unsupported", "refusal", "model_error", "answer_in_question", "empty", "vague",
       "not_a_question", "not_standalone"]


def test_scripted_model_every_drop_reason_counted(scifact_rows):
    """30 real documents plus a copy of one (a corpus with a duplicated document): the model writes the same
    question for both, the later one is the near-duplicate. The 10 other documents tried: 9 bad behaviours, 1 good."""
    base = read_documents_from(scifact_rows[:30])
    slot = Document(id="slot", text=base[0].text)
    at = next(i for i in range(31) if [d.id for d in sample_order([*base[:i], slot, *base[i:]], SEED, 200)]
              .index("slot") < 12)  # where the copy sits in the file decides where the sample puts it
    original = next(d for d in sample_order([*base[:at], slot, *base[at:]], SEED, 200) if d.id != "slot")
    copy = Document(id=f"copy-{original.id}", text=original.text, title=original.title)
    docs = [*base[:at], copy, *base[at:]]
    tried = [d.id for d in sample_order(docs, SEED, 200)][:12]
    others = [i for i in tried if i not in (original.id, copy.id)]
    behaviours = dict(zip(others, BAD))  # the rest of the 10: good
    calls: dict[str, int] = {}
    model = scripted(_passages(docs, behaviours), calls)
    options = SynthOptions(n=20, seed=SEED, max_doc_chars=MAX_CHARS, max_docs=12)
    result = asyncio.run(synthesize(docs, _writer(model), options))

    assert result.tried == 12 and result.stopped == "max docs reached" and result.eligible == 31
    assert dict(result.dropped) == {**{b: 1 for b in BAD}, "duplicate": 1}
    assert result.generated == 12 - 2  # malformed and model_error produced no pair
    assert len(result.records) == 2 == 12 - sum(result.dropped.values())
    assert calls[behaviours_key(behaviours, "malformed")] == 1 + OUTPUT_RETRIES  # retried, then given up
    assert calls[behaviours_key(behaviours, "model_error")] == 1
    first, later = sorted((original.id, copy.id), key=tried.index)
    kept = {r["relevant_doc_ids"][0]: r for r in result.records}
    assert set(kept) == {first, *(i for i in others if i not in behaviours)}
    assert [r["relevant_doc_ids"][0] for r in result.records] == [i for i in tried if i in kept]  # sample order
    assert result.examples["duplicate"] == [{"doc_id": later, "question": kept[first]["query"],
                                             "answer": kept[first]["answers"][0], "like": kept[first]["id"]}]
    assert result.examples["unsupported"][0]["answer"].startswith("Green cheese")
    assert "connection reset" in result.examples["model_error"][0]["error"]
    for record in result.records:
        jsonschema.validate(record, SCHEMA)
        assert record["tags"] == ["synth"] and record["id"].startswith("synth-")


def behaviours_key(behaviours: dict[str, str], behaviour: str) -> str:
    return next(doc_id for doc_id, b in behaviours.items() if b == behaviour)


def test_stops_at_n_and_keeps_sample_order_whatever_the_call_order(scifact_rows):
    docs = read_documents_from(scifact_rows[:40])
    behaviours = {d.id: "unsupported" for d in docs[::3]}
    by_passage = _passages(docs, behaviours)
    rng = random.Random(0)

    def slow_reply_model(calls: dict[str, int]) -> FunctionModel:
        inner = scripted(by_passage, calls)

        async def reply(messages, info):
            await asyncio.sleep(rng.random() * 0.02)  # calls finish out of order
            return inner.function(messages, info)

        return FunctionModel(reply)

    results = []
    for concurrency in (1, 4):
        calls: dict[str, int] = {}
        options = SynthOptions(n=8, seed=SEED, max_doc_chars=MAX_CHARS, concurrency=concurrency)
        results.append((asyncio.run(synthesize(docs, _writer(slow_reply_model(calls)), options)), calls))
    (one, calls_one), (four, calls_four) = results
    assert one.records == four.records and len(one.records) == 8 and one.stopped == "enough"
    assert one.tried == four.tried == 8 + one.dropped["unsupported"]
    assert sum(calls_one.values()) == one.tried  # concurrency 1: not one call more than needed
    assert one.tried <= sum(calls_four.values()) <= one.tried + 3  # at most 3 calls in flight were cancelled


# -- the file it writes, and `evaluations run` on it -------------------------------------------------------
def test_synth_file_is_a_normal_dataset_that_runs(corpus_file, tmp_path):
    docs = read_documents(corpus_file)
    model = scripted(_passages(docs, {}), {})
    result = asyncio.run(synthesize(docs, _writer(model), SynthOptions(n=20, seed=SEED, max_doc_chars=MAX_CHARS)))
    assert len(result.records) == 20 and result.tried == 20
    out = tmp_path / "synth.jsonl"
    write_dataset(out, result.records)
    records = read_records(out)
    assert [r.id for r in records] == [r["id"] for r in result.records]
    for line in out.read_text().splitlines():
        jsonschema.validate(json.loads(line), SCHEMA)
    by_id = {d.id: d for d in docs}
    for record in records:
        [source] = record.relevant_doc_ids
        assert record.query.startswith(f"What is known about {by_id[source].title.rstrip('.')}")

    run = tmp_path / "run"
    proc = run_cli("run", str(out), "--corpus", str(corpus_file), "--search-mode", "fts", "--skip-qa",
                   "--db", str(tmp_path / "db"), "--out", str(run), "--no-progress", "--json", "--k", "1,10")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["counts"]["cases"] == 20 and summary["dataset"]["documents"] == 300
    # BM25 finds the source of a question naming its title: far above the chance level of 10/300
    assert summary["metrics"]["hit@10"] >= 0.9 and summary["metrics"]["hit@1"] >= 0.7


# -- the command line ------------------------------------------------------------------------------------
def _ollama_writer(docs: list[Document]):
    """A fake Ollama model that cannot call tools (it chats instead) but follows a JSON schema (native output)."""
    by_passage = _passages(docs, {})

    def responder(request: dict) -> str:
        if request.get("tools"):
            return "Sure! Here is a good question about the passage."
        assert request["response_format"]["json_schema"]["name"] == "SynthPair"
        shown = _passage_of_text(request["messages"][-1]["content"])
        doc, _ = by_passage[shown]
        return json.dumps(good_pair(doc, shown))

    return responder


def _passage_of_text(content: str) -> str:
    assert content.startswith("Passage:\n")
    return content[len("Passage:\n"):]


def test_cli_served_model_ladder_shortfall_and_cache(scifact_rows, tmp_path):
    corpus = tmp_path / "six.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in scifact_rows[:6]))
    docs = read_documents(corpus)
    out = tmp_path / "set.json"
    args = ["synth", str(corpus), "--n", "10", "--out", str(out), "--model", "ollama:writer", "--seed", str(SEED),
            "--concurrency", "1", "--no-progress", "--json"]
    with FakeLLMServer(models=("writer",), responder=_ollama_writer(docs)) as server:
        proc = run_cli(*args, env={"OLLAMA_BASE_URL": server.url, "NO_COLOR": "1"})
        assert proc.returncode == 0, proc.stderr
        assert server.errors == []
        chats = len(server.calls("/v1/chat/completions"))
        again = run_cli(*args, "--overwrite", env={"OLLAMA_BASE_URL": server.url, "NO_COLOR": "1"})
        assert again.returncode == 0, again.stderr
        assert len(server.calls("/v1/chat/completions")) == chats  # the second run came from the cache
    summary = json.loads(proc.stdout)
    assert summary["requested"] == 10 and summary["kept"] == 6 and summary["shortfall"] == 4
    assert summary["stopped"] == "corpus exhausted" and summary["tried"] == 6 == summary["generated"]
    assert summary["dropped"] == {r: 0 for r in REASONS}
    assert summary["output_modes"] == {"native": 6}  # tool calls failed once, then native JSON from the start
    assert chats == (1 + OUTPUT_RETRIES) + 6
    assert summary["model"]["provider"] == "ollama" and summary["model"]["name"] == "writer"
    assert "only 6 of 10 questions kept (corpus exhausted)" in proc.stderr
    assert f"evaluations run {out} --corpus {corpus}" in proc.stderr
    assert json.loads(again.stdout)["model_calls"]["chat"] == {"calls": chats, "cached": chats, "live": 0, "failed": 0}
    assert json.loads(again.stdout)["kept"] == 6
    data = json.loads(out.read_text())  # .json: an array of records
    assert isinstance(data, list) and len(data) == 6
    assert {r.relevant_doc_ids[0] for r in read_records(out)} == {d.id for d in docs}


@pytest.mark.parametrize("case", ["missing corpus", "empty corpus", "n zero", "out exists", "bad suffix",
                                  "bad model", "too short"])
def test_bad_input_is_one_clear_error(case, cli, tmp_path, corpus_file):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    exists = tmp_path / "exists.jsonl"
    exists.write_text("keep me\n")
    corpus, extra, expect = str(corpus_file), [], []
    if case == "missing corpus":
        corpus, expect = str(tmp_path / "nope.jsonl"), [str(tmp_path / "nope.jsonl"), "not found"]
    elif case == "empty corpus":
        corpus, expect = str(empty), [str(empty), "no documents"]
    elif case == "n zero":
        extra, expect = ["--n", "0"], ["--n: --n 0 is below 1", "fix: e.g. --n 50"]
    elif case == "out exists":
        extra, expect = ["--out", str(exists)], [str(exists), "exists", "--overwrite"]
    elif case == "bad suffix":
        extra, expect = ["--out", str(tmp_path / "set.csv")], ["set.csv", ".jsonl or .json"]
    elif case == "bad model":
        extra, expect = ["--model", "gpt4"], ["--model", "'gpt4' is not 'provider:name'"]
    elif case == "too short":
        extra, expect = ["--min-doc-chars", "100000"], ["no document has 100000 characters", "--min-doc-chars"]
    args = ["synth", corpus, "--n", "3", *extra, "--no-progress"]  # a second --n wins
    if "--out" not in extra:
        args += ["--out", str(tmp_path / "new.jsonl")]
    code, _, err = cli(args)
    assert code == 2, err
    assert "Traceback" not in err and err.count("error:") == 1
    for text in expect:
        assert text in err
    assert exists.read_text() == "keep me\n" and not (tmp_path / "new.jsonl").exists()


def test_unreachable_server_stops_before_any_work(cli, tmp_path, corpus_file, monkeypatch):
    url = closed_port_url()
    monkeypatch.setenv("OLLAMA_BASE_URL", url)
    out = tmp_path / "set.jsonl"
    code, _, err = cli(["synth", str(corpus_file), "--n", "3", "--model", "ollama:writer", "--out", str(out),
                        "--no-progress"])
    assert code == 2 and url in err and "OLLAMA_BASE_URL" in err  # the value came from the variable: named
    assert "--model embedded" in err and "--qa-model" not in err
    assert not out.exists()


# -- the real embedded model ------------------------------------------------------------------------------
@pytest.mark.slow
def test_embedded_model_writes_a_valid_set_from_real_documents(corpus_file, tmp_path):
    out = tmp_path / "real.jsonl"
    # Qwen2.5-Coder-0.5B: SmolLM2-135M (the QA default) mostly writes a title instead of a question. One question
    # (a few documents at most): the path from a real model to a valid record; the scripted tests count the rest
    proc = run_cli("synth", str(corpus_file), "--n", "1", "--max-docs", "4", "--max-doc-chars", "1200",
                   "--model", "embedded:qwen2.5-coder-0.5b", "--seed", str(SEED), "--out", str(out), "--no-progress",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    print(json.dumps({k: summary[k] for k in ("kept", "tried", "generated", "dropped", "seconds")}))
    assert summary["model"]["provider"] == "embedded" and summary["output_modes"].keys() <= {"grammar"}
    assert summary["tried"] == summary["kept"] + sum(summary["dropped"].values())
    dropped = summary["dropped"]
    assert summary["generated"] == summary["tried"] - dropped["malformed"] - dropped["model_error"]
    assert summary["dropped"]["model_error"] == 0 and summary["kept"] >= 1
    docs = {d.id: d for d in read_documents(corpus_file)}
    tried = [d.id for d in sample_order(list(docs.values()), SEED, 200)][:summary["tried"]]
    overlaps = []
    for record in read_records(out):
        [source] = record.relevant_doc_ids
        assert source in tried  # the document the question was written from
        shown = passage(docs[source], 1200, SEED)
        assert check_pair(record.query, record.answers[0], shown) is None
        asked = keywords(record.query)
        overlaps.append(len(asked & keywords(shown)) / len(asked))
    overlap = summary["question_overlap"]
    assert overlap["mean"] == pytest.approx(statistics.fmean(overlaps), abs=1e-4)
    assert overlap["median"] == pytest.approx(statistics.median(overlaps), abs=1e-4)
    assert overlap["easy"] == (overlap["mean"] >= 0.85) and ("BM25 finds such questions easily" in proc.stderr) == \
        overlap["easy"]
