"""Yes/no questions about two names (``judging.grounded.pairs``): decided from the passages on the multi-hop probe's yes/no
questions (``datasets/labels/multihop_faithfulness.jsonl``, authored and labelled by reading: the expected answer is
the one its supported short answer gives), on hand-written passages, and through the faithfulness judge with the
real checker model."""

from __future__ import annotations

import pytest
from conftest import assert_rule_decides, multihop_probe

from evaluations.judging.grounded.pairs import decide, nationality, pair_question, polarity


def _probe_polar() -> list[dict]:
    return [r for r in multihop_probe() if r["type"] == "polar"]


def test_the_probe_yes_no_questions_decided_agree_with_the_labels():
    """Every probe question the rule decides gets the answer of its supported short answer; the two it can settle
    from the passages (the same nationality; both won the same prize) are decided, the rest are left alone."""
    expected = {r["query"]: r["generated_answer"].strip().lower() == "yes"
                for r in _probe_polar() if r["form"] == "short" and r["label"]}
    decided = {q: settled.yes for q, r in {r["query"]: r for r in _probe_polar()}.items()
               if (settled := decide(q, r["context"])) is not None}
    assert len(expected) == 10
    assert decided == {q: expected[q] for q in decided}
    assert {"Were Viktor Halász and Ágnes Torday of the same nationality?",
            "Have both Marguerite Olanier and Pascal Ndiaye won the Prix Vautrin?"} <= set(decided)


PETRA = "Petra Novak (born 1962) is a Czech sculptor. She studied in Prague and works in bronze."
ODILE = "Odile Marchand (born 1958) is a French sculptor who works in marble."
JONAS = "Jonas Weber (born 1970) is a Czech painter and sculptor."


@pytest.mark.parametrize(("question", "texts", "expected"), [
    ("Are Petra Novak and Jonas Weber of the same nationality?", [PETRA, JONAS], True),
    ("Were Petra Novak and Odile Marchand of the same nationality?", [PETRA, ODILE], False),
    ("Are Petra Novak and Odile Marchand from the same country?", [PETRA + " " + ODILE], False),
    ("Are Petra Novak and Odile Marchand both sculptors?", [PETRA, ODILE], True),
    ("Are both Petra Novak and Odile Marchand Czech?", [PETRA, ODILE], False),
    ("Are Petra Novak and Jonas Weber both Czech artists?", [PETRA, JONAS], None),  # "artist" is in neither
    ("Do Petra Novak and Odile Marchand both work in bronze?", [PETRA, ODILE], None),  # marble is no "no"
    ("Are Petra Novak and Odile Marchand sculptors of different nationalities?", [PETRA, ODILE], None),
    ("Is only Petra Novak and not Odile Marchand a sculptor?", [PETRA, ODILE], None),
    ("Are Petra Novak and Odile Marchand both sculptors?", [PETRA], None),  # one name has no passage
    ("Who is Petra Novak and what is Odile Marchand?", [PETRA, ODILE], None),  # not a yes/no question
    # the United Kingdom's words may both be true of one person
    ("Are Ann Reid and Tom Hale of the same nationality?",
     ["Ann Reid is a Scottish poet.", "Tom Hale is a British novelist."], None),
    # a language is no nationality; a compound takes its last part
    ("Were Mark Krein and Ivan Orlov from the same country?",
     ["Mark Krein (Ukrainian: Марко Крейн) was a Soviet mathematician.", "Ivan Orlov was a Russian chemist."],
     None),
    ("Are Asha Rao and Jane Doyle of the same nationality?",
     ["Asha Rao is an Indian-American author.", "Jane Doyle is an American poet."], True),
    # a sentence about the name that is negated settles nothing
    ("Are Petra Novak and Lena Berg both sculptors?",
     [PETRA, "Lena Berg is a painter, not a sculptor."], None),
    # two sources glued without a space ("…ROCK.Douglas") lend no name the other's nationality
    ("Are Taka Mori and Doug Penn from the same country?",
     ["Taka Mori is the singer of the Japanese rock band ONE OK ROCK.Doug Penn is an American bassist."], False),
    # the same year of the event the question names
    ("Were the Hallam Star and the Leeds Post founded in the same year?",
     ["The Hallam Star was founded in 1855 and first printed in 1856.", "The Leeds Post was founded in 1856."], False),
    ("Were the Hallam Star and the Leeds Post founded in the same year?",
     ["The Hallam Star was founded in 1856.", "The Leeds Post, printed since 1870, was founded in 1856."], True),
])
def test_decide_on_hand_written_passages(question, texts, expected):
    settled = decide(question, texts)
    assert (settled.yes if settled is not None else None) is expected, settled


def test_a_name_is_read_in_full_where_the_passage_has_it():
    """"Journal" alone stands for "National Journal" only in a passage without the full name: the first passage
    below is about Print, and "periodical" there is not said of National Journal."""
    texts = ["Print, A Quarterly Journal of the Graphic Arts, was a periodical. National Journal is a research "
             "company in Washington. It publishes daily journalism."]
    assert decide("Are both Print and National Journal periodicals?", texts) is None


def test_pair_question_splits_the_names_from_what_is_asked():
    assert pair_question("Are both The New Pornographers and Kings of Leon American rock bands?") == (
        "The New Pornographers", "Kings of Leon", " American rock bands?")
    assert pair_question('Do filmmakers Chris Carter and Theo van Gogh share the same nationality?') == (
        "Chris Carter", "Theo van Gogh", " share the same nationality?")
    assert pair_question("Are Gin and tonic and Paloma both cocktails?") is None
    assert nationality([["Lee Ranaldo (born 1956) is an American musician."]]) == "american"


@pytest.mark.parametrize(("answer", "expected"), [
    ("Yes", True), ("no.", False), ("No, they are not.", False), ("Yes, both are Czech.", True),
    ("Yes, but Odile Marchand is not", None),  # a yes that negates something
    ("Yes, both sculptors studied in Prague and exhibited widely.", None),  # more than a yes
    ("They are both sculptors.", None), ("Nobody knows", None),
])
def test_polarity_reads_only_a_bare_yes_or_no(answer, expected):
    assert polarity("Are Petra Novak and Odile Marchand both Czech sculptors?", answer) is expected


@pytest.mark.slow
def test_the_judge_decides_the_probe_yes_no_answers_with_the_real_checker(passage_scorer, tmp_path):
    """The probe's bare yes/no answers to the questions the rule decides, through ``judge_faithfulness`` with the
    embedded checker: each verdict is the label (before the rule, the judge rejected every supported "Yes"), and
    each claim says why and keeps the model's P(supported)."""
    rows = [r for r in _probe_polar() if r["form"] == "short" and decide(r["query"], r["context"]) is not None]
    assert len(rows) == 4
    assert_rule_decides(rows, passage_scorer, tmp_path / "v.sqlite", "yes/no about")
