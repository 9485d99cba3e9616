"""The words of a question and its answer that answer relevance's rules read (the package docstring): keywords
(kw = ``lexicon.stems``) less ``GENERIC`` and ``PLACEHOLDERS``, the words an answer adds to the question's
(``added_words``) and whether they hold a value, names and quoted titles, numbers and times, the asked type
(``ASKED``, rule 2), the context's sentences and the keywords it grounds. Shared by ``given_back`` (rules 0-1),
``topic`` (rules 3-4) and ``judge``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from evaluations.judging.basics.lexicon import (AUX_START, FILLER, MONTH, NUMBER_WORDS, POLAR_WORDS, POLARITY, alike,
                                                has_number, numbers_as_digits, similar, stem, stems)
from evaluations.judging.basics.text import normalize, unhyphened

POLAR_MIN_WORDS = 4


#: words that say nothing about the topic: the screen's filler, and generic nouns a sentence wraps a value in
GENERIC = FILLER | frozenset("person people name place thing answer overview introduction summary".split())


#: nouns of an attribute whose values are common nouns ("which occupation": "actors"; "which type of drinks":
#: "cocktails"): a "which" question asking for one is not asking for a name
ATTRIBUTE_NOUNS = frozenset("""
    type types kind kinds sort sorts form genre genres style category occupation occupations profession
    professions job jobs career trade nationality nationalities ethnicity sport sports discipline field instrument
    instruments
""".split())


#: nouns that name the fact a question asks for, not a value of it ("Allkpop's Bergen County Location", "Edwin
#: Meese's tenure", "Canadian Left Winger Birthdate")
FACT_NOUNS = frozenset("""
    location locations whereabouts birthplace birthdate birthday birth tenure origin origins identity residence
    hometown
""".split())


#: stems of words that stand for the asked thing without naming it ("Somebody ranked Warsaw 32nd.", "An
#: organisation ranked ...", "... something happens."; the attribute nouns: "They share a profession."), and
#: prepositions the stopword list lacks ("among"): an answer adding only these restates the question
PLACEHOLDERS = frozenset(stem(w) for w in """
    somebody someone something somewhere sometime somehow anybody anyone anything whoever whatever organisation
    organization body group entity individual party agency institution
    feature aspect characteristic trait quality similarity
    among amongst within across along around behind beyond toward towards upon via per onto throughout
""".split()) | frozenset(stem(w) for w in ATTRIBUTE_NOUNS | FACT_NOUNS)


_QUANTITY = frozenset("few several many numerous multiple both dozen hundred thousand million billion".split())


_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())


_TIME_WORDS = frozenset(
    """century centuries decade decades year years era age period during after before since until ago today
    yesterday tomorrow morning afternoon evening night noon midnight spring summer autumn fall winter season
    week weeks month months day days hour hours minute minutes early late mid later earlier recently currently
    now then once daily weekly monthly annually bc ad bce ce when whenever while if""".split())


_TIME_STEMS = frozenset(s for w in _TIME_WORDS for s in stems(w)) | _TIME_WORDS


POLAR_STEMS = stems(" ".join(POLAR_WORDS))


DIGIT = re.compile(r"\d")


#: a question that asks for a title (its answer may be shaped like a heading: the screen's heading rule then waits)
_TITLE_WORDS = (r"(book|novel|film|movie|song|album|poem|play|show|series|episode|painting|work|article|chapter|"
                r"section|heading|slogan|motto|theme|program|programme|initiative|project|campaign|event|festival|"
                r"report|study|law|act)s?")


#: the question asks for a title or a name: "what is it called", "named", "more commonly known", or a work in its
#: asking phrase ("which 2004 novel", "what song"), or in a keyword query with no wh-word ("kanye west song that
#: starts with a piano"); a work the question only mentions ("who sings the song ...") is not asked for
TITLE_ASKED = re.compile(r"\b(title|titled|called|named|name|known(?!\s+(?:for|to|about|in|by)\b))\b"
                          rf"|\b(what|which)\s+(?:[\w'’-]+\s+){{0,3}}?{_TITLE_WORDS}\b"
                          rf"|^(?!.*\b(?:what|which|who|whom|whose|where|when|why|how)\b).*\b{_TITLE_WORDS}\b", re.I)


#: "which X" / "what X" with X not an auxiliary: the question asks for an entity, whose name may look like a title
ENTITY_ASKED = re.compile(r"\b(which|what)\s+(?!(is|was|are|were|did|does|do|has|have|had|can|could|would|should|"
                           r"will|might|may|happened|happens)\b)[a-z]+", re.I)


VALUE_MAX_ADDED = 3


TOKEN = re.compile(r"[\w'’.&-]+")


#: questions whose asking word asks for a particular named thing (a person, a place, one of a kind): "what
#: purpose", "what type", "which occupation" and other questions for an attribute may take a common noun ("hunting",
#: "actors") and are not read by ``gives_back``
_ASKS_NAMED = re.compile(r"^(?:(who|whom|whose|where)\b|which\b(?!\s+(?:[\w-]+\s+){0,2}?(?:"
                         + "|".join(sorted(ATTRIBUTE_NOUNS)) + r")\b)"
                         r"|what (is|was|are|were) (the|its|his|her|their) names?\b"
                         r"|what (\w+ )?(city|country|state|town|company|team|person|band|film|book)\b)", re.I)


FIRST_WH = re.compile(r"\b(?:what|which|who|whom|whose|where|when|why|how)\b.*", re.I | re.S)


def asks_named(question: str) -> bool:
    """The question's asking word (its first wh-word) asks for a named thing (``_ASKS_NAMED``)."""
    asking = FIRST_WH.search(question)
    return bool(asking and _ASKS_NAMED.match(asking.group()))


WH_WORDS = frozenset("what which who whom whose where when why how".split())


ASKING = re.compile(r"^\W*(?:what|which|who|whom|whose|where|when|why|how)\b", re.I)


def added_words(question: str, answer: str) -> list[tuple[int, str]]:
    """The answer's words (with their position) that the question does not have: not similar to a question
    keyword, not ``GENERIC`` or ``PLACEHOLDERS`` (function words dropped)."""
    asked = question_stems(question)
    return [(i, t) for i, t in enumerate(TOKEN.findall(answer)) if is_own(t, asked)]


def is_own(word: str, asked: frozenset[str]) -> bool:
    """A word with a keyword not similar to one of the question's ``asked`` and not ``GENERIC`` or
    ``PLACEHOLDERS``: one the answer adds (``added_words``, ``_filler_value``)."""
    return bool(s := stems(unhyphened(unpossessed(word)))) and not all(alike(w, asked) for w in s) and not (
        s <= GENERIC | PLACEHOLDERS)


def share_from(words: frozenset[str] | set[str], asked: frozenset[str]) -> float:
    """The share of ``words`` similar to one of the question's keywords ``asked`` (0 for no words)."""
    return len({w for w in words if similar(w, asked)}) / len(words) if words else 0.0


def adds_a_value(added: list[tuple[int, str]]) -> bool:
    """The added words are more than ``VALUE_MAX_ADDED`` keywords, or hold a value (``value_in``)."""
    return len({w for _, t in added for w in stems(t)}) > VALUE_MAX_ADDED or value_in(added)


_CALLED = re.compile(r"\b(?:called|named|termed|known as)\s+[\"'“]?([\w'’-]+)", re.I)


def calls_it(question: str, answer: str) -> bool:
    """The answer names the asked thing after a naming verb with a word of its own, a common noun too ("... is
    called melanin." to "which pigment determines the colour of human hair")."""
    asked = question_stems(question)
    return any(is_own(m.group(1), asked) for m in _CALLED.finditer(answer))


def value_in(added: list[tuple[int, str]]) -> bool:
    """Whether added words hold a value: a number, a yes/no word, or a name (a capitalised word; an answer's first
    word only when it is not a verb form in -ing or -ed, "Regarding")."""
    for i, t in added:
        if DIGIT.search(t) or has_number(normalize(t)) or POLARITY.search(normalize(t)):
            return True
        if t[:1].isupper() and not (i == 0 and re.search(r"(ing|ed)$", t.lower())):
            return True
    return False


_QUOTED = re.compile(r"(?:^|(?<=[\s(\[]))[\"“]([^\"“”]*[^\W\d_][^\"“”]*)(?:[\"”]|$)")  # an opening mark


def quotes_a_name(question: str, answer: str) -> str | None:
    """A title the answer writes in quotation marks that the question does not hold, to a question asking for a
    title, a name or an entity (``TITLE_ASKED``, ``ENTITY_ASKED``, ``asks_named``): a name of the asked kind, even
    one made of the question's words ("... made his name in the sitcom "The Future Hobbit and the Sleuth"."), else
    None."""
    if not (TITLE_ASKED.search(question) or ENTITY_ASKED.search(question) or asks_named(question)):
        return None
    said = normalize(question)
    return next((m.group(1).strip() for m in _QUOTED.finditer(answer.rstrip(" .")) if normalize(m.group(1))
                 and not re.search(rf"(?<!\w){re.escape(normalize(m.group(1)))}(?!\w)", said)), None)


_NAME_JOINERS = frozenset("of the de du la le van von da del for &".split())


_DETERMINERS = frozenset("the a an this that these those".split())


def _name_runs(answer: str) -> list[list[str]]:
    """The answer's runs of capitalised words (lowercase joiners inside: "Kingdom of Aksum"), a leading determiner
    and a possessive "'s" cut off."""
    runs: list[list[str]] = []
    run: list[str] = []
    for token in [*TOKEN.findall(answer), ""]:
        word = token.strip(".")
        if word[:1].isupper() or (run and word.lower() in _NAME_JOINERS):
            run.append(word)
            continue
        while run and (run[-1].lower() in _NAME_JOINERS or run[0].lower() in _DETERMINERS):
            run.pop(-1 if run[-1].lower() in _NAME_JOINERS else 0)
        if run:
            runs.append([*run[:-1], unpossessed(run[-1])])
        run = []
    return runs


def _has_phrase(text: str, words: Sequence[str], *, case: bool) -> bool:
    pattern = r"(?<![\w])" + r"\W+".join(map(re.escape, words)) + r"(?![\w])"
    return re.search(pattern, text, 0 if case else re.I) is not None


def context_name(question: str, answer: str, context: str) -> str | None:
    """A name the answer makes of the question's words, as the context writes it, else None: a run of two or more
    capitalised words (``_name_runs``; one word alone is a form of the question's own: "Lithuanian") whose keywords
    are all the question's, one of them never capitalised there, that the question does not hold as a phrase and the
    context does, capitalised ("Windsor Airport" to "... and which airport?" over a context naming it; "University
    of Calcutta" to "which public state university ..."). Such an
    answer names a thing though it adds no word to the question's; a heading or a restatement made of the question's
    words ("Devonwood Bike Trail Airport", "Marshall Neilan's nationality") is not written so in the context, and a
    name the question has ("Bill Clinton" of "Bill and Hillary Clinton") is no new one."""
    if not context:
        return None
    asked, named = question_stems(question), {w.lower() for w in TOKEN.findall(question) if w[:1].isupper()}
    for run in _name_runs(answer):
        content = [w for w in run if stems(w)]
        if (content and len(run) > 1 and all(similar(s, asked) for w in content for s in stems(w))
                and any(w.lower() not in named for w in content)
                and not _has_phrase(question, run, case=False) and _has_phrase(context, run, case=True)):
            return " ".join(run)
    return None


@functools.lru_cache(maxsize=4096)
def question_stems(question: str, *, forms: bool = True) -> frozenset[str]:
    """kw(Q), also with the question split at punctuation ("load.rules" gives "load" and "rule" too) and without
    possessives ("Curie's" gives "curie"); with ``forms`` (for telling whether a word is the question's, not for
    counting its keywords) each alphabetic stem also with its final "e" dropped or added (``lexicon.stem`` makes
    "liv" of "lives" but keeps "live"), and an ordinal in words also in digits and back ("fourth", "4th")."""
    kw = stems(question) | stems(re.sub(r"[^\w\s]", " ", question)) | stems(unpossessed(question))
    if not forms:
        return kw
    ordinals = {_ORDINAL_DIGITS.get(w) or _ORDINAL_WORDS.get(w) for w in kw} - {None}  # "fourth" / "4th"
    return kw | ordinals | {w[:-1] if w.endswith("e") else f"{w}e" for w in kw if w.isalpha() and len(w) > 3}


_POSSESSIVE_END = re.compile(r"(?<=\w)['’]s?(?!\w)")


def unpossessed(text: str) -> str:
    """The text with possessive endings cut ("Marie Curie's" -> "Marie Curie", "Burns'" -> "Burns"): ``stems``
    would make "curies" of "Curie's", which no longer matches "Curie"."""
    return _POSSESSIVE_END.sub("", text)


def title_shaped(answer: str) -> bool:
    """Shaped like a title: no final period, and every word of more than 3 letters (``GENERIC`` aside) capitalised."""
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]+", answer) if w.lower() not in GENERIC]
    return bool(words) and not answer.strip().endswith(".") and all(w[0].isupper() for w in words if len(w) > 3)


#: ordinal words: "What number film ...?" is answered by "twenty-first"
_FIRST_TWENTY = tuple("""
    first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth
    fifteenth sixteenth seventeenth eighteenth nineteenth twentieth
""".split())


_ORDINALS = frozenset(_FIRST_TWENTY) | frozenset("""
    thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth hundredth thousandth millionth
""".split())


_ORDINAL_DIGITS = {w: f"{i}{'th' if 10 <= i % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(i % 10, 'th')}"
                   for i, w in enumerate(_FIRST_TWENTY, 1)}


_ORDINAL_WORDS = {digits: word for word, digits in _ORDINAL_DIGITS.items()}


def _has_number(text: str, *, ordinals: bool = False) -> bool:
    """``lexicon.has_number``, or a quantity word ("several", "hundreds"); with ``ordinals`` also an ordinal
    ("twenty-first", hyphenated words read part by part: a number question's "what number film")."""
    if has_number(normalize(text)) or bool((set(normalize(text).split()) | stems(text)) & _QUANTITY):
        return True
    words = set(normalize(text.replace("-", " ")).split())
    return ordinals and (has_number(" ".join(words)) or bool(words & _ORDINALS))


def _has_time(text: str) -> bool:
    words = set(normalize(text).split())
    return (_has_number(text) or bool(MONTH.search(normalize(text))) or bool(words & _WEEKDAYS)
            or bool(words & _TIME_WORDS) or bool(stems(text) & _TIME_STEMS))


def _only_numbers_or_time(text: str) -> bool:
    """Every keyword of the answer is a number, a month, a weekday or a time word (and there is one)."""
    content = stems(text)
    return bool(content) and all(s in NUMBER_WORDS or s in _TIME_STEMS or s in _WEEKDAYS or MONTH.fullmatch(s)
                                 or re.fullmatch(r"\d+(st|nd|rd|th|s)?", s) for s in content)


def _polar_ok(answer: str) -> bool:
    return bool(POLARITY.search(normalize(answer))) or len(answer.split()) >= POLAR_MIN_WORDS


@dataclass(frozen=True)
class Asked:
    """An asked type: the question pattern that asks for it, and the check the answer's form must pass."""

    question: re.Pattern[str]
    accepts: Callable[[str], bool]
    needs: str  # for the reason: what the answer lacks


#: asked type -> (question pattern, answer check); the first pattern that matches the question decides
ASKED: dict[str, Asked] = {
    "number": Asked(re.compile(r"\bhow (many|much|old)\b"
                               r"|\bhow (long|far|tall)\b(?!.*(?:\band|\bor|,)\s+(what|which|who|whom|where|how)\b)"
                               r"|\bwhat (percentage|percent|number|proportion)\b"
                               r"|^\W*(the )?(percentage|number|proportion|population) of\b"
                               r"|\b(what|which) (is|was|are|were) the (\w+ )?(number|population|percentage|age)"
                               r" of\b", re.I),
                    functools.partial(_has_number, ordinals=True), "no number or ordinal"),
    # "When was the actor who starred in ... born?": a relative wh-word after a noun does not make it a double question
    "time": Asked(re.compile(r"^\W*(when|since when|until when)\b(?!.*(?:\band|\bor|,)\s+(what|which|who|whom|where|"
                             r"how)\b)"
                             r"|\b(what|which) (year|date|month|day|century|decade|time)\b"
                             r"|\b(what|which) (is|was) the (\w+ )?(year|date|month|day|century|decade)"
                             r" (of|in|on|when)\b",
                             re.I),
                  _has_time, "no date or time"),
    "person or place": Asked(re.compile(r"^\W*(who|whom|whose|where)\b|\b(what|which)\s+(\w+\s+)?(country|"
                                        r"countries|city|cities|state|place|person|people|name|team|company|"
                                        r"language|religion|group|organi[sz]ation|author|artist|band)\b|\bwhat is "
                                        r"(it|he|she|this|that) called\b", re.I),
                             lambda a: not _only_numbers_or_time(a), "only numbers or time words"),
    "polar": Asked(AUX_START, _polar_ok, f"no yes/no word and fewer than {POLAR_MIN_WORDS} words"),
}


def asked_type(question: str) -> str | None:
    """The type the question asks for (``ASKED`` key), or None (what/which/why/how …: any form may answer)."""
    for name, asked in ASKED.items():
        if asked.question.search(question) and not (name == "polar" and re.search(r"\bor\b", question, re.I)):
            return name
    return None


Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> L2-normalised vectors, one row per text


MAX_SENTENCES = 200


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


_SEPARATOR = re.compile(r"(?<=\d)[,.](?=\d{3}\b)")


def sentences(context: str) -> list[str]:
    """The context's sentences (split after . ! ? and at line breaks; the first ``MAX_SENTENCES``)."""
    return [s.strip() for s in _SENTENCE.split(context) if len(s.strip()) > 1][:MAX_SENTENCES]


def plain_digits(text: str) -> str:
    """The text with thousands separators dropped ("1,000,000" -> "1000000"), lowercased."""
    return _SEPARATOR.sub("", text.lower())


def numerals(text: str, *, keep_words: bool) -> str:
    """``plain_digits`` with numbers written in words in digits too (``lexicon.numbers_as_digits``), so that an answer
    and a context that write one number two ways share it; ``keep_words`` for a context: either form of an
    answer's number is found in it."""
    return numbers_as_digits(plain_digits(text), keep_words=keep_words)


def grounded(words: frozenset[str] | set[str], context: str, question: str = "") -> set[str]:
    """The keywords of ``words`` that occur in the context or the question (``lexicon.similar``; a keyword with a
    digit must occur as that number: "$1,000,000" matches "US$1,000,000", "four hundred" matches 400)."""
    known = stems(context) | stems(unpossessed(context)) | (question_stems(question) if question else frozenset())
    digits = numerals(context, keep_words=True)  # "Kipling's" is "Kipling": the possessive cut
    # a number as the keywords write it too ("16-year-old" is the keyword "16yearold", "0.9 s" is "09")
    digits += " " + " ".join(w for w in stems(digits) if DIGIT.search(w))
    return {w for w in words if (re.search(rf"(?<!\d){re.escape(w)}(?!\d)", digits) if DIGIT.search(w)
                                 else similar(w, known))}


def own_name(answer: str, asked: frozenset[str], context: str = "") -> bool:
    """The answer holds a run of two or more capitalised words of its own, none the question's ("Detroit Red
    Wings", "Tom Cruise"), and none that the context writes in lower case (a title capitalises common nouns: "Art
    Experiment")."""
    lower = set(re.findall(r"\b[a-z][\w'’-]*", context))
    run = 0
    for token in TOKEN.findall(answer):
        run = run + 1 if token[:1].isupper() and is_own(token, asked) and token.lower() not in lower else 0
        if run >= 2:
            return True
    return False
