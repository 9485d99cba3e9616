"""The context relevance judge on real SciFact data: qrels-relevant abstracts accepted, random ones rejected.

Expected labels come from the SciFact qrels, read with gzip/json (``tests/judge_samples.py``, not through the
project's loaders); the claims are a seeded sample of test claims that are NOT in the labelled set the shipped
parameters were fitted on. precision@k and the first relevant rank are recomputed by hand from the chunk verdicts.

The model is checked here on small fixed samples; the full measurements are sections of
``benchmarks/judge_accuracy.py`` (results in ``benchmarks/results/judge_accuracy.json``).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import multihop_probe
from judge_samples import read_jsonl_gz, scifact_pairs

from evaluations.core.errors import EvaluationsError
from evaluations.judging.grounded.context_relevance import (
    FEATURES, SET_FEATURES, SET_SIGNALS, ContextParams, SetParams, features, judge_context_relevance, params,
    set_features, set_params, set_signal,
)
from evaluations.judging.basics.passages import Passage

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = 12  # the seeded draw (benchmark section context_relevance_scifact judges all 12)
SAMPLE = 1  # the first claims of that draw judged here (an abstract is ~300 tokens: ~5 s of the model each)
# qrels-relevant abstracts judged relevant: low on purpose. SciFact's qrels are the claims' cited abstracts; read by
# hand, only 37 of 60 of them hold evidence on the claim (datasets/labels/CONTEXT_RUBRIC.md), and the judge's
# recall on SciFact is below that (on the 12: 5 accepted when first measured, 4 in the benchmark's last run; 12 of
# 12 random abstracts rejected). On the sample of 1: its qrels abstract accepted (4/12 of 1 rounds up to 1), its
# random abstract rejected (11/12 of 1 rounds up to 1)
MIN_ACCEPTED = 4 / 12
MIN_REJECTED = 11 / 12  # random abstracts judged not relevant


@pytest.fixture(scope="module")
def scifact_cases():
    """(claim, [passages], expected relevance per passage) for the first SAMPLE of a seeded draw of QUESTIONS held-out
    test claims (``judge_samples.scifact_pairs``: the draw ``benchmarks/judge_accuracy.py context_relevance_scifact``
    judges whole)."""
    return scifact_pairs(QUESTIONS)[:SAMPLE]


def test_relevant_abstracts_accepted_random_rejected_and_cached(scifact_cases, tmp_path):
    """The first held-out SciFact claim of the draw with its qrels abstract and a random one: the qrels abstract
    accepted, the random one rejected, a re-run answered from the cache. The 12 claims of the draw:
    ``benchmarks/judge_accuracy.py context_relevance_scifact``."""
    from evaluations.judging.correctness.embedded import VerdictCache

    cache = VerdictCache(tmp_path / "verdicts.sqlite")
    accepted, rejected, n_relevant, n_random = 0, 0, 0, 0
    fitted = params()
    for claim, passages, expected in scifact_cases:
        verdict = judge_context_relevance(claim, passages, cache=cache)
        assert verdict.applicable and verdict.model_calls == len(passages)
        assert [c.rank for c in verdict.chunks] == [1, 2] and [c.id for c in verdict.chunks] == [p.id for p in passages]
        flags = [c.p >= fitted.threshold_for(claim) or c.joined for c in verdict.chunks]
        assert [c.relevant for c in verdict.chunks] == flags
        # precision@k and the first relevant rank, by hand from the chunk verdicts
        assert verdict.score == pytest.approx(sum(flags) / len(flags))
        assert verdict.first_relevant_rank == next((i + 1 for i, f in enumerate(flags) if f), None)
        for flag, relevant in zip(flags, expected):
            n_relevant += relevant
            n_random += not relevant
            accepted += relevant and flag
            rejected += (not relevant) and not flag
        again = judge_context_relevance(claim, passages, cache=cache)
        assert again.model_calls == 0 and again.chunks == verdict.chunks
    assert n_relevant == n_random == SAMPLE
    assert accepted / n_relevant >= MIN_ACCEPTED, (accepted, n_relevant)
    assert rejected / n_random >= MIN_REJECTED, (rejected, n_random)


def test_no_passage_is_not_applicable():
    verdict = judge_context_relevance("Who wrote Hamlet?", [])
    assert (verdict.applicable, verdict.score, verdict.first_relevant_rank, verdict.chunks, verdict.model_calls) == (
        False, None, None, [], 0)


def test_lexical_signals_by_hand():
    q = "When did the Eiffel Tower open?"
    passage = "The Eiffel Tower in Paris opened to the public in 1889. It is made of iron."
    row = dict(zip(FEATURES, features(q, passage, 0.5)))
    # informative terms of q: eiffel, tower, open (stems eiffe, tower, open) -> all three in the passage
    assert row["term_coverage"] == 1.0
    # question pairs (eiffe, tower), (tower, open); passage terms eiffe tower paris open ...: adjacent, one apart
    assert row["phrase_coverage"] == 1.0
    # BM25 saturation, by hand: tf = 1 for each term, |passage terms| = 8 (eiffe tower paris open publi 1889 made
    # iron), norm = 1.2 (0.25 + 0.75 * 8 / 200); each term 2.2 / (1 + norm) / 2.2
    norm = 1.2 * (0.25 + 0.75 * 8 / 200)
    assert row["tf_saturation"] == pytest.approx(1 / (1 + norm))
    assert row["answer_type"] == 1.0  # a "when" question, a year near "opened"
    assert row["llm_logit"] == 0.0
    off = dict(zip(FEATURES, features(q, "The tower of Pisa leans because of soft ground.", 0.5)))
    assert off["term_coverage"] == pytest.approx(1 / 3) and off["answer_type"] == -1.0
    assert off["phrase_coverage"] == 0.0
    assert dict(zip(FEATURES, features("Is aspirin effective?", passage, 0.5)))["answer_type"] == 0.0


def test_shipped_parameters_load_and_bad_file_names_it(tmp_path):
    fitted = params()
    assert isinstance(fitted, ContextParams) and fitted.features == list(FEATURES)
    assert "{question}" in fitted.wording and 0.0 < fitted.threshold < 1.0
    bad = tmp_path / "context_relevance.json"
    bad.write_text('{"params": {"wording": 1}}')
    with pytest.raises(EvaluationsError) as err:
        params(bad)
    assert str(bad) in str(err.value.where)


def test_the_only_passage_naming_one_of_the_questions_names_is_needed_by_hand():
    """A question naming two or more names needs a passage about each: the only passage naming one of them is
    relevant while another passage names another (``sole_sources``); not when one passage names them all, when the
    question names one, or when there is one passage."""
    from evaluations.judging.grounded.context_relevance import sole_sources

    comparison = "Which is the older magazine, Hearth & Field or The Meridian Review?"
    hearth = "Hearth & Field is an American home and gardening magazine first published in 1952."
    meridian = "The Meridian Review was an American literary quarterly published from 1921 to 1966."
    unrelated = "The river rises near the village and flows north."
    assert sole_sources(comparison, [hearth, meridian]) == [True, True]
    assert sole_sources(comparison, [hearth, unrelated, meridian]) == [True, False, True]
    both = f"{hearth} It outlived The Meridian Review by decades."
    assert sole_sources(comparison, [both, meridian]) == [False, False]  # one passage names every name
    assert sole_sources(comparison, [hearth]) == [False]
    assert sole_sources(comparison, [hearth, unrelated]) == [False, False]  # no other name elsewhere
    # two names joined by "and"; a plural and a hyphen are the same name
    polar = "Were the Calloway-Hines brothers and the Huguenot settlers both in Lyon?"
    assert sole_sources(polar, ["The Calloway Hines family moved west.", "Huguenots settled in the town."]) == [
        True, True]
    assert sole_sources("When did the Eiffel Tower open?", [hearth, "The Eiffel Tower opened in 1889."]) == [
        False, False]  # one name: a single-hop question
    # "for" inside a title: "First for Women" is one name, so the words "first" and "women" in the other
    # passage do not take it for that magazine
    hotpot = "Which magazine was started first, Arthur's Magazine or First for Women?"
    arthur = "Arthur's Magazine was an American literary periodical, first published in 1844, read by women and men."
    first = "First for Women is a magazine published by Bauer Media Group in the USA since 1989."
    assert sole_sources(hotpot, [arthur, first]) == [True, True]
    # a nationality qualifies, it names no entity: a passage about Dutch painting is not the "Dutch" source of a
    # question about one treaty, and a question about one magazine is single-hop whatever its adjective
    treaty = "When did Britain sign a treaty with the Dutch?"
    signed = "The treaty between Britain and the Netherlands was signed at Westminster in 1674."
    painters = "Dutch painters flourished in the 17th century."
    assert sole_sources(treaty, [signed, painters]) == [False, False]
    assert sole_sources("Who founded the French magazine Hearth & Field?", [hearth, painters]) == [False, False]
    # inside a name an adjective stays: the French Revolution and the American Civil War are two names
    wars = "Which came first, the French Revolution or the American Civil War?"
    assert sole_sources(wars, ["The French Revolution began in 1789.", "The American Civil War began in 1861."]) == [
        True, True]


def test_a_sole_source_passage_is_relevant_whatever_the_model_says():
    """The passage the model (here one that says no to everything) calls not needed is relevant as the only one
    naming a compared name; its P stays the model's, and the record says why."""
    class No:
        id = "always-no"

        def probability(self, shared: str, tail: str) -> tuple[float, float]:
            return 0.0, 1.0

    question = "Who was born first, Lavinia Osterholt or Bertram Calloway-Hines?"
    passages = [Passage(id="a", text="Lavinia Osterholt (14 June 1902 – 3 March 1988) was a Dutch painter."),
                Passage(id="b", text="Bertram Calloway-Hines (2 November 1899 – 1975) was an English architect."),
                Passage(id="c", text="The river rises near the village and flows north.")]
    verdict = judge_context_relevance(question, passages, scorer=No())
    fitted = params()
    assert all(c.p < fitted.threshold for c in verdict.chunks)
    assert [(c.relevant, c.sole_source) for c in verdict.chunks] == [(True, True), (True, True), (False, False)]
    assert verdict.score == pytest.approx(2 / 3) and verdict.first_relevant_rank == 1


def test_comparison_and_yes_no_passages_of_the_multi_hop_probe_are_relevant(tmp_path):
    """The multi-hop probe's comparison and yes/no questions (datasets/labels/multihop_faithfulness.jsonl,
    MULTIHOP.md): both passages are needed, one per compared name. On all 25 the model alone called 15 of their 50
    passages relevant; with the sole-source rule at least 70% are (``benchmarks/judge_accuracy.py
    context_relevance_multihop``). Here a fixed sample: the first comparison and the first yes/no question, at
    least 3 of their 4 passages relevant (70% of 4 rounds up to 3; each passage is a ~2 s pass of the model)."""
    from evaluations.judging.correctness.embedded import VerdictCache

    questions = {r["query"]: (r["type"], r["context"]) for r in multihop_probe()
                 if r["type"] in ("comparison", "polar")}
    assert len(questions) == 25
    sample = [(q, texts) for q, (kind, texts) in questions.items() if kind == "comparison"][:1] + \
        [(q, texts) for q, (kind, texts) in questions.items() if kind == "polar"][:1]
    assert len(sample) == 2 and all(len(texts) == 2 for _, texts in sample)
    cache = VerdictCache(tmp_path / "v.sqlite")
    relevant = sum(c.relevant for q, texts in sample
                   for c in judge_context_relevance(q, [Passage(id=f"p{i}", text=t) for i, t in enumerate(texts)],
                                                    cache=cache).chunks)
    assert relevant >= 0.7 * 4, relevant


def same_article_sets(seed: int) -> list[tuple[str, list[str]]]:
    """SQuAD 2.0's answerable questions in file order, each with its own paragraph first and two other paragraphs of
    its article (shuffled with ``seed``)."""
    rows = read_jsonl_gz(REPO.parent / "shared" / "data" / "squad2_dev_cs224n" / "questions.jsonl.gz")
    paragraphs = {r["paragraph_id"]: (r["title"], r["context"]) for r in rows}
    by_title: dict[str, list[str]] = {}
    for pid, (title, _) in paragraphs.items():
        by_title.setdefault(title, []).append(pid)
    rng = random.Random(seed)
    out = []
    for r in rows:
        if not r["answers"]["text"]:
            continue
        others = [p for p in by_title[r["title"]] if p != r["paragraph_id"]]
        rng.shuffle(others)
        out.append((r["question"], [paragraphs[p][1] for p in [r["paragraph_id"], *others[:2]]]))
    return out


def test_other_paragraphs_of_the_same_article_are_rarely_sole_sources():
    """SQuAD 2.0's answerable questions, each with two other paragraphs of its article beside its own (seeded): the
    other paragraphs are not needed, and the sole-source rule marks at most 0.5% of them (measured: 7 of 5,820)."""
    from evaluations.judging.grounded.context_relevance import sole_sources

    others_n, marked = 0, 0
    for question, texts in same_article_sets(seed=0):
        others_n += len(texts) - 1
        marked += sum(sole_sources(question, texts)[1:])
    assert others_n > 5000
    assert marked <= 0.005 * others_n, (marked, others_n)


class Scripted:
    """A yes/no scorer whose P(yes) is set per passage (the first text of ``yes`` found in the prompt's passage)."""

    id = "scripted"

    def __init__(self, yes: dict[str, float], default: float = 0.05):
        self.yes, self.default, self.calls = yes, default, 0

    def probability(self, shared: str, tail: str) -> tuple[float, float]:
        self.calls += 1
        return next((p for text, p in self.yes.items() if text in shared), self.default), 1.0


BRIDGE_Q = "Which studio produced the film directed by the man who wrote Harbour Lights?"
ANCHOR = "Harbour Lights is a 1994 novel by Tomas Everdene, who later directed the film Grey Meridian."
BRIDGE = "Grey Meridian (1999) is a drama film produced by Calder Street Studios."
MENTIONED = "Tomas Everdene (born 1951) is a Welsh writer and director."
DISTRACTOR = "Harbourside is a 2003 film produced by Westway Pictures about a lighthouse keeper."


def test_set_features_by_hand():
    """The set stage's signals of a made-up bridge set, by hand from the module docstring: the anchor names the
    bridge passage's subject (Grey Meridian: 2 of 2 words) and the question's name (Harbour Lights)."""
    texts = [ANCHOR, BRIDGE, MENTIONED, DISTRACTOR]
    p1, relevant = [0.9, 0.2, 0.3, 0.25], [True, False, False, False]
    rows = [dict(zip(SET_FEATURES, row)) for row in set_features(BRIDGE_Q, texts, p1, relevant)]
    assert rows[0]["p1_logit"] == pytest.approx(math.log(0.9 / 0.1))
    # the question's one name, (harbour, light): the anchor holds both words; the distractor neither ("harbourside")
    assert [r["name_share"] for r in rows] == [1.0, 0.0, 0.0, 0.0]
    assert [r["only_holder"] for r in rows] == [1.0, 0.0, 0.0, 0.0]
    # linked: p1 of the relevant anchor x share of the passage's subject words it holds (grey, meridian: 2 of 2;
    # tomas, everdene: 2 of 2; the distractor's subject "Harbourside": 0 of 1); the anchor links to no relevant other
    assert [r["linked"] for r in rows] == pytest.approx([0.0, 0.9, 0.9, 0.0])
    # mentions: the passage holds words of the relevant anchor's subject (harbour, light less the question's: none)
    assert [r["mentions"] for r in rows] == [0.0, 0.0, 0.0, 0.0]
    # with no passage relevant there is nothing to link to
    assert all(r[3] == 0.0 and r[4] == 0.0 for r in set_features(BRIDGE_Q, texts, p1, [False] * 4))
    # a claim's capitalised first word is no name when the passages write it in lower case; a name stays one
    cells = ["Methionine restriction in yeast cells extends life span.", "Caloric restriction and ageing in mice."]
    assert set_features("Cells undergoing methionine restriction live longer.", cells, [0.2, 0.2],
                        [False, False])[:, 1].tolist() == [0.0, 0.0]
    pilot = ["Lookwell is a 1991 television pilot.", "Conan O'Brien wrote for television."]
    assert set_features("Lookwell was written by which comedian?", pilot, [0.2, 0.2],
                        [False, False])[:, 1].tolist() == [1.0, 0.0]


def test_pair_gain_and_pronoun_cover_by_hand():
    """The two signals of the bridge's hops, by hand. The question's informative terms are band, billy, latham, join
    and 1974 (5; "what", "did", "in" are stopwords). "He then joined The Dillards in 1974." holds join and 1974
    (2/5) and opens with a pronoun; "The Dillards are ... band ..." holds band (1/5) and its subject, Dillards, is
    named by the first: read together they hold 3/5, a gain of 3/5 - 2/5 over the better alone, for both. The
    distractor holds latham (1/5) and is tied to neither; an opening phrase before the pronoun still counts."""
    question = "What band did Billy Latham join in 1974?"
    texts = ["He then joined The Dillards in 1974.", "The Dillards are an American bluegrass band from Salem, Missouri.",
             "Latham Park is a football ground in Newtown.", "In 1974, they joined a tour of Europe."]
    rows = [dict(zip(SET_FEATURES, row)) for row in set_features(question, texts, [0.2] * 4, [False] * 4)]
    assert [r["pair_gain"] for r in rows] == pytest.approx([0.2, 0.2, 0.0, 0.0])
    assert [r["pronoun_cover"] for r in rows] == pytest.approx([0.4, 0.0, 0.0, 0.4])


LATHAM = ["He then joined The Dillards in 1974.", "The Dillards are an American bluegrass band from Salem, Missouri.",
          "Latham Park is a football ground in Newtown.", "In 1974, they joined a tour of Europe."]


def test_gain_over_the_relevant_passages_by_hand():
    """The weight of a joining, by hand, on the set above with the first passage called relevant: the first alone
    holds join and 1974 (2/5) and no other passage is relevant (0.4); the Dillards band passage adds band (3/5 -
    2/5), the football ground adds latham (3/5 - 2/5), the tour in 1974 adds nothing the first does not hold (0). It
    is no set signal: a passage tied to nothing is not joined on it."""
    question = "What band did Billy Latham join in 1974?"
    texts = LATHAM
    x = set_features(question, texts, [0.6, 0.3, 0.2, 0.25], [True, False, False, False])
    rows = [dict(zip(SET_FEATURES, row)) for row in x]
    assert [r["gain_over_relevant"] for r in rows] == pytest.approx([0.4, 0.2, 0.2, 0.0])
    assert "gain_over_relevant" not in SET_SIGNALS and "p1_logit" not in SET_SIGNALS
    lone = x.copy()
    lone[:, [SET_FEATURES.index(f) for f in SET_SIGNALS]] = 0.0
    assert not set_signal(lone).any() and set_signal(x)[1]


def test_the_set_stage_joins_a_bridge_passage_without_a_model_call():
    """A model that says yes only to the anchor: the bridge passage (about the film the anchor names) is joined
    by the set stage with the shipped parameters, the distractor is not, and the stage makes no model call."""
    stage = set_params()
    assert isinstance(stage, SetParams) and stage.features == list(SET_FEATURES) and 0 < stage.threshold < 1
    scorer = Scripted({ANCHOR: 0.97, BRIDGE: 0.3})
    passages = [Passage(id=str(i), text=t) for i, t in enumerate([DISTRACTOR, BRIDGE, ANCHOR])]
    verdict = judge_context_relevance(BRIDGE_Q, passages, scorer=scorer)
    alone = judge_context_relevance(BRIDGE_Q, passages, scorer=scorer, set_stage=False)
    assert scorer.calls == 6 and verdict.model_calls == alone.model_calls == 3
    assert [c.relevant for c in alone.chunks] == [False, False, True]
    assert [(c.relevant, c.joined) for c in verdict.chunks] == [(False, False), (True, True), (True, False)]
    assert verdict.chunks[1].p_set >= stage.threshold and verdict.chunks[1].p == alone.chunks[1].p
    assert verdict.score == pytest.approx(2 / 3) and verdict.first_relevant_rank == 2


def test_the_set_stage_rarely_joins_other_paragraphs_of_the_same_article():
    """SQuAD 2.0 (real questions and paragraphs): each answerable question with its own paragraph (the model says
    yes) and two other paragraphs of its article (it says no). Same-article paragraphs share the article's names,
    the hardest case for linking through names; the set stage joins at most 5% of them (the first 300 questions)."""
    others, joined = 0, 0
    for question, texts in same_article_sets(seed=1)[:300]:
        verdict = judge_context_relevance(question, [Passage(id=str(i), text=t) for i, t in enumerate(texts)],
                                          scorer=Scripted({texts[0]: 0.95}))
        others += len(texts) - 1
        joined += sum(c.joined for c in verdict.chunks[1:])
    assert others > 500
    assert joined / others <= 0.05, (joined, others)


def test_a_claim_or_keywords_are_judged_passage_by_passage():
    """Written for this test: the cross-passage rules are for a query that asks. The same content as a claim to
    check, or as keywords, gets neither the sole-source rule nor the set stage: each passage is evidence on its own
    (on SciFact's held-out claims the two rules had joined 19 top-5 abstracts, 3 of them in the qrels)."""
    from evaluations.judging.basics.question_forms import asks

    class No:
        id = "always-no"

        def probability(self, shared: str, tail: str) -> tuple[float, float]:
            return 0.0, 1.0

    passages = [Passage(id="a", text="Lavinia Osterholt (14 June 1902 – 3 March 1988) was a Dutch painter."),
                Passage(id="b", text="Bertram Calloway-Hines (2 November 1899 – 1975) was an English architect.")]
    question = "Who was born first, Lavinia Osterholt or Bertram Calloway-Hines?"
    for query in (question, "Lavinia Osterholt was born before Bertram Calloway-Hines.",
                  "Lavinia Osterholt Bertram Calloway-Hines birth"):
        verdict = judge_context_relevance(query, passages, scorer=No())
        assert [c.sole_source for c in verdict.chunks] == [asks(query)] * 2, query
    assert asks(question) and asks("what Dutch painter was born in 1902") and asks("List Dutch painters.")
    assert not asks("Lavinia Osterholt was born before Bertram Calloway-Hines.")
    scorer = Scripted({ANCHOR: 0.97, BRIDGE: 0.3})
    bridged = [Passage(id=str(i), text=t) for i, t in enumerate([DISTRACTOR, BRIDGE, ANCHOR])]
    assert judge_context_relevance(BRIDGE_Q, bridged, scorer=scorer).chunks[1].joined  # the question: joined
    claim = "Calder Street Studios produced the film directed by the man who wrote Harbour Lights."
    assert not asks(claim)
    assert [c.relevant for c in judge_context_relevance(claim, bridged, scorer=scorer).chunks] == [False, False, True]


def test_a_claim_is_held_to_the_claim_threshold_and_a_question_to_the_passage_threshold():
    """The shipped file holds a threshold for queries that ask nothing (fitted on the read SciFact design pairs);
    a question keeps the passage model's. By hand: with a claim threshold of 0 every passage of a claim is relevant,
    none of the same passages asked as a question (a model that says no)."""
    from evaluations.judging.grounded.context_relevance import ContextParams

    class No:
        id = "always-no"

        def probability(self, shared: str, tail: str) -> tuple[float, float]:
            return 0.0, 1.0

    shipped = params()
    assert shipped.claim_threshold is not None and shipped.threshold < shipped.claim_threshold < 1
    assert shipped.threshold_for("Does aspirin lower fever?") == shipped.threshold
    assert shipped.threshold_for("Aspirin lowers fever in children.") == shipped.claim_threshold
    assert ContextParams(**(shipped.model_dump() | {"claim_threshold": None})).threshold_for("Aspirin lowers fever.") \
        == shipped.threshold
    lenient = ContextParams(**(shipped.model_dump() | {"claim_threshold": 0.0}))
    passages = [Passage(id="a", text="Aspirin is a salicylate used to reduce fever and pain."),
                Passage(id="b", text="The river rises near the village and flows north.")]
    claim = judge_context_relevance("Aspirin lowers fever in children.", passages, scorer=No(), params=lenient)
    question = judge_context_relevance("Does aspirin lower fever in children?", passages, scorer=No(), params=lenient)
    assert [c.relevant for c in claim.chunks] == [True, True]
    assert [c.relevant for c in question.chunks] == [False, False]


def test_each_wording_is_asked_under_its_own_system_prompt_whatever_scorer_a_run_passes(passage_scorer, tmp_path):
    """A run hands the judge the embedded checker made for faithfulness (the passage system prompt). The "short"
    wording (its instruction in ``RELEVANCE_SYSTEM``) must still be asked under its own system prompt, on the same
    loaded model: the same P(yes) as when the judge loads its scorer itself. A served checker is left as it is."""
    from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, for_system
    from evaluations.judging.grounded.context_relevance import RELEVANCE_SYSTEM, WORDINGS, ask, system_for

    assert system_for(WORDINGS["short"]) == RELEVANCE_SYSTEM and system_for(WORDINGS["evidence"]) == PASSAGE_SYSTEM
    moved = for_system(passage_scorer, RELEVANCE_SYSTEM)
    assert moved.system == RELEVANCE_SYSTEM and moved.model is passage_scorer.model and moved.id != passage_scorer.id
    assert for_system(passage_scorer, PASSAGE_SYSTEM) is passage_scorer

    class Served:  # any checker that is not the embedded scorer
        system = PASSAGE_SYSTEM

    served = Served()
    assert for_system(served, RELEVANCE_SYSTEM) is served
    question = "Where was Marie Curie born?"
    passage = "Marie Curie was born in Warsaw, then part of the Russian Empire, in 1867."
    from evaluations.judging.correctness.embedded import VerdictCache

    cache = VerdictCache(tmp_path / "v.sqlite")
    given, called = ask(question, passage, WORDINGS["short"], scorer=passage_scorer, cache=cache)
    own, again = ask(question, passage, WORDINGS["short"], cache=cache)  # the judge's own scorer: the same key
    assert called and not again and given == own and given > 0.5


def test_a_questions_passage_in_a_set_is_held_to_the_set_stages_passage_threshold():
    """The shipped set stage carries a passage threshold below the pairs' one (fitted with it on whole design sets).
    By hand, with a stage whose passage threshold is 0: every passage of a question asked in a set of two is
    relevant, a passage asked alone and the passages of a claim keep the pairs' and the claim's thresholds (a model
    that says no to everything); with no passage threshold the set keeps the pairs' threshold."""
    from evaluations.judging.grounded.context_relevance import SetStage

    class No:
        id = "always-no"

        def probability(self, shared: str, tail: str) -> tuple[float, float]:
            return 0.0, 1.0

    shipped = set_params()
    assert isinstance(shipped, SetStage) and 0.3 <= shipped.passage_threshold < params().threshold
    lenient = SetStage(**(shipped.model_dump() | {"passage_threshold": 0.0}))
    none = SetStage(**(shipped.model_dump() | {"passage_threshold": None}))
    passages = [Passage(id="a", text="Aspirin is a salicylate used to reduce fever and pain."),
                Passage(id="b", text="The river rises near the village and flows north.")]
    question, claim = "Does aspirin lower fever in children?", "Aspirin lowers fever in children."
    assert [c.relevant for c in judge_context_relevance(question, passages, scorer=No(), set_stage=lenient).chunks] \
        == [True, True]
    alone = judge_context_relevance(question, passages[:1], scorer=No(), set_stage=lenient)
    assert [c.relevant for c in alone.chunks] == [False]
    assert [c.relevant for c in judge_context_relevance(claim, passages, scorer=No(), set_stage=lenient).chunks] \
        == [False, False]
    assert [c.relevant for c in judge_context_relevance(question, passages, scorer=No(), set_stage=none).chunks] \
        == [False, False]


def test_a_set_is_read_side_by_side_in_one_pass_with_each_passages_own_probability(tmp_path):
    """The passages of a retrieved set (a HotpotQA question of the design split, read with gzip/json) are read side
    by side in one decode of the embedded model, each in a sequence of its own after the system prompt: the P(yes)
    of each is the one it gets read alone, up to the rounding of batched arithmetic (logits within 0.5; over 100
    design passages the largest difference measured was 0.25), and a question asked alone afterwards gets exactly
    its P(yes) of before (the extra sequences leave nothing behind in the model's cache)."""
    import gzip
    import json

    from evaluations.judging.checkers.yesno import load_scorer, passage_shared
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.context_relevance import ask_set, system_for
    from evaluations.models.meter import metered

    with gzip.open(REPO / "datasets" / "multihop" / "design.jsonl.gz", "rt", encoding="utf-8") as f:
        first = json.loads(f.readline())
    texts = [p["text"] for p in first["passages"][:4]]
    wording = params().wording
    scorer = load_scorer(system_for(wording))
    tail = wording.format(question=first["question"])
    alone = [scorer.probability(passage_shared(t), tail)[0] for t in texts]
    decodes = scorer.calls
    cache = VerdictCache(tmp_path / "v.sqlite")
    with metered() as meter:
        together = ask_set(first["question"], texts + [" "], wording, cache=cache)
    assert scorer.calls == decodes + 1  # one decode for the four, the blank passage not asked
    assert meter.calls == 4  # a run's judge cost counts the questions read
    assert together[-1] is None and all(called for _, called in together[:-1])
    for (p, _), q in zip(together, alone):
        assert abs(math.log(p / (1 - p)) - math.log(q / (1 - q))) < 0.5, (p, q)
    assert scorer.probability(passage_shared(texts[0]), tail)[0] == alone[0]
    again = ask_set(first["question"], texts, wording, cache=cache)
    assert [p for p, _ in again] == [p for p, _ in together[:-1]] and not any(called for _, called in again)
    # the next-token logits those prompts end on (``next_logits``, what a reading of another token than yes/no
    # uses): softmax over yes and no of each row is the P(yes) of the batched pass
    rows = scorer.next_logits([(passage_shared(t), tail) for t in texts])
    assert len(rows) == 4 and len({r.shape for r in rows}) == 1 and rows[0].shape[0] > 1000
    for row, (p, _) in zip(rows, together):
        yes, no = (float(np.exp(row[ids] - row.max()).sum()) for ids in (scorer.yes_ids, scorer.no_ids))
        assert abs(yes / (yes + no) - p) < 1e-4
