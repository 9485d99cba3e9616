"""The faithfulness judge: claim splitting, alignment signals, not-applicable answers (fast), and the judge with the
embedded model on real passages of ../shared/data (slow: copied sentences supported, swapped numbers/entities not,
cached re-runs free, claims name their passage)."""

from __future__ import annotations

import pytest
from conftest import multihop_probe
from judge_samples import copies_and_swaps

from evaluations.judging.grounded.claims import Claim, claim_signals, entities, numbers, sentences, split_claims
from evaluations.judging.grounded.faithfulness import Faithfulness, judge_faithfulness, load_params
from evaluations.judging.basics.passages import Passage


# -- claims (written by hand) ------------------------------------------------------------------------------
@pytest.mark.parametrize("question, answer, expected", [
    ("Who founded Normandy?", "Rollo", [Claim("Rollo", short=True)]),
    ("When did it open?", "in 1889", [Claim("In 1889", short=True)]),
    ("Who discovered radium?",
     "Based on the context, Marie Curie discovered radium in 1898, and she won the Nobel Prize in 1903.",
     [Claim("Marie Curie discovered radium in 1898"), Claim("She won the Nobel Prize in 1903.")]),
    ("Where was she born?", "She was born in Warsaw, which is the capital of Poland.",
     [Claim("She was born in Warsaw"), Claim("Warsaw is the capital of Poland.")]),
    ("What does he like?", "He likes apples, pears, and oranges.", [Claim("He likes apples, pears, and oranges.")]),
    ("Where did Smith serve?", "Dr. Smith joined the U.S. Army in 1990; he left in 1995.",
     [Claim("Dr. Smith joined the U.S. Army in 1990"), Claim("He left in 1995.")]),
    ("What did John do?", "John founded Acme in 1990, and sold it in 2000.",
     [Claim("John founded Acme in 1990"), Claim("John sold it in 2000.")]),
    ("When did the war end?", "According to the passage, the war ended in 1945, while the treaty was signed in 1947.",
     [Claim("The war ended in 1945"), Claim("The treaty was signed in 1947.")]),
    ("What is the capital of France?", "The capital of France is", []),
    ("What is the capital of France?", "The capital of France is Paris.", [Claim("The capital of France is Paris.")]),
    ("List the points.", "- The first point is here.\n- The second point was there.",
     [Claim("The first point is here."), Claim("The second point was there.")]),
    # an answer that picks one of the question's options uses only the question's words, and still claims
    ("Which magazine was started first, Arthur's Magazine or First for Women?", "Arthur's Magazine was started first.",
     [Claim("Arthur's Magazine was started first.")]),
    ("Which magazine was started first, Arthur's Magazine or First for Women?", "First for Women",
     [Claim("First for Women", short=True)]),
    ("Which magazine was started first, Arthur's Magazine or First for Women?", "Arthur's Magazine or First for Women",
     []),
    # a yes/no answer to a yes/no question claims its polarity
    ("Are Lake Tahoe and Crater Lake in the same state?", "No", [Claim("No", short=True)]),
    ("Are Lake Tahoe and Crater Lake in the same state?", "No, they are not.", [Claim("No, they are not", short=True)]),
    ("Are Lake Tahoe and Crater Lake in the same state?", "Yes, both are in Oregon.", [Claim("Both are in Oregon.")]),
    ("Are Lake Tahoe and Crater Lake in the same state?", "I don't know.", []),
    # a statement of the question's proposition answers "yes" and claims it; without the auxiliary it restates
    ("Is Paris the capital of France?", "Paris is the capital of France.", [Claim("Paris is the capital of France.")]),
    ("Is Paris the capital of France?", "Paris the capital of France.", []),
    ("What is the capital of France?", "No", []),
    ("Can you tell me what the capital of France is?", "No", []),
    ("WAS 8.5 support SHA-2, and which fix pack adds it?", "No", []),
    # a pronoun standing for the asked thing claims nothing the question does not; named after it, it claims
    ("Who ranked Warsaw 32nd?", "Somebody ranked Warsaw 32nd.", []),
    ("Who ranked Warsaw 32nd?", "Somebody.", []),
    ("Where was Obama born?", "Somewhere in Hawaii.", [Claim("Somewhere in Hawaii", short=True)]),
])
def test_split_claims_by_hand(question, answer, expected):
    assert split_claims(question, answer) == expected


class _Asked:
    """A scorer that records the passages it is asked about (the duck type of ``yesno.YesNoScorer``)."""

    id = "recorder"

    def __init__(self) -> None:
        self.shared: list[str] = []

    def probability(self, shared: str, tail: str) -> tuple[float, float]:
        self.shared.append(shared)
        return 0.9, 1.0


def test_a_claim_spanning_two_passages_is_read_with_both():
    """Multi-hop: the film's passage names the director, the director's passage the city. The model reads the
    best-covered window together with the other passage's window that holds what it lacks; with one passage, or
    when the best window has every word, it reads that window alone."""
    from evaluations.judging.grounded.faithfulness import claim_evidence

    C = Claim

    film = Passage(id="film", text="Harbour Lights is a 1963 British drama film directed by Malcolm Fenwick. "
                                   "The film was shot on location in Cornwall.")
    person = Passage(id="person", text="Malcolm Fenwick was a British film director. He was born in Leeds.")
    question = "In which city was the director of the film Harbour Lights born?"
    asked = _Asked()
    evidence = claim_evidence(question, C("Leeds", short=True), [film, person], scorer=asked, cache=None)
    assert "Harbour Lights" in asked.shared[-1] and "born in Leeds" in asked.shared[-1]
    assert evidence.passage == 0 and evidence.calls == 1
    assert evidence.bridge == 1  # both steps are named: the film's passage and the director's
    evidence = claim_evidence(question, C("Leeds", short=True), [film], scorer=asked, cache=None)
    assert "Leeds" not in asked.shared[-1] and evidence.bridge is None
    evidence = claim_evidence(question, C("The film was shot on location in Cornwall."), [film, person],
                              scorer=asked, cache=None)
    assert "Leeds" not in asked.shared[-1] and "Cornwall" in asked.shared[-1] and evidence.bridge is None
    # no name shared by the two windows (the bridge entity): the other passage is a distractor, read alone
    claim_evidence("Where was John Smith born?", C("Paris", short=True),
                   [Passage(id="a", text="John Smith was born in Lyon."),
                    Passage(id="b", text="Paris is the capital of France.")], scorer=asked, cache=None)
    assert "Paris" not in asked.shared[-1]
    # two chunks of one document (the same id) are one passage: no bridge within it
    chunk = Passage(id="film", text="Its director was born in Leeds.")
    claim_evidence(question, C("Leeds", short=True), [film, chunk], scorer=asked, cache=None)
    assert asked.shared[-1].count("\n\n") == 1 and "Leeds" not in asked.shared[-1]  # one window, read alone


def test_sentences_keep_abbreviations_and_initials():
    assert sentences("J. K. Rowling wrote it. Mr. Smith read it in the U.S. Army. It sold well!") == (
        "J. K. Rowling wrote it.", "Mr. Smith read it in the U.S. Army.", "It sold well!")


def test_numbers_and_entities():
    assert numbers("In 1,000 years, three people and 45.5 kg") == {"1000", "3", "45.5"}
    assert entities("Barack Obama met the Queen of England in London.") == ["Barack Obama", "Queen England", "London"]


def test_signals_see_a_recombined_claim():
    """Names that the passage has, but in unrelated sentences: full coverage, no pair support."""
    passage = ("Alice Smith married Tom Brown in 1950. The weather that year was mild. Crops grew well in the valley. "
               "Later, Carol Jones opened a bakery in the town.")
    recombined = claim_signals("Who did Alice Smith marry?", Claim("Alice Smith married Carol Jones."), [passage])
    faithful = claim_signals("Who did Alice Smith marry?", Claim("Alice Smith married Tom Brown."), [passage])
    assert recombined.coverage == faithful.coverage == 1.0
    assert faithful.pair_support == 1.0 and recombined.pair_support < 1.0
    assert recombined.window_coverage < faithful.window_coverage
    swapped = claim_signals("When did Alice marry?", Claim("Alice Smith married Tom Brown in 1953."), [passage])
    assert swapped.missing_numbers == 1 and faithful.missing_numbers == 0


def test_worst_claim_features_take_the_least_support():
    from evaluations.judging.grounded.faithfulness import FEATURES, SUPPORT_FEATURES, worst

    a = [float(i) for i in range(len(FEATURES))]
    b = [float(len(FEATURES) - i) for i in range(len(FEATURES))]
    expected = [min(x, y) if name in SUPPORT_FEATURES else max(x, y) for name, x, y in zip(FEATURES, a, b)]
    assert worst([a, b]) == expected
    assert "llm_logit" in SUPPORT_FEATURES and "missing_numbers" not in SUPPORT_FEATURES
    # a claim with fewer copied bigrams / kept anchor neighbours is the less supported one
    assert {"bigram_coverage", "anchor_context"} <= SUPPORT_FEATURES


def test_windows_are_runs_of_sentences():
    from evaluations.judging.grounded.faithfulness import windows

    text = "One is here. Two is here. Three is here. Four is here."
    assert windows(text, 3) == ["One is here. Two is here. Three is here.", "Two is here. Three is here. Four is here."]
    assert windows("Only one sentence.", 3) == ["Only one sentence."]


# -- not applicable: never a score, never 1.0 -------------------------------------------------------------
@pytest.mark.parametrize("answer, kind", [
    ("", "empty"), ("   ", "empty"), ("I don't know.", "refusal"),
    ("The context does not mention who founded it.", "refusal"), ("Who founded the company?", "echo"),
])
def test_non_answers_are_not_applicable(answer, kind):
    verdict = judge_faithfulness("Who founded the company?", answer, [Passage(id="d1", text="Acme was founded by Jo.")])
    assert verdict == Faithfulness(applicable=False, kind=kind, score=None, claims=[], model_calls=0)


def test_a_served_decomposition_is_asked_only_for_an_answer_the_judge_applies_to():
    """A non-answer, or an answer without context, costs no decomposition call; a decomposition that returns the
    refusal or the echoed question as its claims leaves the answer not applicable, as the deterministic splitter
    does (never a score of an unsupported 'claim')."""
    asked: list[str] = []

    def decompose(question: str, answer: str) -> list[str]:  # a model that returns the answer as its one claim
        asked.append(answer)
        return [answer]

    passage = [Passage(id="d1", text="Acme was founded by Jo.")]
    for answer in ("", "Who founded the company?", "Who founded the company"):
        verdict = judge_faithfulness("Who founded the company?", answer, passage, decompose=decompose)
        assert not verdict.applicable and verdict.kind in ("empty", "echo", "restatement")
    assert not judge_faithfulness("Who founded Acme?", "Jo founded Acme.", [], decompose=decompose).applicable
    assert asked == []
    for refusal in ("I don't know.", "The context does not mention who founded it."):
        verdict = judge_faithfulness("Who founded the company?", refusal, passage, decompose=decompose)
        assert verdict == Faithfulness(applicable=False, kind="refusal", score=None, claims=[], model_calls=0)
    assert asked == ["I don't know.", "The context does not mention who founded it."]


def test_no_context_is_not_applicable():
    verdict = judge_faithfulness("Who founded Acme?", "Jo founded Acme.", [])
    assert not verdict.applicable and verdict.kind == "no_context" and verdict.score is None


# -- with the embedded model, on real passages ----------------------------------------------------------------
PAIRS = 3  # (passage, copied sentence, swapped sentence) of the seeded draw judged here


@pytest.mark.slow
def test_copied_sentences_are_supported_and_swaps_are_not(passage_scorer, tmp_path):
    """The first 3 pairs of the seeded draw: every copied sentence supported, every swap rejected (9/10 and 8/10
    of 3 pairs round up to 3). The draw's first 10 pairs, copied supported >= 9 and swaps rejected >= 8:
    ``benchmarks/judge_accuracy.py faithfulness_copies_swaps``. Each swap is asked right after its copy: the two
    share the passage's window, evaluated once."""
    from evaluations.judging.correctness.embedded import VerdictCache

    cache, params = VerdictCache(tmp_path / "v.sqlite"), load_params()
    drawn = copies_and_swaps(PAIRS)
    judged = [[judge_faithfulness("", text, [Passage(id="p", text=p)], cache=cache, scorer=passage_scorer)
               for text in (s, w)] for p, s, w in drawn]
    copied, swapped = [c for c, _ in judged], [w for _, w in judged]
    assert all(v.applicable and len(v.claims) == 1 for v in copied + swapped)
    assert sum(v.score == 1.0 for v in copied) >= 0.9 * PAIRS, [(v.claims[0].claim, v.claims[0].p) for v in copied]
    assert sum(v.score < 0.5 and not v.claims[0].supported for v in swapped) >= 0.8 * PAIRS, \
        [(v.claims[0].claim, v.claims[0].p) for v in swapped]
    assert all(0.0 <= c.p <= 1.0 for v in copied + swapped for c in v.claims)
    assert params.threshold > 0


@pytest.mark.slow
def test_cached_rerun_makes_no_model_call_and_claims_name_their_passage(passage_scorer, tmp_path):
    """A copied sentence judged against another passage and its own (listed second): the first judgement asks the
    model, a re-run with a new handle on the same verdict store asks nothing and gives the same verdict, and the
    claim names the passage it was read in. The passages are the copy test's first two (``copies_and_swaps``):
    after that test the model still holds the evaluated passage (``yesno``'s kept prefix states), so the call this
    test counts costs only the claim's tokens; run alone, it evaluates the passage as well."""
    from evaluations.judging.correctness.embedded import VerdictCache

    (passage, sentence, _), (other, _, _) = copies_and_swaps(2)
    passages = [Passage(id="other-doc", text=other), Passage(id="gold-doc", text=passage)]
    cache = VerdictCache(tmp_path / "v.sqlite")
    first = judge_faithfulness("", sentence, passages, cache=cache, scorer=passage_scorer)
    second = judge_faithfulness("", sentence, passages, cache=VerdictCache(tmp_path / "v.sqlite"),
                                scorer=passage_scorer)
    assert first.model_calls >= 1 and second.model_calls == 0
    assert second == first.model_copy(update={"model_calls": 0})
    assert [c.passage for c in first.claims] == ["gold-doc"]


BRIDGE_QUESTIONS = 3  # the first bridge questions of the probe judged here, each with a supported and a wrong answer


@pytest.mark.slow
def test_multi_hop_bridge_answers_are_read_across_both_passages(passage_scorer, tmp_path):
    """The multi-hop probe's bridge questions (datasets/labels/multihop_faithfulness.jsonl, labelled by reading):
    the asked fact is in the second passage, its link to the question in the first. On all 25, supported short
    answers were accepted 8 of 25 times when each window was read alone; read across the two passages they are
    accepted at least 70% of the time, and the wrong entities of the passages are still rejected at least 40%
    (``benchmarks/judge_accuracy.py faithfulness_bridge``). Here a fixed sample, the first 3 questions' 6 short
    answers (3 supported, 3 not). A sample this small carries no 70%: the bound is a majority of the supported
    answers accepted (2 of 3; reading each window alone accepts 8 of 25, about 1 in 3) and at least 2 of the 3
    unsupported rejected, with claims read across both passages for the accepted ones. (On an AMD EPYC without
    AVX-512 one supported answer, mh-001-a, falls below the threshold that Intel's numerics put it above.)"""
    from evaluations.judging.correctness.embedded import VerdictCache

    bridge = [r for r in multihop_probe() if r["type"] == "bridge" and r["form"] == "short"]
    assert len(bridge) == 50
    rows = bridge[:2 * BRIDGE_QUESTIONS]
    assert sum(r["label"] for r in rows) == BRIDGE_QUESTIONS and len({r["query"] for r in rows}) == BRIDGE_QUESTIONS
    cache = VerdictCache(tmp_path / "v.sqlite")
    verdicts = {r["id"]: judge_faithfulness(r["query"], r["generated_answer"],
                                            [Passage(id=f"p{i}", text=t) for i, t in enumerate(r["context"])],
                                            cache=cache, scorer=passage_scorer) for r in rows}
    accepted = [r["id"] for r in rows if r["label"] and verdicts[r["id"]].score == 1.0]
    rejected = [r["id"] for r in rows if not r["label"] and verdicts[r["id"]].score == 0.0]
    assert all(v.applicable for v in verdicts.values())
    assert len(accepted) >= 2, accepted
    assert len(rejected) >= 2, rejected
    # a claim read across the two passages names both, the passage that supports it best and its bridge (22 of
    # the 25 supported answers when measured)
    named = [{c.passage, c.bridge} for r in rows if r["id"] in accepted for c in verdicts[r["id"]].claims if c.bridge]
    assert all(pair == {"p0", "p1"} for pair in named) and len(named) >= 2, named
