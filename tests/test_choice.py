"""Which of A or B is X? (``judging.grounded.choice``): the option the passages single out, on hand-written passages (the
expected option is the one the passages state the asked fact of, read by hand), and through the faithfulness judge
with the real checker model."""

from __future__ import annotations

import pytest
from conftest import assert_rule_decides

from evaluations.judging.grounded.choice import asked, choice_of, choose

LANE = "Mark Lane (born 1946) is an American film director and producer."
LOWE = "Ken Lowe (born 1936) is an English film director known for his social realism."


@pytest.mark.parametrize(("question", "texts", "expected"), [
    ("Which director is American, Mark Lane or Ken Lowe?", [LANE, LOWE], "Mark Lane"),
    ("Which director is English, Mark Lane or Ken Lowe?", [LANE + " " + LOWE], "Ken Lowe"),
    # the kind of thing asked about is left out: Steer's passage calls him a guitar player, not a singer
    ("Which singer is British, Bill Steer or Adam Lazzara?",
     ["Bill Steer is a British guitar player.", "Adam Lazzara is an American singer."], "Bill Steer"),
    # a sentence end without its space, before an accented capital, still ends the other option's sentences
    ("Which of the following games is based on the German electoral system: Die Macher or Zèrtz?",
     ["Die Macher is a board game by Karl-Heinz Schmiel. It is based on the German electoral system (with the "
      "CDU and Die Linke).Zèrtz is the third game in the GIPF Project of abstract strategy games."], "Die Macher"),
    ("Which director is American, Mark Lane or Ken Lowe?",  # both are: nothing singles one out
     [LANE, "Ken Lowe (born 1936) is an American film director."], None),
    ("Which genus is aquatic, Alpha or Betula?",  # the one sentence that says it is negated
     ["Alpha is not an aquatic genus; it grows on dry hills.", "Betula is a genus of trees."], None),
    ("Which band has more members, Muse or Blur?",  # a comparison is not a choice by what is said
     ["Muse is an English band of three members.", "Blur is an English band of four members."], None),
    ("Which car is faster, the Alpha or the Beta?",  # nor is one by a comparative the answer screen knows
     ["The Alpha is faster than most cars of its day.", "The Beta is a family car."], None),
    ("Was Robert Heaton born in Canada or England?",  # the options are not what the question is about
     ["He was born in Knutsford and lived in Canada as a child. Knutsford is a town in England."], None),
    ("Who co-founded Linkin Park in 1996 and is the band's rhythm guitarist, Mike Shinoda or Julien-K?",
     ["Mike Shinoda (born 1977) is an American musician.", "Julien-K is an electronic rock band."], None),
])
def test_choose_on_hand_written_passages(question, texts, expected):
    chosen = choose(question, texts)
    assert (chosen.options[chosen.answer] if chosen is not None else None) == expected, chosen


def test_asked_leaves_out_the_options_the_frame_and_the_kind():
    assert asked("Which singer is from Britain, Bill Steer or Adam Lazzara?", ("Bill Steer", "Adam Lazzara")) == {
        "britain"}  # not "singer"
    assert asked("Which is a perennial plant, Chelidonium or Duranta?", ("Chelidonium", "Duranta")) == {
        "perennial", "plant"}


@pytest.mark.parametrize(("answer", "expected"), [
    ("Mark Lane", 0), ("Ken Lowe", 1), ("Lane", 0), ("Mark Anthony Lane", 0),  # a bare name, maybe in full
    ("Mark Lane is American.", 0), ("Ken Lowe is the American one.", 1),
    ("Ken Lowe is not American.", None), ("Both Mark Lane and Ken Lowe", None), ("Mark Lane, born 1946", None),
    ("Mark Lane directed many films about politics in the seventies.", None),
])
def test_choice_of_reads_only_an_answer_that_names_one_option(answer, expected):
    chosen = choose("Which director is American, Mark Lane or Ken Lowe?", [LANE, LOWE])
    assert chosen is not None
    assert choice_of(chosen, "Which director is American, Mark Lane or Ken Lowe?", answer) == expected


@pytest.mark.slow
def test_the_judge_decides_a_choice_with_the_real_checker(passage_scorer, tmp_path):
    """Through ``judge_faithfulness`` with the embedded checker: the option the passages single out is supported,
    the other is not, and each claim says why and keeps the model's P(supported)."""
    question = "Which director is American, Mark Lane or Ken Lowe?"
    rows = [{"query": question, "generated_answer": answer, "context": [LANE, LOWE], "label": label}
            for answer, label in (("Mark Lane", True), ("Ken Lowe", False))]
    assert_rule_decides(rows, passage_scorer, tmp_path / "v.sqlite", "chosen by")


def test_an_option_with_a_hyphenated_name_is_picked_in_a_sentence_or_alone():
    """Written for this test: a hyphenated option ("Ada Lovelace-King") is picked whether the answer writes it alone
    or in a sentence (the sentence's compounds are read split, so the question's must be too)."""
    from evaluations.judging.basics.question_forms import picks_option

    question = "Who was born first, Ada Lovelace-King or Mary Somerville?"
    assert picks_option(question, "Ada Lovelace-King")
    assert picks_option(question, "Ada Lovelace-King was born first.")
