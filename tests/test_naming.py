"""The naming screen of answer relevance (``judging.grounded.naming``) on the real embedded judge model.

The sample is the first questions of ``datasets/relevance/answers_writers2`` (answers written by helper agents in
ten kinds, each labelled blind under ``datasets/relevance/RUBRIC.md``; a split the screen's probe was not fitted on,
``scripts/fit_answer_probe.py``): the expected verdicts are those labels, never the judge's. The screen's figures
over whole splits (and the held-out ones) are ``benchmarks/relevance_outside.py answer_controls``.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from evaluations.judging.basics.lexicon import stems
from evaluations.judging.correctness.embedded import VerdictCache
from evaluations.judging.grounded.answer_relevance import GENERIC, answer_relevance_batch, judge_answer_relevance
from evaluations.judging.checkers.yesno import MIN_PASSAGE_TOKENS
from evaluations.judging.grounded.naming import (OVERRULE_KEYWORDS, OVERRULES, REPLY_CHARS, Naming, Probe, Reading,
                                                 blocks, features, load_probe, prompt)

FOLDER = Path(__file__).resolve().parents[1] / "datasets" / "relevance"
QUESTIONS = 3  # the first three questions of the split: 30 answers


def _labelled(split: str = "writers2", questions: int = QUESTIONS) -> list[dict]:
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


def test_the_screen_rejects_what_the_rules_let_through_and_keeps_most_labelled_answers(judged):
    rows, _, _, rules, screened = judged
    assert len(rows) == 10 * QUESTIONS and sum(r["label"] for r in rows) >= 2 * QUESTIONS  # the golds
    for row, rule, final in zip(rows, rules, screened):
        if not rule.verdict:  # the screen reads only what the rules accept
            assert final == rule
        elif not final.verdict:
            assert final.kind == "no_answer" and "the rules had accepted it" in final.reason, final
            assert "P(answers)" in final.reason
    by_kind: dict[str, list[tuple[bool, bool, bool]]] = {}
    for row, rule, final in zip(rows, rules, screened):
        by_kind.setdefault(row["kind"], []).append((row["label"], rule.verdict, final.verdict))
    # refusals in the writer's own words, and the question given back in two wordings: the rules pass some, the
    # screen takes every refusal and most restatements (labels say none of them answers)
    assert not any(final for _, _, final in by_kind["refusal"])
    restated = by_kind["restatement_a"] + by_kind["restatement_b"]
    assert not any(label for label, _, _ in restated)
    assert sum(final for _, _, final in restated) <= 2 < sum(rule for _, rule, _ in restated)
    # the golds, in a sentence and casually: at most one of the six lost (the screen keeps about 0.9 of the relevant
    # answers the rules keep, split by split, benchmarks/NOTES.md)
    golds = by_kind["gold_sentence"] + by_kind["gold_casual"]
    assert all(label for label, _, _ in golds) and sum(final for _, _, final in golds) >= len(golds) - 1
    agree = [sum(v.verdict == r["label"] for v, r in zip(said, rows)) for said in (rules, screened)]
    assert agree[1] >= agree[0] + 5


def test_the_screen_reads_the_reply_beside_the_question_given_back(judged):
    """"When was Montreal captured? In 1760." is judged by the rules as "In 1760.", and so the screen reads it: the
    labelled golds with the question given back before them are read as the golds alone (the verdict store holds
    those readings: no model call), but for a gold whose lead-in the rules drop as an aside ("Plants: 1892 ...",
    "Honestly? Depends ..."): they are accepted as the golds are."""
    rows, cases, naming, _, screened = judged
    golds = [i for i, r in enumerate(rows) if r["label"] and len(r["answer"].split()) >= 3]
    assert len(golds) >= 4
    before = naming.scorer.calls
    after = judge_answer_relevance([(q, f"{q.strip().rstrip('?')}? {a}", c, ok) for q, a, c, ok in
                                    (cases[i] for i in golds)], Naming(cache=naming.cache))
    led = [i for i in golds if any(rows[i]["answer"].startswith(f"{w}{p}") for w in ("Plants", "Honestly")
                                   for p in ":?")]
    assert 0 < len(led) < len(golds) and naming.scorer.calls <= before + len(led)
    for i, got in zip(golds, after):
        assert got.verdict == screened[i].verdict, (rows[i]["answer"], got.reason, screened[i].reason)
    assert sum(got.verdict for got in after) >= len(golds) - 1


def test_the_screen_overrules_the_off_topic_rule_only_where_the_model_reads_an_answer():
    """Rules 3-4 (``off_topic``: MiniLM's meaning far from the question, or words the context lacks) reject casual
    golds; the screen reads an answer the rules reject as off-topic too, and accepts it at ``OVERRULES`` when it has
    at most ``OVERRULE_KEYWORDS`` keywords (a longer one is judged by its words). Two questions of ``writers2`` (not
    fitted on): the writers' short casual gold (labelled relevant) is accepted; their long one (14 keywords, labelled
    relevant too) stays rejected, the cap's cost; and the answers the rules rejected that are labelled not relevant
    stay rejected."""
    rows = [r for r in _labelled(questions=17) if r["question"].startswith(("What actions does sustainable",
                                                                             "What modern city did Khanbaliq"))]
    assert len(rows) == 20
    rules = answer_relevance_batch([(r["question"], r["answer"], "\n\n".join(r["context"]), True) for r in rows])
    rows, rules = zip(*[(r, v) for r, v in zip(rows, rules) if v.kind == "off_topic"])  # only these are asked here
    naming = Naming()
    judged = judge_answer_relevance([(r["question"], r["answer"], "\n\n".join(r["context"]), True) for r in rows],
                                    naming)
    casual = [i for i, r in enumerate(rows) if r["kind"] == "gold_casual"]
    assert [rules[i].kind for i in casual] == ["off_topic"] * 2 and all(rows[i]["label"] for i in casual)
    size = {i: len(stems(rows[i]["answer"]) - GENERIC) for i in casual}
    assert sorted(size.values())[0] <= OVERRULE_KEYWORDS < sorted(size.values())[1]
    read = naming.probabilities([(rows[i]["question"], rows[i]["answer"]) for i in casual])
    assert min(read) >= OVERRULES  # the model reads an answer in both
    for i in casual:
        if size[i] <= OVERRULE_KEYWORDS:
            assert judged[i].verdict and "overruling off_topic" in judged[i].reason, judged[i]
        else:
            assert judged[i] == rules[i]
    # what the rules rejected as off-topic and the labels say is not relevant stays rejected (the writers'
    # off-topic sentences among them)
    kept = [(r, v) for r, v in zip(rows, judged) if not r["label"]]
    assert {r["kind"] for r, _ in kept} >= {"off_topic"}
    assert all(v.kind == "off_topic" for _, v in kept), [(r["answer"], v.reason) for r, v in kept]


def test_a_re_run_reads_the_verdict_store_and_calls_no_model(judged):
    _, cases, naming, _, screened = judged
    before = naming.scorer.calls
    fresh = Naming(cache=naming.cache)
    again = judge_answer_relevance(cases, fresh)
    assert again == screened and naming.scorer.calls == before
    assert not fresh.loaded  # every key is worked out without the model: it is not even loaded
    # without a store the model is asked again, and says the same up to the rounding of batched arithmetic (the
    # stored readings were made 30 side by side, these 3): the same verdicts, P(answers) within 3 in logit (60
    # answers of writers2 read 60 side by side and one by one: median 0.68, largest 2.3, no verdict changed)
    pairs = [(q, a) for q, a, _, _ in cases[:3]]
    fresh = Naming().probabilities(pairs)
    assert naming.scorer.calls > before
    for p, q in zip(fresh, naming.probabilities(pairs)):
        assert abs(math.log(p / (1 - p)) - math.log(q / (1 - q))) < 3.0, (p, q)
        assert (p >= naming.threshold) == (q >= naming.threshold), (p, q)


def test_unanswerable_questions_and_long_replies():
    naming = Naming()
    question = "Which river flows through the capital of the fictional country of Veldoria?"
    refusal = "That is not something I am able to tell you from what I have."
    [marked] = judge_answer_relevance([(question, refusal, "", False)], naming)
    assert marked.verdict  # a refusal is the answer to a question marked unanswerable: the screen is not asked
    # a reply longer than the model's window is read from its start (``REPLY_CHARS``), never an error: the same
    # reading as its first REPLY_CHARS characters
    long = "The Marrow River flows through it. " + "It is a long and winding river with many bends. " * 400
    assert prompt(question, long) == prompt(question, long[:REPLY_CHARS])
    [p] = naming.probabilities([(question, long)])
    assert 0 < p < 1
    # one answer at a time (a run's case) keeps the state of the system prompt and its worked examples, not of the
    # whole prompt: the next case's answer reads only its own tokens
    assert tuple(naming.scorer.header) in naming.scorer.model.states
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


def test_a_long_reply_is_read_by_the_long_replies_probe(tmp_path):
    """Read whole by the probe of short replies, a reply of 4-8 sentences reads as more of an answer than a short
    one, whatever it says; a reply of more than ``LONG_SENTENCES`` sentences is read by the file's ``long`` probe
    (fitted with long replies) and held to its threshold. Four replies to the first question of
    ``datasets/relevance/answers_long`` (long replies written by helper agents, labelled blind; each costs the 1.5B
    model seconds): the labelled golds (the answer first, the answer last) are accepted; the verdict on each reply
    the rules accept (a restatement and a reply about other things in the passage beside the golds) follows the
    long probe's threshold, and what it rejects says so."""
    from evaluations.judging.grounded.naming import LONG_SENTENCES, is_long

    kinds = ("gold_first", "gold_end", "restatement_long", "context_other_long")
    rows = [r for r in _labelled("long", questions=1) if r["kind"] in kinds]
    naming = Naming(cache=VerdictCache(tmp_path / "store.sqlite"))
    long = naming.probe.params.long
    assert long is not None and long.threshold > naming.threshold
    assert len(rows) == len(kinds) and all(is_long(r["answer"]) for r in rows)
    assert naming.threshold_for(rows[0]["answer"]) == long.threshold
    assert naming.threshold_for(" ".join(["The bridge opened in 1932."] * LONG_SENTENCES)) == naming.threshold
    cases = [(r["question"], r["answer"], "\n\n".join(r["context"]), True) for r in rows]
    rules, judged = answer_relevance_batch(cases), judge_answer_relevance(cases, naming)
    assert [v.verdict for r, v in zip(rows, judged) if r["label"]] == [True, True]
    read = [(r, v) for r, v, rule in zip(rows, judged, rules) if rule.verdict]
    calls = naming.scorer.calls
    p = naming.probabilities([(r["question"], r["answer"]) for r, _ in read])  # from the verdict store
    assert naming.scorer.calls == calls and len(read) >= 3
    for (_, v), q in zip(read, p):
        assert v.verdict == (q >= long.threshold), (q, v)
        if not v.verdict:
            assert f"< {long.threshold:.3g})" in v.reason
    assert any(not v.verdict for r, v in read if not r["label"])


def test_golds_without_a_context_that_once_read_as_none_are_accepted():
    """Gold answers of EVOUNA TQ's first 300 questions whose first token is one "NONE" could begin with ("N":
    "Nikkei", "Niger Republic"): the screen's first prompt (copy the answer or write NONE) rejected them when it
    counted such a token as NONE. Every one is accepted (the rules accept them too), with no context, as the
    judge-check controls ask."""
    from evaluations.judging.labels.questions import load_questions

    items = load_questions(FOLDER.parents[2] / "shared" / "data" / "evouna" / "TQ.jsonl.gz", limit=300)
    naming = Naming()
    n = naming.scorer.tokens("N")[0]
    golds = [(q.question, q.references[0]) for q in items if naming.scorer.tokens(q.references[0])[0] == n]
    assert len(golds) >= 3  # four: Nikkei, Niger Republic, NZ, Neville Chamberlain and Winston Churchill
    judged = judge_answer_relevance([(q, a, "", True) for q, a in golds], naming)
    assert [r.kind for r in judged] == ["relevant"] * len(golds), [(g, r.reason) for g, r in zip(golds, judged)]


def test_the_probe_is_the_logistic_model_its_file_states():
    """``Probe.probability`` against scikit-learn's ``predict_proba`` with the shipped file's parameters (the oracle),
    on inputs spread around the file's means."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    probe = load_probe()
    p = probe.params
    mean, scale = np.asarray(p.mean), np.asarray(p.scale)
    x = mean + np.random.default_rng(0).normal(size=(6, len(mean))) * scale
    oracle = LogisticRegression()
    oracle.classes_, oracle.coef_, oracle.intercept_ = np.array([0, 1]), np.array([p.coef]), np.array([p.intercept])
    expected = oracle.predict_proba((x - mean) / scale)[:, 1]
    assert np.allclose([p.probability(row)[0] for row in x], expected, atol=1e-9)
    assert len(set(np.round(expected, 3))) > 1  # the inputs reach different probabilities
    # the inputs of one reading: the blocks the probe reads (its last hidden state, inner layers' outputs) in the
    # order named, then logit P(yes) (clipped as every fitted judge clips it)
    read = Reading(0.5, np.ones(2), {16: np.full(2, 3.0), 20: np.full(2, 5.0)})
    assert features(read).tolist() == [1.0, 1.0, 0.0]
    assert features(read, ("l20", "l16")).tolist() == [5.0, 5.0, 3.0, 3.0, 0.0]
    assert abs(features(Reading(1.0, np.ones(1), {}))[-1] - np.log(0.9999 / 0.0001)) < 1e-9
    assert probe.layers and all(f"l{k}" in blocks(p.features) for k in probe.layers)


def test_a_bad_probe_file_is_one_clear_error(tmp_path):
    from evaluations.core.errors import EvaluationsError
    from evaluations.judging.basics.shipped import shipped_path
    from evaluations.judging.grounded.naming import PROBE_FILE

    doc = json.loads(shipped_path(PROBE_FILE).read_text())
    params = doc["params"]
    bad = {
        "missing.json": None,
        "not_json.json": "{not json",
        "short.json": {**params, "coef": params["coef"][:-1]},
        "order.json": {**params, "features": params["features"][::-1]},
        "scale.json": {**params, "scale": [0.0] + params["scale"][1:]},
        "no_scorer.json": {k: v for k, v in params.items() if k != "scorer"},
    }
    for name, content in bad.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content if isinstance(content, str) else json.dumps({"params": content}))
        with pytest.raises(EvaluationsError) as caught:
            load_probe(path)
        assert caught.value.where and name in caught.value.where, name
        assert caught.value.fix, name
    # a probe fitted on another model's (or prompt's) hidden states is refused before any pair is read
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"params": {**params, "scorer": "0123456789abcdef"}}))
    naming = Naming(probe_path=other)
    assert isinstance(naming.probe, Probe)
    with pytest.raises(EvaluationsError) as caught:
        naming.probabilities([("When did it open?", "In 1998.")])
    assert "another judge model or prompt" in caught.value.message and "EVALUATIONS_JUDGE_GGUF" in caught.value.fix


def test_a_llama_cpp_without_ggml_is_refused_before_any_case(monkeypatch, tmp_path, cli):
    """The screen's probe reads inner layers of the judge model (through ggml's library inside llama-cpp-python):
    where that library is missing, a run asking for answer relevance stops at start-up with one error naming the
    probe's file, the layers and the fix, exit 2, before any case is judged; a run without the reference-free
    judges goes on."""
    from evaluations.core.errors import EvaluationsError
    from evaluations.models import llamacpp

    assert llamacpp.layers_readable() and Naming().probe.layers  # this install can, and the shipped probe does
    monkeypatch.setattr(llamacpp, "_ggml_base", lambda: None)
    with pytest.raises(EvaluationsError) as caught:
        Naming().check_model()
    assert "ggml" in caught.value.message and "answer_relevance_probe.json" in caught.value.where
    assert "llama-cpp-python" in caught.value.fix
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"query_id": "q1", "query": "When did the bridge open?", "answer": "In 1932.",
                               "retrieved": [{"id": "d1", "text": "The bridge opened in 1932."}]}) + "\n")
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "answer_relevance")
    code, out, err = cli(["score", str(log), "--format", "log", "--json"])
    assert code == 2 and "ggml" in err and "Traceback" not in err and out == ""
    code, out, err = cli(["score", str(log), "--format", "log", "--json", "--no-reference-free"])
    assert code == 0, err
