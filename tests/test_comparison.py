"""Comparisons by date (``judging.grounded.comparison``): the option the passages' dates give, on the multi-hop probe's
comparison questions (``datasets/labels/multihop_faithfulness.jsonl``, authored and labelled by reading: the
expected option is the one its supported short answer names), on hand-written passages, and through the
faithfulness judge with the real checker model."""

from __future__ import annotations

import pytest
from conftest import assert_rule_decides, multihop_probe

from evaluations.judging.grounded.comparison import Comparison, picked, resolve, year_of


def test_the_probe_comparisons_by_date_give_the_labelled_option_and_others_are_left_alone():
    """The probe's 15 comparisons: the 8 by date (started, born, older company, released, launched, formed, opened,
    born) are decided and name the option of the supported short answer; the 7 by size, count, kind or skill are
    left to the model. The probe's dates are placed to mislead (a film shot in 1952 and released in 1954, a bridge
    begun in 1926 and opened in 1931, a partner's birth year in another passage's last sentence)."""
    rows = [r for r in multihop_probe() if r["type"] == "comparison" and r["form"] == "short" and r["label"]]
    assert len(rows) == 15
    decided = {}
    for row in rows:
        comparison = resolve(row["query"], row["context"])
        if comparison is not None:
            decided[row["query"]] = comparison.options[comparison.answer]
            assert row["generated_answer"].removeprefix("The ").lower() == decided[row["query"]].lower(), row
    by_date = ("started first", "born first", "is older", "released earlier", "launched first", "formed first",
               "opened earlier")
    assert sorted(decided) == sorted(r["query"] for r in rows if any(w in r["query"] for w in by_date))
    assert len(decided) == 8


@pytest.mark.parametrize("question, texts, expected", [
    # the year after the name, a space lost between two sources' sentences
    ("Which movie was released first, The Hunchback of Notre Dame or Saludos Amigos?",
     ["The Hunchback of Notre Dame is a 1996 American animated musical drama film produced by Walt Disney.Saludos "
      "Amigos (Spanish for \"Greetings, Friends\") is a 1942 American live-action animated package film."],
     "Saludos Amigos"),
    # the later one; the birth in brackets after a surname-only mention
    ("Who is younger, Kim Clijsters or Mary Pierce?",
     ["Kim Antonie Lode Clijsters (born 8 June 1983) is a Belgian former tennis player.",
      "Mary Pierce (born 15 January 1975) is a French retired tennis professional."], "Kim Clijsters"),
    # the event's year, not the first year: construction began in 1921 and 1925
    ("Which opened first, the Arlen Bridge or the Voss Tunnel?",
     ["The Arlen Bridge crosses the Esk. Construction began in 1921 and it opened in 1930.",
      "The Voss Tunnel was started in 1925. It opened to traffic on 2 May 1928."], "Voss Tunnel"),
    # "it" continues the company named before it
    ("Which company is older, Harlow Foods or Bexley Mills?",
     ["Harlow Foods is a grocer based in Leeds. It was founded in 1902 by Ann Harlow.",
      "Bexley Mills is a flour maker. The firm was established in 1888."], "Bexley Mills"),
])
def test_resolved_by_hand(question, texts, expected):
    comparison = resolve(question, texts)
    assert comparison is not None and comparison.options[comparison.answer] == expected


@pytest.mark.parametrize("question, texts", [
    ("Who died first, Ann Reed or Bo Lind?", ["Ann Reed (1901-1960) was a poet.", "Bo Lind (1899-1971) was a poet."]),
    ("Who was born first, Ann Reed or Bo Lind?", ["Ann Reed (born 1901) was a poet.", "Bo Lind was a poet."]),
    ("Who was born first, Ann Reed or Bo Lind?", ["Ann Reed (born 1901) was a poet.", "Bo Lind (born 1901) too."]),
    ("Which is taller, the Kessler Tower or the Holmgard Building?",
     ["The Kessler Tower (2004) is 210 m tall.", "The Holmgard Building (2012) is 190 m tall."]),
    ("Was Ann Reed born before 1950?", ["Ann Reed (born 1901) was a poet."]),  # no options
])
def test_left_alone(question, texts):
    """Endings, a missing or equal year, a comparison not by date and a question without options: None."""
    assert resolve(question, texts) is None


def test_year_of_stops_at_the_other_options_sentences():
    texts = ["Ann Reed was a poet. Bo Lind, her rival, was born in 1899 in Oslo."]
    assert year_of("Ann Reed", texts, ("Bo Lind",), "born") is None
    assert year_of("Bo Lind", texts, ("Ann Reed",), "born") == 1899


@pytest.mark.parametrize("answer, expected", [
    ("Aleksander Ford", 1),
    ("Aleksander Ford was born first.", 1),
    ("Ford was born earlier.", 1),  # the surname alone
    ("Pablo Trapero was born first.", 0),
    ("Pablo Trapero is the older one.", 0),
    ("Pablo Trapero is the younger one.", None),  # the other direction: not a pick of the older
    ("Pablo Trapero was not born first.", None),  # negated
    ("Pablo Trapero was born in 1960.", None),  # a number: a claim of its own, the model's
    ("Pablo Trapero or Aleksander Ford", None),  # both named
    ("Aleksander Ford, the Polish director who fled to Florida", None),  # more than a pick
])
def test_picked(answer, expected):
    comparison = Comparison(options=("Pablo Trapero", "Aleksander Ford"), years=(1971, 1908), earlier=True,
                            event="born")
    assert picked(comparison, "Who was born first, Pablo Trapero or Aleksander Ford?", answer) == expected


class _Constant:
    """A checker (the duck type of ``yesno.YesNoScorer``) that gives every claim the same P(supported)."""

    def __init__(self, p: float) -> None:
        self.p, self.id = p, f"constant-{p}"

    def probability(self, shared: str, tail: str) -> tuple[float, float]:
        return self.p, 1.0


def _by_date() -> list[dict]:
    rows = [r for r in multihop_probe() if r["type"] == "comparison" and r["form"] == "short"
            and resolve(r["query"], r["context"]) is not None]
    assert len(rows) == 16
    return rows


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_the_rule_decides_every_pick_by_date_whatever_the_checker_says(tmp_path, p):
    """The probe's short answers to its 8 comparisons by date, through ``judge_faithfulness`` with a checker that
    calls every claim unsupported (P = 0), then supported (P = 1): every supported pick accepted and every wrong pick
    rejected all the same, each claim saying why (``rule``) and keeping the checker's P."""
    assert_rule_decides(_by_date(), _Constant(p), tmp_path / "v.sqlite", "compared by date")


@pytest.mark.slow
def test_the_judge_decides_picks_by_date_with_the_real_checker(passage_scorer, tmp_path):
    """Two of those comparisons (a film shot in 1952 and released in 1954, a bridge begun in 1926 and opened in
    1931), the right and the wrong pick of each, with the embedded checker: every supported pick accepted and every
    wrong pick rejected (before the rule: 5 of 8 and 2 of 8 on the 16 rows), each claim saying why (``rule``) and
    keeping the model's P(supported). All 16 rows with the real checker: ``benchmarks/judge_accuracy.py --only
    comparison_by_date``."""
    rows = [r for r in _by_date() if r["id"].split("-")[1] in ("032", "038")]
    assert len(rows) == 4 and {r["label"] for r in rows} == {True, False}
    assert_rule_decides(rows, passage_scorer, tmp_path / "v.sqlite", "compared by date")


@pytest.mark.parametrize(("question", "texts", "expected"), [
    # a year glued to the next date's day where a dash was lost (HotpotQA's Wikipedia text): 1866, not 1943
    ("Who was born first, Romulo Gallegos or Beatrix Potter?",
     ["Romulo Gallegos (2 August 1884 – 5 April 1969) was a Venezuelan novelist.",
      "Helen Beatrix Potter (28 July 186622 December 1943) was an English writer."], "Beatrix Potter"),
    # "before" / "after" inside a title or a phrase is no comparison by date
    ("Which of the following, The Nightmare Before Christmas or White Wilderness, is a 1993 film?",
     ["The Nightmare Before Christmas is a 1993 film.", "White Wilderness is a 1958 film."], None),
    ("Who won the title after winning the doubles, Fabio Fognini or Ivan Dodig?",
     ["Fabio Fognini (born 1987) is a tennis player.", "Ivan Dodig (born 1985) is a tennis player."], None),
    # a year followed by a comma ("born July 14, 1966, in Newport")
    ("Who was born first, Tanya Dunn or Trace Colby?",
     ["Tanya Dunn (born July 14, 1966, in Newport) is a singer.",
      "Trace Colby (born February 24, 1989, in Ashland) is a guitarist."], "Tanya Dunn"),
    # "the first … to" is no comparison by date
    ("Who was the first astronaut to command a mission, Patrick Baudry or Frank Dewinne?",
     ["Patrick Baudry (born 1946) is an astronaut.", "Frank Dewinne (born 1961) commanded Expedition 21."], None),
    ("Which film came out before, Red Dawn or The Watercolor?",
     ["Red Dawn was released in 2009.", "The Watercolor was released in 2007."], "Watercolor"),
])
def test_glued_dates_and_before_or_after_only_as_the_comparison(question, texts, expected):
    comparison = resolve(question, texts)
    assert (comparison.options[comparison.answer] if comparison is not None else None) == expected
