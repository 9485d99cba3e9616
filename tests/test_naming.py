"""The naming screen of answer relevance (``judging.grounded.naming``) on the real embedded judge model.

The sample is the first questions of ``datasets/relevance/answers_writers`` (answers written by helper agents in
ten kinds, each labelled blind under ``datasets/relevance/RUBRIC.md``; design material of the screen): the expected
verdicts are those labels, never the judge's. The screen's figures over whole splits (and the held-out ones) are
``benchmarks/relevance_outside.py answer_controls``.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from evaluations.judging.correctness.embedded import VerdictCache
from evaluations.judging.grounded.answer_relevance import answer_relevance_batch, judge_answer_relevance
from evaluations.judging.checkers.yesno import MIN_PASSAGE_TOKENS
from evaluations.judging.grounded.naming import REPLY_CHARS, THRESHOLD, Naming, prompt

FOLDER = Path(__file__).resolve().parents[1] / "datasets" / "relevance"
QUESTIONS = 3  # the first three questions of the design split: 30 answers


def _labelled(split: str = "writers", questions: int = QUESTIONS) -> list[dict]:
    labels = {r["id"]: r["label"] for r in map(json.loads, (FOLDER / f"labels_{split}.jsonl").open())}
    with gzip.open(FOLDER / f"answers_{split}.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [r | {"label": labels[r["id"]]} for r in map(json.loads, f) if r["id"] in labels]
    keep = list(dict.fromkeys(r["question"] for r in rows))[:questions]
    return [r for r in rows if r["question"] in keep]


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    rows = _labelled()
    cases = [(r["question"], r["answer"], "\n\n".join(r["context"]), True) for r in rows]
    naming = Naming(cache=VerdictCache(tmp_path_factory.mktemp("verdicts") / "store.sqlite"))
    return rows, cases, naming, answer_relevance_batch(cases), judge_answer_relevance(cases, naming)


def test_the_screen_rejects_what_the_rules_let_through_and_keeps_every_labelled_answer(judged):
    rows, _, _, rules, screened = judged
    assert len(rows) == 10 * QUESTIONS and sum(r["label"] for r in rows) >= QUESTIONS  # golds, mostly
    for row, rule, final in zip(rows, rules, screened):
        if not rule.verdict:  # the screen reads only what the rules accept
            assert final == rule
        elif row["label"]:  # labelled relevant (a gold in a sentence, casually): still accepted
            assert final.verdict, row
        elif row["kind"] == "refusal":  # a refusal in the writer's own words, passed by the rules
            assert not final.verdict and final.kind == "no_answer", row
            assert "the rules had accepted it" in final.reason and f"< {THRESHOLD:g}" in final.reason
    # the screen is what takes the refusals the rules miss: at least one here (labels say every one is none)
    refusals = [(rule.verdict, final.verdict) for row, rule, final in zip(rows, rules, screened)
                if row["kind"] == "refusal"]
    assert any(rule for rule, _ in refusals) and not any(final for _, final in refusals)
    agree = [sum(v.verdict == r["label"] for v, r in zip(said, rows)) for said in (rules, screened)]
    assert agree[1] > agree[0]


def test_a_re_run_reads_the_verdict_store_and_calls_no_model(judged):
    _, cases, naming, _, screened = judged
    before = naming.scorer.calls
    again = judge_answer_relevance(cases, Naming(cache=naming.cache))
    assert again == screened and naming.scorer.calls == before
    # without a store the model is asked again, and says the same up to the rounding of batched arithmetic (the
    # stored P(named) were read 50 side by side, these 3)
    pairs = [(q, a) for q, a, _, _ in cases[:3]]
    fresh = Naming().probabilities(pairs)
    assert naming.scorer.calls > before
    for p, q in zip(fresh, naming.probabilities(pairs)):
        assert abs(math.log(p / (1 - p)) - math.log(q / (1 - q))) < 0.5, (p, q)


def test_unanswerable_questions_and_long_replies():
    naming = Naming()
    question = "Which river flows through the capital of the fictional country of Veldoria?"
    refusal = "That is not something I am able to tell you from what I have."
    [marked] = judge_answer_relevance([(question, refusal, "", False)], naming)
    assert marked.verdict  # a refusal is the answer to a question marked unanswerable: the screen is not asked
    # a reply longer than the model's window is read from its start (``REPLY_CHARS``), never an error
    long = "The Marrow River flows through it. " + "It is a long and winding river with many bends. " * 400
    [p] = naming.probabilities([(question, long)])
    assert p >= THRESHOLD
    # one answer at a time (a run's case) keeps the state of the system prompt and its worked examples, not of the
    # whole prompt: the next case's answer reads only its own tokens
    assert tuple(naming.scorer.header) in naming.scorer.model.states
    assert naming.probabilities([(question, long[:REPLY_CHARS] + " And then the Sava.")]) == [p]
    # the capped prompt of a CJK question and reply (about a token a character) fits the window; a text that would
    # not is cut from its end to what can be asked (read here by the tokenizer alone: a forward pass over the whole
    # window takes half a minute)
    scorer = naming.scorer
    assert len(scorer.text_tokens(prompt("河流" * 300 + "?", "马罗河流经首都。" * 150))) < scorer.room("")
    wide = "马罗河流经首都。" * 400
    assert len(scorer.text_tokens(wide)) > scorer.room("")
    cut = scorer.fit_tail(wide)
    assert cut.endswith(" ...") and wide.startswith(cut[:-4].rstrip("\ufffd"))
    assert len(scorer.text_tokens(cut)) <= scorer.room("") - MIN_PASSAGE_TOKENS


def test_golds_that_begin_like_none_are_named():
    """Gold answers of EVOUNA TQ's first 300 questions whose first token is one "NONE" could begin with ("N":
    "Nikkei", "Niger Republic"): a screen that counted such a token as NONE rejected them. Every one is accepted
    (the rules accept them too), with no context, as the judge-check controls ask."""
    from evaluations.judging.labels.questions import load_questions

    items = load_questions(FOLDER.parents[2] / "shared" / "data" / "evouna" / "TQ.jsonl.gz", limit=300)
    naming = Naming()
    n = naming.scorer.tokens("N")[0]
    golds = [(q.question, q.references[0]) for q in items if naming.scorer.tokens(q.references[0])[0] == n]
    assert len(golds) >= 3  # four: Nikkei, Niger Republic, NZ, Neville Chamberlain and Winston Churchill
    judged = judge_answer_relevance([(q, a, "", True) for q, a in golds], naming)
    assert [r.kind for r in judged] == ["relevant"] * len(golds), [(g, r.reason) for g, r in zip(golds, judged)]
