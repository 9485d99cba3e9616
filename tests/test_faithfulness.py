"""The faithfulness judge: claim splitting, alignment signals, not-applicable answers (fast), and the judge with the
embedded model on real passages of ../shared/data (slow: copied sentences supported, swapped numbers/entities not,
cached re-runs free, claims name their passage)."""

from __future__ import annotations

import pytest

from evaluations.judging.claims import Claim, claim_signals, entities, numbers, sentences, split_claims
from evaluations.judging.faithfulness import Faithfulness, judge_faithfulness
from evaluations.judging.passages import Passage


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
])
def test_split_claims_by_hand(question, answer, expected):
    assert split_claims(question, answer) == expected


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


# -- not applicable: never a score, never 1.0 -------------------------------------------------------------
@pytest.mark.parametrize("answer, kind", [
    ("", "empty"), ("   ", "empty"), ("I don't know.", "refusal"),
    ("The context does not mention who founded it.", "refusal"), ("Who founded the company?", "echo"),
])
def test_non_answers_are_not_applicable(answer, kind):
    verdict = judge_faithfulness("Who founded the company?", answer, [Passage(id="d1", text="Acme was founded by Jo.")])
    assert verdict == Faithfulness(applicable=False, kind=kind, score=None, claims=[], model_calls=0)


def test_no_context_is_not_applicable():
    verdict = judge_faithfulness("Who founded Acme?", "Jo founded Acme.", [])
    assert not verdict.applicable and verdict.kind == "no_context" and verdict.score is None
