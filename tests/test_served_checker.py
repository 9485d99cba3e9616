"""Served checkers of the reference-free judges (evaluations/judging/checkers/served_checker.py).

Faults (a server that refuses tool calls and JSON-schema output, a dead server) are scripted with the fake
server (tests/fake_llm_server.py); what a model can do is asked of a real one: Qwen2.5-Coder-0.5B-Instruct behind
llama-cpp-python's OpenAI-compatible server (tests/llama_server.py), on passages of RepliQA documents.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import threading
from pathlib import Path

import anyio
import pytest
from conftest import REPLIQA_20, multihop_probe, short_context_labels
from fake_llm_server import FakeLLMServer, Fault, closed_port_url, tool_call

from evaluations.core.config import Config, LLMModel
from evaluations.core.errors import EvaluationsError
from evaluations.judging.checkers.served_checker import (
    FALLBACK_RUBRIC,
    MAX_CHARS,
    ONE_WORD,
    PROBE,
    STRUCTURED,
    CheckFailed,
    ServedChecker,
    checker_for,
    claims_from_model,
    served_rubric,
)
from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM
from evaluations.models.cache import CALL_STATS
from evaluations.models.chat import build_model, model_settings
from evaluations.models.ladder import SERVED_LADDER
from inprocess import run_evaluations

ASK = "Statement: {statement}\nIs the statement supported by the passage? Answer yes or no."


def _config(tmp_path: Path, **sections) -> Config:
    base = {"cache": {"path": str(tmp_path / "calls.sqlite")}, "requests": {"retries": 0, "timeout": 60},
            "judge": {"retries": 1}}
    return Config.model_validate({**base, **sections})


def _mode(body: dict) -> str:
    """The output mode a request asks for, as the server sees it."""
    if body.get("tools"):
        return "tool"
    if (body.get("response_format") or {}).get("type") == "json_schema":
        return "native"
    from evaluations.core.context import QA_INSTRUCTIONS

    system = " ".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system")
    # the conversation form's text mode adds nothing to the QA agent's system prompt
    return "text" if system.rstrip().endswith(ONE_WORD) or system == QA_INSTRUCTIONS else "prompted"


def _modes(server: FakeLLMServer) -> list[str]:
    return [_mode(r.body) for r in server.calls("/v1/chat/completions")]


def _plain(calls: list) -> list:
    """The requests a checker sent to a server whose streams carry no logprobs, without its first streamed try: a
    new model's first logprobs question is streamed and then asked again plainly (``models.streamed``), the later
    ones only plainly."""
    streamed = [i for i, r in enumerate(calls) if r.body.get("stream")]
    assert len(streamed) <= 1 and all(calls[i].body["messages"] == calls[i + 1].body["messages"]
                                      and not calls[i + 1].body.get("stream") for i in streamed), streamed
    return [r for r in calls if not r.body.get("stream")]


# -- faults: a scripted server ---------------------------------------------------------------------
def test_a_server_refusing_tools_and_json_schema_is_asked_in_plain_text(tmp_path):
    """tool: the llama.cpp-style 500 naming a validation error; native: HTTP 400; prompted: prose, not JSON;
    text: one word. The ladder goes down to text once, then starts there."""

    def responder(body: dict) -> object:
        mode = _mode(body)
        return {"tool": Fault("500-rejected"), "native": Fault("400"), "prompted": "I think it is supported.",
                "text": "Yes."}[mode]

    with FakeLLMServer(models=("judge",), responder=responder) as server:
        config = _config(tmp_path)
        model_cfg = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
        checker = checker_for(model_cfg, config, judge="faithfulness")
        shared, tail = "Passage:\nThe bridge opened in 1932.\n\n", ASK.format(statement="The bridge opened in 1932.")
        assert checker.probability(shared, tail) == (1.0, 1.0)  # a one-word reply without logprobs: the word
        per_mode = config.judge.retries + 1  # output retries apply to replies that do not parse, not to refusals
        # text: streamed first (models.streamed), and asked again plainly as the stream carried no logprobs
        assert _modes(server) == ["tool", "native"] + ["prompted"] * per_mode + ["text", "text"]
        assert [bool(r.body.get("stream")) for r in server.calls("/v1/chat/completions")[-2:]] == [True, False]
        assert checker.ladder.worked == "text" and checker.calls == 1
        text = server.calls("/v1/chat/completions")[-1].body
        assert text["logprobs"] is True and text["top_logprobs"] == 10 and text["max_tokens"] == 4
        system, user = text["messages"][0]["content"], text["messages"][-1]["content"]
        assert system.startswith(PASSAGE_SYSTEM) and served_rubric("faithfulness").strip() in system
        assert user == shared + tail

        # the next question starts at the mode that worked: no refused request is sent again
        sent = len(server.requests)
        no = checker.probability(shared, ASK.format(statement="The bridge opened in 1950."))
        assert no == (1.0, 1.0) and _modes(server)[sent - 1:] == ["text"]  # (-1: the /v1/models check)
        assert checker.calls == 2

        # the same questions from a new checker on the same cache (a re-run): no request reaches the server
        again = ServedChecker(build_model(model_cfg, config), served_rubric("faithfulness"),
                              identity="the same model", settings=model_settings(model_cfg),
                              retries=config.judge.retries)
        sent, live = len(server.requests), CALL_STATS["chat"].misses
        assert again.probability(shared, tail) == (1.0, 1.0)
        assert len(server.requests) == sent and CALL_STATS["chat"].misses == live and again.calls == 0


def test_the_faithfulness_judge_asks_through_a_served_checker(tmp_path):
    """``judge_faithfulness(..., scorer=checker)``: each claim is asked of the server as the next user turn of the
    QA conversation over the passage (the conversation form of ``judges/faithfulness_served.json``); a second
    verdict on the same texts is read from the verdict cache (no call)."""
    from evaluations.core.context import QA_INSTRUCTIONS
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.faithfulness import CONVERSATION_ASKS, judge_faithfulness
    from evaluations.judging.basics.passages import Passage

    with FakeLLMServer(models=("judge",), responder=lambda body: "Yes.") as server:
        model_cfg = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
        checker = checker_for(model_cfg, _config(tmp_path), judge="faithfulness", modes=("text",))
        passage = Passage(id="p1", text="The Harbour Bridge in Sydney opened in 1932 after eight years of work.")
        cache = VerdictCache(tmp_path / "verdicts.sqlite")
        verdict = judge_faithfulness("When did the Harbour Bridge open?", "It opened in 1932.", [passage],
                                     cache=cache, scorer=checker)
        asked = _plain(server.calls("/v1/chat/completions"))
        assert verdict.applicable and verdict.claims and verdict.model_calls == checker.calls == len(asked) > 0
        opening = f"Context:\n[p1] {passage.text}\n\nQuestion: When did the Harbour Bridge open?"
        assert [[m["content"] for m in r.body["messages"]] for r in asked] == [
            [QA_INSTRUCTIONS, opening, CONVERSATION_ASKS["statement"].format(claim=c.claim)] for c in verdict.claims]
        assert all(c.supported and c.passage == "p1" for c in verdict.claims)  # "Yes." each
        again = judge_faithfulness("When did the Harbour Bridge open?", "It opened in 1932.", [passage],
                                   cache=cache, scorer=checker)
        assert again.model_calls == 0 and len(_plain(server.calls("/v1/chat/completions"))) == len(asked)
        assert again.claims == verdict.claims


@pytest.mark.parametrize(("logprobs_in", "sent"), [
    (("plain", "stream"), [True, True, True]),  # every question streamed
    (("plain",), [True, False, False, False]),  # the stream dropped them: that question asked again, never streamed
    ((), [True, False, False, False]),  # no logprobs at all: the first question asked twice, then plainly
])
def test_logprob_questions_are_streamed_while_streams_carry_logprobs(tmp_path, logprobs_in, sent):
    """``models.streamed.LogprobsStreamed``: llama-cpp-python's server prices a plain logprobs reply by the prompt's
    length and a streamed one by the reply's. P(yes) is the same whichever way it came."""
    def responder(body: dict) -> str:
        return "No" if "1950" in body["messages"][-1]["content"] else "Yes"

    with FakeLLMServer(models=("judge",), responder=responder, logprobs_in=logprobs_in) as server:
        config = _config(tmp_path, cache={"enabled": False})
        model_cfg = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
        checker = checker_for(model_cfg, config, judge="faithfulness", modes=("text",))
        shared = "Passage:\nThe bridge opened in 1932.\n\n"
        answers = [checker.probability(shared, ASK.format(statement=f"The bridge opened in {y}."))
                   for y in (1932, 1950, 1932)]
        assert answers == [(1.0, 1.0), (0.0, 1.0), (1.0, 1.0)]
        bodies = [r.body for r in server.calls("/v1/chat/completions")]
        assert [bool(b.get("stream")) for b in bodies] == sent
        assert all(b["logprobs"] is True and b["top_logprobs"] == 10 for b in bodies)
        assert checker.calls == 3  # one question each, however many requests it took
        checker.close()


def _stream_fault(tmp_path: Path, fault: str) -> tuple[list, list[bool], ServedChecker]:
    """Two yes/no questions to a server whose plain replies carry logprobs and whose streams end in ``fault``:
    (the answers, whether each request was streamed, the checker)."""
    def responder(body: dict) -> object:
        if body.get("stream"):
            return Fault(fault)
        return "No" if "1950" in body["messages"][-1]["content"] else "Yes"

    with FakeLLMServer(models=("judge",), responder=responder, logprobs_in=("plain",)) as server:
        model_cfg = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
        checker = checker_for(model_cfg, _config(tmp_path, cache={"enabled": False}), judge="faithfulness",
                              modes=("text",))
        shared = "Passage:\nThe bridge opened in 1932.\n\n"
        answers = [checker.probability(shared, ASK.format(statement=f"The bridge opened in {y}."))
                   for y in (1932, 1950)]
        checker.close()
        return answers, [bool(r.body.get("stream")) for r in server.calls("/v1/chat/completions")], checker


def test_a_stream_cut_off_mid_way_is_asked_again_plainly(tmp_path):
    """A server whose streams break after their first event (the connection dropped mid-body): each streamed
    question is asked again plainly and answered, not failed as an unreachable server; streaming stays on (a dropped
    connection says nothing about the server's logprobs). A server refusing streams (an HTTP error) is asked plainly
    from its first question on."""
    answers, seen, checker = _stream_fault(tmp_path / "cut", "cut-stream")
    assert answers == [(1.0, 1.0), (0.0, 1.0)]
    assert seen == [True, False, True, False]  # each: streamed and cut off, asked again plainly
    assert checker.model.wrapped.streams is None
    answers, seen, checker = _stream_fault(tmp_path / "refused", "400")
    assert answers == [(1.0, 1.0), (0.0, 1.0)] and seen == [True, False, False]
    assert checker.model.wrapped.streams is False


def test_a_reply_neither_yes_nor_no_in_any_mode_fails_the_question(tmp_path):
    with FakeLLMServer(models=("judge",), responder=lambda body: "Perhaps.") as server:
        model_cfg = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
        checker = checker_for(model_cfg, _config(tmp_path, judge={"retries": 0}), modes=("prompted", "text"))
        with pytest.raises(CheckFailed) as failed:
            checker.probability("Passage:\nA text.\n\n", ASK.format(statement="A claim."))
        assert [mode for mode, _ in failed.value.failures] == ["prompted", "text"]
        assert "neither yes nor no" in str(failed.value)


def test_the_questions_of_one_verdict_are_asked_at_once_up_to_the_runs_concurrency(tmp_path):
    """A served checker takes the questions of one verdict at once (a passage each for context relevance, a claim
    each for faithfulness), at most ``concurrency`` in flight at the server; the verdicts are those of the same
    questions asked one by one (concurrency 1). The checkers ask as a run's do (``served_tools``): yes/no in text
    mode first, claims in the structured modes; the output ladder's descent is the first test's."""
    import time

    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.grounded.context_relevance import judge_context_relevance
    from evaluations.judging.grounded.faithfulness import judge_faithfulness

    lock, state = threading.Lock(), {"now": 0, "most": 0}
    text_first = ("text", *(m for m in SERVED_LADDER if m != "text"))  # as served_tools orders them
    claims = ["The bridge opened in 1932.", "The bridge is in Sydney.", "The bridge is made of steel.",
              "The bridge has eight lanes."]

    def responder(body: dict) -> object:
        if body.get("tools"):
            return tool_call(body["tools"][0]["function"]["name"], {"claims": claims})
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.15)  # a model reading the passage: the next questions (sent at once) arrive meanwhile
        with lock:
            state["now"] -= 1
        content = body["messages"][-1]["content"]
        return "Yes." if "1932" in content or "Sydney" in content else "No."

    question = "When did the bridge open?"
    passages = [Passage(id=f"p{i}", text=t) for i, t in enumerate([
        "The Harbour Bridge opened in 1932.", "Sydney has a harbour.", "Steel comes from iron.",
        "The opera house has sails.", "Ferries cross the harbour.", "Trains run over the bridge."])]
    results = {}
    with FakeLLMServer(models=("judge",), responder=responder) as server:
        for concurrency in (1, 3):
            state.update(now=0, most=0)
            config = _config(tmp_path / str(concurrency), evaluation={"concurrency": concurrency},
                             **{"cache": {"enabled": False}})
            model_cfg = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
            context = checker_for(model_cfg, config, judge="context_relevance", modes=text_first)
            relevance = judge_context_relevance(question, passages, scorer=context)
            faith = checker_for(model_cfg, config, judge="faithfulness", modes=text_first)
            faithful = judge_faithfulness(question, "It opened in 1932 in Sydney.", passages[:2], scorer=faith,
                                          decompose=faith.claims)
            results[concurrency] = (relevance, faithful, state["most"])
    (one_rel, one_faith, one_most), (par_rel, par_faith, par_most) = results[1], results[3]
    assert one_most == 1 and par_most == 3, (one_most, par_most)  # never more than the run's concurrency
    assert [c.model_dump() for c in par_rel.chunks] == [c.model_dump() for c in one_rel.chunks]
    assert [c.claim for c in par_faith.claims] == claims  # the served decomposition, in its order
    assert [c.model_dump() for c in par_faith.claims] == [c.model_dump() for c in one_faith.claims]
    assert one_rel.model_calls == par_rel.model_calls == len(passages)


def test_claims_come_from_structured_output_only(tmp_path):
    claims = ["The bridge opened in 1932.", "The bridge is in Sydney."]

    def tools_work(body: dict) -> object:
        if body.get("tools"):
            return tool_call(body["tools"][0]["function"]["name"], {"claims": claims + [" ", claims[0]]})
        return "unexpected"

    with FakeLLMServer(models=("judge",), responder=tools_work) as server:
        model_cfg = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
        got = claims_from_model("When did the bridge open?", "It opened in 1932 in Sydney.", model_cfg,
                                _config(tmp_path))
        assert got == claims  # blank and repeated claims dropped, order kept
        first, request = (r.body for r in server.calls("/v1/chat/completions"))  # the probe, then the answer
        assert f"Answer: {PROBE[1]}" in first["messages"][-1]["content"]
        assert "Answer: It opened in 1932 in Sydney." in request["messages"][-1]["content"]

    def nothing_structured(body: dict) -> object:
        mode = _mode(body)
        return Fault("500-rejected") if mode in ("tool", "native") else "The bridge opened in 1932."

    with FakeLLMServer(models=("judge",), responder=nothing_structured) as server:
        model_cfg = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
        assert claims_from_model("When?", "In 1932.", model_cfg, _config(tmp_path / "b")) is None
        assert set(_modes(server)) == {"tool", "native", "prompted"}  # never asked for plain text


def test_a_model_that_cannot_split_the_probe_is_asked_for_no_answers_claims(tmp_path):
    """Before the first answer's claims a served checker asks for ``PROBE``'s, once: a model that gives no
    structured claims there (every mode failed) is asked for no answer's claims (the judges split them with their
    deterministic splitter); a model that gives them is asked for each answer's, the probe not again. A failed
    request (a server error, not the model's output) is raised and the probe asked again at the next answer."""
    answers = [("When did the bridge open?", "It opened in 1932."), ("Where is it?", "It is in Sydney.")]

    def prose(body: dict) -> object:  # refuses the structured forms or answers in prose, as SmolLM2 does
        return Fault("500-rejected") if _mode(body) in ("tool", "native") else "Sure! Here are the claims."

    with FakeLLMServer(models=("judge",), responder=prose) as server:
        checker = ServedChecker(build_model(LLMModel(provider="openai", name="judge", base_url=server.openai_url),
                                            _config(tmp_path)), served_rubric("faithfulness"), identity="prose",
                                retries=1)
        assert [checker.claims(q, a) for q, a in answers] == [None, None]
        sent = [json.dumps(r.body["messages"]) for r in server.calls("/v1/chat/completions")]
        assert sent and all(f"Answer: {PROBE[1]}" in text for text in sent)  # only the probe was asked
        assert _modes(server) == ["tool", "native", "prompted", "prompted"]  # each mode once (+1 output retry)

    def splits(body: dict) -> object:
        content = body["messages"][-1]["content"]
        return tool_call(body["tools"][0]["function"]["name"], {"claims": [content.split("Answer: ")[1]]})

    with FakeLLMServer(models=("judge",), responder=splits) as server:
        checker = ServedChecker(build_model(LLMModel(provider="openai", name="judge", base_url=server.openai_url),
                                            _config(tmp_path / "b")), served_rubric("faithfulness"),
                                identity="splits", retries=1)
        assert [checker.claims(q, a) for q, a in answers] == [[a] for _, a in answers]
        sent = [r.body["messages"][-1]["content"] for r in server.calls("/v1/chat/completions")]
        assert [PROBE[1] in text for text in sent] == [True, False, False]  # the probe once, then each answer

    with FakeLLMServer(models=("judge",), responder=lambda body: Fault("500")) as server:
        checker = ServedChecker(build_model(LLMModel(provider="openai", name="judge", base_url=server.openai_url),
                                            _config(tmp_path / "c")), served_rubric("faithfulness"),
                                identity="down", retries=1, url=server.openai_url)
        for _ in range(2):
            with pytest.raises(CheckFailed):
                checker.claims(*answers[0])
        probes = [r for r in server.calls("/v1/chat/completions") if PROBE[1] in r.body["messages"][-1]["content"]]
        assert len(probes) == 2 and len(server.calls("/v1/chat/completions")) == 2  # asked again, nothing else


def test_an_unreachable_server_is_one_error_naming_its_url(tmp_path):
    url = closed_port_url() + "/v1"
    model_cfg = LLMModel(provider="openai", name="judge", base_url=url)
    with pytest.raises(EvaluationsError) as checked:
        checker_for(model_cfg, _config(tmp_path))  # the server is asked first
    assert url in str(checked.value) and checked.value.where == "judge.model.base_url"

    checker = checker_for(model_cfg, _config(tmp_path), check=False)  # a server that went away during a run
    with pytest.raises(EvaluationsError) as asked:
        checker.probability("Passage:\nA text.\n\n", ASK.format(statement="A claim."))
    assert url in str(asked.value) and asked.value.where == "judge.model.base_url"
    assert checker.calls == 1


def test_an_ollama_server_is_named_by_its_provider_key(tmp_path):
    url = closed_port_url()
    config = _config(tmp_path, providers={"ollama": {"base_url": url}})
    checker = checker_for(LLMModel(provider="ollama", name="judge"), config, check=False)
    with pytest.raises(EvaluationsError) as asked:
        checker.probability("Passage:\nA text.\n\n", ASK.format(statement="A claim."))
    assert url + "/v1" in str(asked.value) and asked.value.where == "providers.ollama.base_url"


def test_a_server_url_from_the_environment_is_named_by_its_variable(tmp_path, monkeypatch):
    """As the QA model's check does (``Config.origin``): the URL came from $OLLAMA_BASE_URL, not the config."""
    url = closed_port_url()
    monkeypatch.setenv("OLLAMA_BASE_URL", url)
    checker = checker_for(LLMModel(provider="ollama", name="judge"), _config(tmp_path), check=False)
    with pytest.raises(EvaluationsError) as asked:
        checker.probability("Passage:\nA text.\n\n", ASK.format(statement="A claim."))
    assert url + "/v1" in str(asked.value) and asked.value.where == "environment variable OLLAMA_BASE_URL"


def test_fit_cuts_the_passage_by_characters():
    checker = ServedChecker(build_model(LLMModel(provider="openai", name="m", base_url="http://127.0.0.1:9/v1"),
                                        Config.model_validate({"cache": {"enabled": False}})),
                            "rubric", identity="m", max_chars=100)
    tail = "Statement: x\nSupported?"  # 24 characters
    short = "Passage:\n" + "word " * 10
    assert checker.fit(short, tail) == short
    long = "Passage:\n" + " ".join(f"w{i}" for i in range(100))
    cut = checker.fit(long, tail)
    assert len(cut) + len(tail) <= 100 and cut.endswith(" ...\n\n")
    kept = cut.removesuffix(" ...\n\n")
    assert long.startswith(kept) and long[len(kept)] == " "  # cut at a space, from the end
    assert MAX_CHARS >= 4000  # a passage of ~1,000 tokens fits by default


def test_rubrics_and_ids():
    assert served_rubric() == served_rubric("no_such_judge") == (Path("judges") / FALLBACK_RUBRIC).read_text()
    model = build_model(LLMModel(provider="openai", name="m", base_url="http://127.0.0.1:9/v1"),
                        Config.model_validate({"cache": {"enabled": False}}))
    a = ServedChecker(model, "rubric A", identity="m")
    assert a.id == ServedChecker(model, "rubric A", identity="m").id
    assert len({a.id, ServedChecker(model, "rubric B", identity="m").id,
                ServedChecker(model, "rubric A", identity="n").id,
                ServedChecker(model, "rubric A", identity="m", modes=("text",)).id}) == 4


def test_each_judge_asks_for_one_reply_form_in_its_own_words(tmp_path):
    """The system prompt a served checker sends asks for one reply: one word in text mode, a reason then the
    answer in the structured modes (never both, as faithfulness's rubric once ended with "Reply with one word" before
    the structured ask); no rubric speaks of the correctness judge's fields (an <Input>, pass, score)."""

    def responder(body: dict) -> object:
        if body.get("tools"):
            return tool_call(body["tools"][0]["function"]["name"], {"reason": "It says so.", "answer": "yes"})
        return "Yes."

    with FakeLLMServer(models=("judge",), responder=responder) as server:
        config = _config(tmp_path, cache={"enabled": False})
        model_cfg = LLMModel(provider="openai", name="judge", base_url=server.openai_url)
        for judge in ("faithfulness", "context_relevance"):
            for mode, asked, never in (("text", ONE_WORD, STRUCTURED), ("tool", STRUCTURED, ONE_WORD)):
                checker = checker_for(model_cfg, config, judge=judge, modes=(mode,))
                tail = "Question: When did it open?\nIs this passage relevant? Answer yes or no."
                assert checker.probability("Passage:\nThe bridge opened in 1932.\n\n", tail)[0] == 1.0
                system = server.calls("/v1/chat/completions")[-1].body["messages"][0]["content"]
                assert system.count(asked) == 1 and never not in system, (judge, mode, system[-300:])
                assert system.rstrip().endswith(asked)
            rubric = served_rubric(judge)
            assert not any(word in rubric for word in ("<Input>", "Set pass", "score to")), judge


def test_the_embedded_provider_gets_the_embedded_scorer(tmp_path):
    from evaluations.judging.correctness.embedded import DEFAULT_JUDGE
    from evaluations.judging.checkers.yesno import load_scorer

    config = Config()
    scorer = checker_for(LLMModel(provider="embedded"), config)
    assert scorer is load_scorer(PASSAGE_SYSTEM, DEFAULT_JUDGE, data_dir=config.data_dir())
    assert claims_from_model("q", "a", LLMModel(provider="embedded"), config) is None


# -- a real server (``qwen_server``: conftest.py, one per session) ------------------------------------
#: A handful of rows proves each path reaches the real server and reads its replies; how well a served checker
#: agrees with labels over hundreds of rows is measured, not tested (``calibrate-judge`` through a served model:
#: benchmarks/results/context_relevance_served_refit.json, faithfulness_served_refit.json). Output retries are
#: off where the real server is asked for claims (``judge.retries: 0``): a tool call the 0.5B model cannot make
#: costs one request, not three (retries and the ladder are tests/test_retries.py's and tests/test_ladder.py's).
#: The real-server tests below are ordered so that consecutive requests share the server's cached prompt prefix
#: (llama-cpp-python keeps the last prompt's state; the rubric is the long system prompt): the faithfulness tests
#: (supported statement, bridge claim), then judge-agreement (faithfulness and context relevance), then the
#: context-relevance refit, then ``score --format log`` (on judge-agreement's row: its yes/no verdicts are in the
#: session's verdict store by then, its decomposition asked live). Each test stands alone in any order: only its
#: time changes.
NO_RETRIES = "judge:\n  retries: 0\n"


def _statements(n: int) -> list[tuple[str, str, str]]:
    """(passage, a sentence of it, a sentence of another document): a passage is three sentences of a RepliQA
    document, the sentence its middle one; the other sentence comes from the next document (another topic)."""
    documents = []
    with gzip.open(REPLIQA_20, "rt", encoding="utf-8") as handle:
        for line in handle:
            paragraph = max(json.loads(line)["document_extracted"].split("\n"), key=len)
            sentences = [s for s in re.split(r"(?<=[.!?])\s+", paragraph.strip()) if 8 <= len(s.split()) <= 40]
            if len(sentences) >= 3:
                documents.append(sentences[:3])
    assert len(documents) > n, "the sample has too few documents with three sentences"
    return [(" ".join(doc), doc[1], documents[i + 1][1]) for i, doc in enumerate(documents[:n])]


def test_a_real_server_prefers_the_supported_statement(qwen_server, tmp_path):
    """P(yes) from the first token's top_logprobs: a sentence copied from the passage is more likely supported
    than a sentence of another document. That is all a 0.5B model is asked here: measured on RepliQA passages,
    it is near chance between a sentence and the same sentence with a year changed (e.g. 0.424 vs 0.424)."""
    model_cfg = LLMModel(provider="openai", name=qwen_server.model_id, base_url=qwen_server.base_url)
    config = _config(tmp_path)
    checker = checker_for(model_cfg, config, judge="faithfulness", modes=("text",))
    cases = _statements(1)  # one passage: its own sentence (supported) against another document's (not)
    results = []
    for passage, supported, other in cases:
        shared = f"Passage:\n{passage}\n\n"
        p_yes, mass = checker.probability(shared, ASK.format(statement=supported))
        p_other, _ = checker.probability(shared, ASK.format(statement=other))
        results.append((p_yes, p_other))
        assert 0.0 <= p_other <= 1.0 and 0.5 < mass <= 1.0 + 1e-9  # the first token is yes or no, mostly
    print("\nP(yes) copied sentence vs another document's:", results)
    assert all(p_yes > p_other for p_yes, p_other in results), results
    assert checker.calls == 2 * len(cases)
    # llama-cpp-python's server gives logprobs streamed: the questions were streamed. The same question asked
    # plainly and then streamed (the server's prompt cache in the same state for both: it holds the prompt whole)
    # gives the same P(yes) to the last digit (under a one-line rubric: a plain reply costs the server a conversion
    # of every prompt position's logits, seconds for the rubric's hundreds of tokens). Asked once before, streamed:
    # the prompt read whole in one batch gives logits that differ in the third digit from the last token read alone
    assert checker.model.wrapped.streams is True
    question = (f"Passage:\n{cases[0][0]}\n\n", ASK.format(statement=cases[0][2]))
    asked = []
    for streams in (True, False, True):
        fresh = ServedChecker(build_model(model_cfg, _config(tmp_path, cache={"enabled": False})),
                              "Answer yes or no.", identity="fresh", settings=model_settings(model_cfg),
                              modes=("text",))
        fresh.model.wrapped.streams = streams
        asked.append(fresh.probability(*question))
        fresh.close()
    assert asked[1] == asked[2], asked

    # asked from a worker thread while an event loop runs in the main thread (as the judges are run)
    passage, supported, _ = cases[0]
    shared, tail = f"Passage:\n{passage}\n\n", ASK.format(statement=supported)

    async def in_a_loop() -> tuple[tuple[float, float], tuple[float, float]]:
        by_asyncio = await asyncio.to_thread(checker.probability, shared, tail)
        by_anyio = await anyio.to_thread.run_sync(checker.probability, shared, tail)
        return by_asyncio, by_anyio

    by_asyncio, by_anyio = asyncio.run(in_a_loop())
    assert by_asyncio[0] == by_anyio[0] == results[0][0]

    # a re-run (a new checker on the same cache): every answer from the cache, none sent to the server
    again = ServedChecker(build_model(model_cfg, config), served_rubric("faithfulness"), identity="the same",
                          settings=model_settings(model_cfg), modes=("text",))
    live = CALL_STATS["chat"].misses
    for (passage, supported, other), expected in zip(cases, results):
        shared = f"Passage:\n{passage}\n\n"
        assert (again.probability(shared, ASK.format(statement=supported))[0],
                again.probability(shared, ASK.format(statement=other))[0]) == expected
    assert again.calls == 0 and CALL_STATS["chat"].misses == live
    checker.close()


class _Recording:
    """A served checker that records the (passage, question) of each yes/no question it is asked; everything else
    (``fit``, ``id``, ...) is the checker's own."""

    def __init__(self, checker: ServedChecker) -> None:
        self.checker = checker
        self.asked: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.checker, name)

    def probability(self, shared: str, tail: str) -> tuple[float, float]:
        self.asked.append((shared, tail))
        return self.checker.probability(shared, tail)


def _bridge_rows(n: int) -> list[dict]:
    """Supported short answers to bridge questions of the multi-hop probe (datasets/labels/MULTIHOP.md): the answer
    is in the second passage only, the question's title in the first only."""
    rows = [r for r in multihop_probe() if r["type"] == "bridge" and r["form"] == "short" and r["label"]
            and r["generated_answer"] in r["context"][1] and r["generated_answer"] not in r["context"][0]]
    assert len(rows) >= n
    return rows[:n]


def _holds_both(sent: str, first: str, second: str) -> bool:
    """``sent`` has a sentence of each passage."""
    return any(s in sent for s in re.split(r"(?<=\.)\s+", first)) and any(s in sent for s in re.split(r"(?<=\.)\s+",
                                                                                                    second))


def test_a_bridge_claim_is_sent_to_a_real_server_with_both_passages_when_they_fit(qwen_server, tmp_path):
    """Faithfulness through a served checker on multi-hop questions: the claim (an entity found only in the second
    passage) is asked about the first passage's window and the second's together, in one request the real server
    answers; with a checker whose window holds one passage but not two (``max_chars``), each window is asked
    alone, and nothing sent exceeds the window."""
    from evaluations.judging.grounded.faithfulness import judge_faithfulness
    from evaluations.judging.basics.passages import Passage

    model_cfg = LLMModel(provider="openai", name=qwen_server.model_id, base_url=qwen_server.base_url)
    config = _config(tmp_path)
    rows = _bridge_rows(1)  # one multi-hop row: the window logic is the checker's, the reply the real server's
    tails = []
    for row in rows:
        checker = _Recording(checker_for(model_cfg, config, judge="faithfulness", modes=("text",)))
        passages = [Passage(id=f"p{i}", text=t) for i, t in enumerate(row["context"])]
        result = judge_faithfulness(row["query"], row["generated_answer"], passages, cache=None, scorer=checker)
        assert result.applicable and len(result.claims) == 1 and 0.0 <= result.claims[0].p <= 1.0, result
        sent, tail = checker.asked[-1]
        assert row["generated_answer"] in sent and _holds_both(sent, *row["context"]), sent
        tails.append(len(tail))

    longest = max(len(t) for row in rows for t in row["context"])
    narrow = max(tails) + len("Passage:\n\n\n") + longest + 20  # one passage fits, two do not
    assert all(len(r["context"][0]) + len(r["context"][1]) > longest + 20 for r in rows)
    for row in rows:
        checker = _Recording(checker_for(model_cfg, config, judge="faithfulness", modes=("text",),
                                         max_chars=narrow))
        passages = [Passage(id=f"p{i}", text=t) for i, t in enumerate(row["context"])]
        result = judge_faithfulness(row["query"], row["generated_answer"], passages, cache=None, scorer=checker)
        assert result.applicable and checker.asked
        for sent, tail in checker.asked:
            assert len(sent) + len(tail) <= narrow and not _holds_both(sent, *row["context"]), sent



def test_a_run_with_a_served_judge_model_uses_it_for_the_reference_free_judges(tmp_path):
    """``judge.model`` on a server: the run's faithfulness evaluator takes its claims from the server's structured
    decomposition and asks each claim in text mode first; context relevance asks the same server. An unreachable
    judge server is an error when the evaluators are made, before any case."""
    from evaluations.evaluators.reference_free import (
        ContextRelevance,
        Faithfulness,
        checker_notes,
        context_relevance_results,
        faithfulness_results,
        parameter_sources,
        reference_free_evaluators,
    )
    from evaluations.judging.basics.passages import Passage

    claims = ["The bridge opened in 1932.", "The bridge is in Sydney."]

    def responder(body: dict) -> object:
        if body.get("tools"):
            return tool_call(body["tools"][0]["function"]["name"], {"claims": claims})
        return "Yes." if "1932" in body["messages"][-1]["content"] else "No."

    with FakeLLMServer(models=("judge",), responder=responder) as server:
        config = _config(tmp_path, judge={"retries": 1, "reference_free": ["faithfulness", "context_relevance"],
                                          "model": {"provider": "openai", "name": "judge",
                                                    "base_url": server.openai_url}},
                         **{"cache": {"path": str(tmp_path / "calls.sqlite"), "enabled": False}})
        made = reference_free_evaluators(config, answers=True, retrieval=True, has_qrels=False)
        faith = next(e for e in made if isinstance(e, Faithfulness))
        context = next(e for e in made if isinstance(e, ContextRelevance))
        assert isinstance(faith.scorer, ServedChecker) and isinstance(context.scorer, ServedChecker)
        # the shipped parameters were fitted through the embedded model: the run says so for both judges
        notes = checker_notes(config, parameter_sources(made))
        assert [n.split(":")[0] for n in notes] == ["faithfulness", "context_relevance"]  # the order of their turns
        assert "fitted through embedded, the verdicts come from openai:judge" in notes[0]
        assert parameter_sources(made)["faithfulness"]["file"].endswith("faithfulness_served.json")
        served_fit = json.loads(Path(parameter_sources(made)["context_relevance"]["file"]).read_text())["checker"]
        assert f"fitted through {served_fit.split()[0]}, the verdicts come from openai:judge" in notes[1]
        assert "calibrate-judge FILE --judges context_relevance --judge openai:judge" in notes[1]
        passage = Passage(id="p1", text="The Harbour Bridge in Sydney opened in 1932.")
        out = faithfulness_results("When did the bridge open?", "It opened in 1932 in Sydney.", [passage],
                                   cache=False, scorer=faith.scorer, decompose=faith.decompose)
        record = json.loads(out["faithfulness_kind"].reason)
        assert [c["claim"] for c in record["claims"]] == claims  # the server's decomposition, not the splitter's
        asked = [_mode(r.body) for r in server.calls("/v1/chat/completions")]
        # claims by a tool call (the probe's, then the answer's), checks in text mode
        assert asked[:2] == ["tool", "tool"] and set(asked[2:]) == {"text"}
        context_relevance_results("When did the bridge open?", [passage], cache=False, scorer=context.scorer)
        assert len(server.calls("/v1/chat/completions")) > len(asked)

    url = closed_port_url()
    dead = _config(tmp_path / "d", judge={"reference_free": ["faithfulness"],
                                          "model": {"provider": "openai", "name": "judge", "base_url": url}})
    with pytest.raises(EvaluationsError) as err:
        reference_free_evaluators(dead, answers=True, retrieval=False)
    assert url.split("//")[1].split("/")[0] in str(err.value) and "judge.model.base_url" in str(err.value)


def test_served_context_relevance_continues_the_qa_conversation_the_server_has_just_read(tmp_path):
    """The conversation form: each passage's question is the next user turn after the QA agent's own request (its
    system prompt and first user turn, as the server received them from ``answer_question``), so a server keeping
    the last prompt's prefix reads the context once. A passage that does not fit the checker's budget beside the
    others is asked in a conversation of its own; a passage with no text is not asked."""
    import asyncio

    from evaluations.core.types import RetrievedChunk
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.checkers.served_checker import served_tools
    from evaluations.judging.grounded.context_relevance import judge_context_relevance, params
    from evaluations.pipeline.qa_agent import answer_question, build_qa_agent

    def responder(body: dict) -> object:
        last = body["messages"][-1]["content"]
        return "Yes." if "[c1]" in last or "Statement:" in last else ("No." if "needed" in last else
                                                                     "It opened in 1932.")

    question = "When did the Harbour Bridge open?"
    texts = ["The Harbour Bridge  opened in 1932.", "Sydney has a harbour.", "Ferries cross the harbour."]
    with FakeLLMServer(models=("judge",), responder=responder) as server:
        config = _config(tmp_path, judge={"model": {"provider": "openai", "name": "judge",
                                                    "base_url": server.openai_url}}, cache={"enabled": False})
        agent = build_qa_agent(build_model(config.judge.model, config))
        chunks = [RetrievedChunk(chunk_id=f"c{i}", doc_id="d", text=t) for i, t in enumerate(texts, 1)]
        asyncio.run(answer_question(agent, question, chunks, modes=("text",)))
        qa = server.calls("/v1/chat/completions")[0].body["messages"]
        checker, _ = served_tools(config, "context_relevance")
        passages = [Passage(id=c.chunk_id, text=c.text) for c in chunks] + [Passage(id="c4", text=" ")]
        verdict = judge_context_relevance(question, passages, scorer=checker, set_stage=False)
        asked = [r.body["messages"] for r in _plain(server.calls("/v1/chat/completions")[1:])]
        assert len(asked) == 3 and verdict.model_calls == 3  # the passage with no text is not asked
        wording = params(served=True).wording
        for system, first, _ in asked:
            assert [system, first] == qa  # the QA request, word for word
        assert sorted(turn["content"] for *_, turn in asked) == [wording.format(id=c.chunk_id) for c in chunks]
        assert [c.p > 0.5 for c in verdict.chunks[:3]] == [True, False, False]

        # faithfulness continues the same conversation: each claim is the next user turn after the QA request
        from evaluations.judging.grounded.faithfulness import CONVERSATION_ASKS, judge_faithfulness

        faith, _ = served_tools(config, "faithfulness")
        before = len(server.calls("/v1/chat/completions"))
        judged = judge_faithfulness(question, "It opened in 1932.", passages[:3], scorer=faith, decompose=None)
        claims = [r.body["messages"] for r in _plain(server.calls("/v1/chat/completions")[before:])]
        assert len(claims) == len(judged.claims) == judged.model_calls == 1
        assert claims[0][:2] == qa and claims[0][2]["content"] == CONVERSATION_ASKS["statement"].format(
            claim=judged.claims[0].claim)
        assert judged.claims[0].passage == "c1" and judged.claims[0].supported

        # a checker whose budget (at least 200 characters of context) holds the first of three passages of 150
        # characters whole and the second cut: the second and third are each asked beside no other passage
        long = [Passage(id=f"c{i}", text=(t + " ") * (150 // (len(t) + 1)) + "x" * (150 % (len(t) + 1)))
                for i, t in enumerate(texts, 1)]
        assert all(len(p.text) == 150 for p in long)
        narrow = ServedChecker(build_model(config.judge.model, config), served_rubric("context_relevance"),
                               identity="narrow", modes=("text",), conversation_chars=100)
        before = len(server.calls("/v1/chat/completions"))
        judge_context_relevance(question, long, scorer=narrow, set_stage=False)
        firsts = [r.body["messages"][1]["content"] for r in _plain(server.calls("/v1/chat/completions")[before:])]
        blocks = [f"[{p.id}] {' '.join(p.text.split())}" for p in long]
        assert len(firsts) == 3 and blocks[0] in firsts[0] and "[c2]" in firsts[0] and blocks[1] not in firsts[0]
        assert firsts[1:] == [f"Context:\n{blocks[1]}\n\nQuestion: {question}",
                              f"Context:\n{blocks[2]}\n\nQuestion: {question}"]


def test_judge_agreement_with_a_served_judge_asks_that_server(qwen_server, tmp_path, capsys):
    """``judge-agreement --judges context_relevance --judge openai:NAME``: the reference-free judge asks the served
    model (as a run with ``judge.model`` on it does), so a served judge can be checked against labels; its questions
    go through the model-call cache (a second pass asks the server nothing and gives the same verdicts), and
    ``score --format log`` with ``judge.model`` on that server asks the same questions of the same row (from that
    cache). A dead server is one error naming its URL, before any example. (Faithfulness through this server is
    ``test_a_real_server_prefers_the_supported_statement`` and the bridge test above; its claims from a served
    decomposition, three generated replies of the 0.5B model here, are the scripted server's tests.)"""
    import sqlite3

    from evaluations.cli.root import main

    # one row (a passage and a sentence copied from it): each served request costs seconds of the real model, and
    # how well the served judge agrees with labels is measured, not tested (see above)
    (passage, supported, _), = _statements(1)
    rows = [{"query": "What does the passage say?", "context": [passage], "generated_answer": supported, "label": True}]
    labels = tmp_path / "rows.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cache = tmp_path / "calls.sqlite"
    config = tmp_path / "haiku.rag.yaml"
    config.write_text(f"providers:\n  openai:\n    base_url: {qwen_server.base_url}\n"
                      f"cache:\n  path: {cache}\n{NO_RETRIES}", encoding="utf-8")

    def agreement(*extra: str) -> tuple[int | None, str]:
        code = None
        try:
            main(["judge-agreement", str(labels), "--judges", "context_relevance", "--json",
                  "--resamples", "0", "--config", str(config), *extra])
        except SystemExit as exited:
            code = exited.code
        return code, capsys.readouterr().out

    live = CALL_STATS["chat"].misses
    code, out = agreement("--judge", f"openai:{qwen_server.model_id}")
    assert code in (0, None), out
    judged = {j["judge"]: j for j in json.loads(out)["judges"]}
    assert set(judged) == {"context_relevance"} and judged["context_relevance"]["n"] == 1
    asked = CALL_STATS["chat"].misses - live
    assert asked >= len(rows), asked  # the passage asked for relevance, of the server
    with sqlite3.connect(cache) as db:
        stored = sum(db.execute(f"select count(*) from {t}").fetchone()[0]
                     for (t,) in db.execute("select name from sqlite_master where type='table'"))
    assert stored >= asked  # kept in the config's call cache

    code, again = agreement("--judge", f"openai:{qwen_server.model_id}")
    assert CALL_STATS["chat"].misses - live == asked  # the second pass: all from the cache
    assert [j["accuracy"] for j in json.loads(again)["judges"]] == [j["accuracy"] for j in json.loads(out)["judges"]]

    # ``score --format log`` with ``judge.model`` on the same server and call cache, on the same answer and passage
    # logged: the summary names the served judge, its judges apply to the row, and the questions they ask are the
    # ones judge-agreement asked (read from the cache: a score of a log asks what judge-agreement asks)
    from click.testing import CliRunner

    from evaluations.cli.root import cli as score_main

    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"query_id": "q1", "query": rows[0]["query"], "answer": supported,
                               "retrieved": [{"id": "d1", "text": passage}]}) + "\n", encoding="utf-8")
    served_config = tmp_path / "judge.yaml"
    served_config.write_text(f"{NO_RETRIES}  model: {{provider: openai, name: {qwen_server.model_id}, "
                             f"base_url: '{qwen_server.base_url}'}}\ncache:\n  path: {cache}\n", encoding="utf-8")
    def score() -> dict:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("EVALUATIONS_REFERENCE_FREE", "context_relevance")
            result = CliRunner().invoke(score_main, ["score", str(log), "--format", "log", "--json", "--config",
                                                     str(served_config)])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    before = CALL_STATS["chat"].misses + CALL_STATS["chat"].hits
    summary = score()
    assert summary["reference_free_judge"] == f"openai:{qwen_server.model_id}"
    metrics = summary["reference_free"]["metrics"]
    assert set(metrics) == {"context_relevance"} and metrics["context_relevance"]["n"] == 1
    assert 0.0 <= metrics["context_relevance"]["mean"] <= 1.0
    # the passage asked at least once, of the server or of the cache judge-agreement filled
    assert CALL_STATS["chat"].misses + CALL_STATS["chat"].hits - before >= 1
    scored = CALL_STATS["chat"].misses
    assert score()["reference_free"]["metrics"] == metrics and CALL_STATS["chat"].misses == scored  # all cached

    dead = tmp_path / "dead.yaml"
    dead.write_text(f"providers:\n  openai:\n    base_url: {closed_port_url()}\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        main(["judge-agreement", str(labels), "--judges", "faithfulness", "--config", str(dead),
              "--judge", "openai:m"])
    captured = capsys.readouterr()
    assert exited.value.code == 2 and "Traceback" not in captured.err
    assert closed_port_url().rsplit(":", 1)[0] in captured.err and "fix:" in captured.err


def test_calibrate_judge_refits_context_relevance_through_a_served_checker(qwen_server, tmp_path, capsys):
    """``calibrate-judge --judges context_relevance --judge openai:NAME``: the refit reads the served model's
    P(yes) (hand-labelled pairs of ``datasets/labels``); its "current" accuracy is what judge-agreement through
    the same server says on the same rows, and the written file names the served checker."""
    from evaluations.cli.root import main

    labels = short_context_labels(tmp_path / "labels_root")
    config = tmp_path / "haiku.rag.yaml"
    config.write_text(f"providers:\n  openai:\n    base_url: {qwen_server.base_url}\n"
                      f"cache:\n  path: {tmp_path / 'calls.sqlite'}\n", encoding="utf-8")
    # 4 rows: two questions, each with a relevant and an irrelevant passage (2-fold CV needs both labels in each
    # training fold); the refit on hundreds of rows is benchmarks/results/context_relevance_served_refit.json
    served = ["--judge", f"openai:{qwen_server.model_id}", "--config", str(config), "--limit", "4"]

    def cli(*args: str) -> tuple[int | None, str]:
        code = None
        try:
            main([*args, *served])
        except SystemExit as exited:
            code = exited.code
        captured = capsys.readouterr()
        said.append(" ".join(captured.err.split()))
        return code, captured.out

    said: list[str] = []
    code, out = cli("judge-agreement", str(labels), "--judges", "context_relevance", "--json", "--resamples", "0")
    assert code in (0, None), out
    current = json.loads(out)["judges"][0]
    # a served checker reads the conversation form's parameters, fitted through another served model:
    # judge-agreement says whose verdicts these are
    from evaluations.judging.basics.fitted import default_params_path

    shipped = json.loads(default_params_path("context_relevance_served.json").read_text())
    assert (f"note: context_relevance: its parameters were fitted through {shipped['checker'].split()[0]}, the "
            f"verdicts come from openai:{qwen_server.model_id}") in said[0]
    target = tmp_path / "context_relevance_served.json"
    code, out = cli("calibrate-judge", str(labels), "--judges", "context_relevance", "--folds", "2", "--force",
                    "--out", str(target))
    assert code in (0, None), out
    doc = json.loads(target.read_text())
    assert doc["params"]["form"] == "conversation" and doc["params"]["wording"] == shipped["params"]["wording"]
    assert doc["checker"].startswith(f"openai:{qwen_server.model_id} (checker id ")
    assert doc["written_by"] == ("evaluations calibrate-judge --judges context_relevance "
                                 f"--judge openai:{qwen_server.model_id}")
    assert doc["validation"]["previous_parameters_same_rows"]["accuracy"] == pytest.approx(
        current["accuracy"]["value"], abs=1e-4)
    assert doc["training_data"]["rows"] == current["n"] == 4
    assert "checker calls made: 0" in out  # judge-agreement asked the same questions: all cached


def test_a_command_that_asked_a_served_checker_exits(tmp_path):
    """A CLI process whose served checker sent questions exits when its command is done: the checker's event loop
    must not keep the interpreter alive (it once ran on a non-daemon executor thread and the process hung after
    printing its result)."""

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"query": f"When did bridge {i} open?", "context": [f"Bridge {i} opened in "
                                        f"19{30 + i}."], "label": True}) + "\n" for i in range(3)), encoding="utf-8")
    with FakeLLMServer(models=("judge",), responder=lambda body: "Yes.") as server:
        config = tmp_path / "haiku.rag.yaml"
        config.write_text(f"providers:\n  openai:\n    base_url: {server.openai_url}\n"
                          f"cache:\n  path: {tmp_path / 'calls.sqlite'}\n", encoding="utf-8")
        done = run_evaluations(["judge-agreement", str(rows), "--judges",
                               "context_relevance", "--judge", "openai:judge", "--config", str(config), "--json",
                               "--resamples", "0", "--no-cache"], capture_output=True, text=True, timeout=120)
        asked = len(server.calls("/v1/chat/completions"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["judges"][0]["n"] == 3
    assert asked >= 3  # the questions went to the server (not all from a cache)


def test_a_run_with_an_embedded_judge_model_named_loads_that_model(tmp_path, monkeypatch):
    """``judge.model: {provider: embedded, name: ...}``: the run's reference-free judges ask that model, the one the
    run's metadata names (``checker_label``) and the judge commands use; before, they always loaded the default
    judge model while the metadata named the configured one."""
    from evaluations.evaluators.reference_free import (
        Faithfulness,
        checker_label,
        checker_notes,
        parameter_sources,
        reference_free_evaluators,
    )
    from evaluations.judging.correctness.embedded import embedded_judge_path

    monkeypatch.delenv("EVALUATIONS_JUDGE_GGUF", raising=False)
    monkeypatch.setenv("EVALUATIONS_LLM_THREADS", "1")
    judges = {"reference_free": ["faithfulness", "context_relevance"]}
    small = _config(tmp_path, judge={**judges, "model": {"provider": "embedded", "name": "qwen2.5-coder-0.5b"}})
    default = _config(tmp_path, judge=judges)
    for config, name in ((small, "qwen2.5-coder-0.5b"), (default, "qwen2.5-coder-1.5b")):
        made = reference_free_evaluators(config, answers=True, retrieval=True, has_qrels=False)
        assert len(made) == 2 and checker_label(config) == f"embedded:{name}"
        faith = next(e for e in made if isinstance(e, Faithfulness))
        assert [e.scorer.path for e in made] == [embedded_judge_path(name)] * 2
        verdict = faith.scorer.probability("Passage:\nThe bridge opened in 1932.\n\n",
                                           "Question: When did it open?\nStatement: It opened in 1932.\n"
                                           "Is the statement supported by the passage? Answer yes or no.")
        assert verdict[0] > 0.5
        # the shipped parameters were fitted through the default judge model: a run on another one says so
        notes = checker_notes(config, parameter_sources(made))
        if config is default:
            assert notes == []
        else:
            assert [n.split(":")[0] for n in notes] == ["faithfulness", "context_relevance"]  # in turn order
            assert all(f"fitted through embedded, the verdicts come from embedded:{name};" in n for n in notes)


def test_score_log_with_a_served_judge_model_asks_that_server(tmp_path, monkeypatch):
    """``score --format log`` with ``judge.model`` on a server: faithfulness and context relevance ask that
    server, as a run does, and the summary names it; before, the log's judges always asked the embedded model."""
    from click.testing import CliRunner

    from evaluations.cli.root import cli as main

    claims = ["The bridge opened in 1932."]

    def responder(body: dict) -> object:
        if body.get("tools"):
            return tool_call(body["tools"][0]["function"]["name"], {"claims": claims})
        last = body["messages"][-1]["content"]
        return "Yes." if "1932" in last or "[d1]" in last else "No."

    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"query_id": "q1", "query": "When did the bridge open?", "answer": "It opened in 1932.",
                               "retrieved": [{"id": "d1", "text": "The Harbour Bridge opened in 1932."}]}) + "\n")
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "faithfulness,context_relevance")
    with FakeLLMServer(models=("judge",), responder=responder) as server:
        config = tmp_path / "judge.yaml"
        config.write_text(f"judge:\n  model: {{provider: openai, name: judge, base_url: '{server.openai_url}'}}\n"
                          f"cache:\n  enabled: false\n")
        result = CliRunner().invoke(main, ["score", str(log), "--format", "log", "--json", "--config", str(config)])
        assert result.exit_code == 0, result.output
        asked = [json.dumps(r.body) for r in server.calls("/v1/chat/completions")]
    summary = json.loads(result.stdout)
    assert summary["reference_free_judge"] == "openai:judge"
    assert any("Statement: The bridge opened in 1932." in a for a in asked)  # the server's claim, checked there
    assert any("Is passage [d1] needed" in a for a in asked)  # context relevance asked the server too
    metrics = summary["reference_free"]["metrics"]
    assert metrics["faithfulness"]["mean"] == 1.0 and metrics["context_relevance"]["mean"] == 1.0
