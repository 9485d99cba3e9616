"""Are A and B both X? Do they have the same nationality? A yes/no question about two names, decided from the passages.

The checker model reads one claim against one window; "Yes" to "Are Pam Veasey and Jon Jost both American?" needs
two facts from two places, and its P(yes) for "Yes" and for "No" is about the same (HaluEval's yes/no questions:
0.50). Such a question is decided here instead, without a model, when the passages settle it:

1. The question (``pair_question``) is a yes/no question (``question_forms.is_polar``) that names two things joined by
   "and" right after its auxiliary ("Are [both] [the bands] A and B …", "Do filmmakers A and B …"); each name is
   a run of capitalised words (with "of", "the", "de", "van" … inside). The rest of the question is what it asks.
2. What each name's passages say about it: its sentences (``comparison.about``: from the one naming it up to the
   next naming the other) and, from them, its nationality: the first national word (``NATIONAL``: "American",
   "Austrian"; not "Catholic", "European" or "Latin") in its first sentence.
3. Decided (``decide``; otherwise None and the model's verdicts stand):
   - "the same nationality" / "the same country": yes when the two nationalities are equal, no when they differ
     (not when both are of the United Kingdom's: "English" and "British" may both be true);
   - "the same year" of an event (``comparison.EVENTS``: born, founded, released …): the two years compared;
   - "both X" (any other question without "same" or "different", "one", "only" …): yes when every content word
     of X is in both names' sentences and none of those sentences is negated; no when X holds a nationality and a
     name's nationality is another one. A word missing says nothing (the passage may say "author" for "writer").
4. The answer (``polarity``) must say yes or no at its start and add at most one word beyond the question's
   ("No", "Yes, both are American.", "No, they are not."); any other answer stays the model's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evaluations.judging.grounded.claims import DEMONYMS
from evaluations.judging.grounded.comparison import about, event_of, negation, year_of
from evaluations.judging.basics.lexicon import FILLER, stems
from evaluations.judging.basics.question_forms import is_polar

__all__ = ["NATIONAL", "PairAnswer", "decide", "nationality", "pair_question", "polarity", "verdict"]

#: ``claims.DEMONYMS`` without regions, religions, languages, peoples and past states: a person's or a thing's country
NATIONAL: frozenset[str] = DEMONYMS - frozenset("""
    african anglo arab arabic asian assyrian aztec babylonian balkan basque breton byzantine caribbean catalan
    catholic celtic christian coptic european flemish gaelic germanic hawaiian hebrew hellenic hindu hispanic
    islamic jewish kurdish latin latino maori mayan mediterranean mongol muslim nordic norman norse ottoman
    persian protestant prussian roman saxon scandinavian sikh slavic soviet tibetan viking zulu
""".split())
_UK = frozenset({"british", "briton", "english", "scottish", "welsh"})
_LINK = r"(?:of|the|de|del|della|di|da|du|des|la|le|van|von|der|den|y|for|&)"
_WORD = r"[A-Z0-9\u00C0-\u024F][\w'’.\u00C0-\u024F-]*"
_NAME = rf"{_WORD}(?:\s+(?:{_LINK}\s+)*{_WORD})*"
_PAIR = re.compile(rf"^\W*\w+\s+(?:both\s+)?(?:(?:the|a|an)\s+)?(?:[a-z][\w-]*\s+){{0,2}}?"
                   rf"(?P<a>{_NAME})\s+and\s+(?:(?:the|a|an)\s+)?(?P<b>{_NAME})(?P<rest>(?:\W.*)?)$")
_SAME = re.compile(r"\bsame\s+(nationality|nationalities|country|countries|year)\b", re.I)
_UNDECIDED = re.compile(r"\b(?:same|different|differ\w*|one|only|either|neither|each\s+other|than|more|less|"
                        r"most|least|together|between|compared?)\b", re.I)
_NEGATION = negation("non")
_OPTIONAL = frozenset(stems("both located based considered known type types kind kinds form forms "
                            "originally originating origin famous"))
_YES_NO = re.compile(r"^\W*(yes|no)\b", re.I)


@dataclass(frozen=True)
class PairAnswer:
    """The answer the passages give to a yes/no question about two names, and why."""

    names: tuple[str, str]
    yes: bool
    why: str

    def reason(self) -> str:
        said = "yes" if self.yes else "no"
        return f"yes/no about {self.names[0]} and {self.names[1]}: {self.why}; the answer is {said}"


def pair_question(question: str) -> tuple[str, str, str] | None:
    """(A, B, the rest of the question) of a yes/no question naming two things (module docstring, step 1)."""
    text = re.sub(r'["“”]', "", question).strip()
    if not is_polar(text) or (match := _PAIR.match(text)) is None:
        return None
    b, rest = match["b"].rstrip(".,").split(), match["rest"]
    while len(b) > 1 and b[-1].lower() in NATIONAL:  # "Kings of Leon American rock bands": the adjective is asked
        rest = f" {b.pop()}{rest}"
    return match["a"].rstrip(".,"), " ".join(b), rest


def nationality(runs: Sequence[Sequence[str]]) -> str | None:
    """The first national word (``NATIONAL``) of the first sentence about a name (module docstring, step 2)."""
    for run in runs:
        for match in re.finditer(r"[A-Za-z]+(?:-[A-Za-z]+)*(?!\s*:)", run[0]):  # not a language: "(Russian: …)"
            word = match.group().split("-")[-1]  # "Indian-American": American
            if word[0].isupper() and word.lower() in NATIONAL:
                return word.lower()
    return None


def _same_nationality(x: str | None, y: str | None) -> bool | None:
    if x is None or y is None or x != y and x in _UK and y in _UK:
        return None
    return x == y


def decide(question: str, texts: Sequence[str]) -> PairAnswer | None:
    """The answer the passages give (module docstring, step 3), or None."""
    if (parsed := pair_question(question)) is None:
        return None
    a, b, rest = parsed
    runs = about(a, texts, (b,)), about(b, texts, (a,))
    if not runs[0] or not runs[1]:
        return None
    if (same := _SAME.search(rest)) is not None:
        if _UNDECIDED.search(_SAME.sub(" ", rest)):
            return None
        if same.group(1).lower().startswith("year"):
            event = event_of(question, (a, b), texts)
            years = year_of(a, texts, (b,), event), year_of(b, texts, (a,), event)
            if years[0] is None or years[1] is None:
                return None
            return PairAnswer((a, b), years[0] == years[1], f"{a} {years[0]}, {b} {years[1]}")
        found = nationality(runs[0]), nationality(runs[1])
        if (equal := _same_nationality(*found)) is None:
            return None
        return PairAnswer((a, b), equal, f"{a} {found[0]}, {b} {found[1]}")
    if _UNDECIDED.search(rest) or _NEGATION.search(rest):
        return None
    wanted = stems(rest) - FILLER - _OPTIONAL
    asked = {w.lower() for w in re.findall(r"[A-Za-z]+", rest) if w[0].isupper() and w.lower() in NATIONAL}
    for name, run in zip((a, b), runs):
        found = nationality(run)
        if len(asked) == 1 and found is not None and _same_nationality(found, next(iter(asked))) is False:
            return PairAnswer((a, b), False, f"{name} {found}")
    if not wanted:
        return None
    for run in runs:
        said = [sentence for part in run for sentence in part]
        if any(_NEGATION.search(s) for s in said) or not wanted <= stems(" ".join(said)):
            return None
    return PairAnswer((a, b), True, f"both passages say {' '.join(sorted(wanted))}")


def polarity(question: str, answer: str) -> bool | None:
    """True for a yes, False for a no, of an answer that says only that (module docstring, step 4); else None."""
    if (match := _YES_NO.match(answer)) is None:
        return None
    rest = answer[match.end():]
    if match.group(1).lower() == "yes" and _NEGATION.search(rest):
        return None
    extra = stems(rest) - stems(question) - FILLER
    return match.group(1).lower() == "yes" if len(extra) <= 1 else None


def verdict(question: str, answer: str, texts: Sequence[str]) -> tuple[bool, str] | None:
    """(supported, why) of a bare yes or no to a yes/no question about two names the passages settle."""
    if (said := polarity(question, answer)) is None or (settled := decide(question, texts)) is None:
        return None
    return said == settled.yes, settled.reason()
