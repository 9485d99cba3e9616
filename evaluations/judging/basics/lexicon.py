"""The project's English lexicon: word lists and light stemming shared by the non-answer screen, the
reference-free judges and the label tools (one copy of each list).

* ``stem`` / ``stems``: a light suffix stripper (plural, past, -ing, -ly; irregular pasts and number words through
  ``_IRREGULAR``) and kw(text), the stems of a text's non-stopword tokens;
* ``similar``: a word equal to, or sharing a long prefix with, one of a set (``mitochondria`` ~ ``mitochondrion``);
* ``FILLER`` (words that add no content), ``VAGUE`` (pronouns standing for the asked thing), ``VERBS`` (a small
  list of finite verbs), dates (``YEAR``, ``MONTH``), numbers (``NUMBER_WORDS``, ``has_number``), and polarity
  (``POLAR_WORDS``, ``POLARITY``, ``AUX_START``: the auxiliary a yes/no question starts with).
"""

from __future__ import annotations

import re
from functools import lru_cache

from evaluations.judging.basics.text import STOPWORDS, tokens

__all__ = ["FILLER", "VAGUE", "VERBS", "YEAR", "MONTH", "NUMBER_WORDS", "POLAR_WORDS", "POLARITY", "AUX_START",
           "stem", "stems", "similar", "alike", "has_number", "spelled_number", "numbers_as_digits"]

#: words an answer adds without adding content (generic nouns, adjectives and discourse words)
FILLER = frozenset(
    """
    new various several many important different way ways thing things answer question information mentioned
    according stated said says say text context document passage article also specific certain main key
    significant particular following given provided based regarding related part role one ones kind type
    include includes including well like use used using make made often however overall
    """.split()
)
YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
).split()
MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
#: the words of a number and their values: units, tens, and the scales that multiply them
_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
NUMBER_WORDS = frozenset([*_UNITS, *_TENS, *_SCALES,
                          *"trillion dozen half quarter once twice single double triple none".split()])
_DIGIT = re.compile(r"\d")
#: a few finite verbs: a heading has none, and an option of a question ends before one
VERBS = frozenset(
    "is are was were be been has have had do does did will would can could shall should may might must "
    "said says made makes took takes gave gives became becomes found finds led leads began begins".split()
)

#: a yes/no word of an answer, and the auxiliary a polar question starts with (``is_polar``)
POLAR_WORDS = ("yes", "no", "not", "never", "true", "false", "correct", "incorrect", "indeed", "none", "neither", "nor",
               "nt", "cannot")
POLARITY = re.compile(rf"\b({'|'.join(POLAR_WORDS)})\b")
AUX_START = re.compile(r"^\W*(is|are|was|were|am|do|does|did|can|could|will|would|should|shall|has|have|had|may|"
                        r"might|must|isn't|aren't|wasn't|weren't|don't|doesn't|didn't)\b", re.I)


#: irregular past forms -> base form, and number words -> digits, so "overcame" matches "overcome", "eleven" "11"
_IRREGULAR = dict(
    pair.split(":") for pair in """
    overcame:overcome became:become began:begin gave:give given:give took:take taken:take made:make found:find
    led:lead won:win wrote:write written:write said:say went:go gone:go came:come built:build held:hold
    brought:bring thought:think bought:buy taught:teach sought:seek chose:choose chosen:choose drove:drive
    driven:drive rose:rise grew:grow grown:grow knew:know known:know threw:throw drew:draw drawn:draw flew:fly
    spoke:speak spoken:speak broke:break broken:break stole:steal wore:wear froze:freeze ran:run sat:sit
    stood:stand understood:understand kept:keep left:leave felt:feel meant:mean met:meet paid:pay sent:send
    spent:spend lost:lose told:tell sold:sell heard:hear fought:fight caught:catch fell:fall fallen:fall hid:hide
    shot:shoot struck:strike fed:feed fled:flee saw:see seen:see did:do done:do ate:eat eaten:eat got:get
    """.split()
) | {w: str(v) for w, v in _UNITS.items()} | {"twenty": "20"}


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English suffix stripper (plural, past, -ing, -ly), enough to match 'launched' with 'launch';
    irregular past forms and number words through ``_IRREGULAR``."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    for suffix, keep in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("ly", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: len(word) - len(suffix)] + keep
            if suffix in ("ing", "ed") and len(stem) > 3 and stem[-1] == stem[-2]:
                stem = stem[:-1]  # "planned" -> "plan"
            return stem
    return word


def stems(text: str) -> frozenset[str]:
    """kw(text): the stems (``stem``) of its non-stopword tokens."""
    return frozenset(stem(t) for t in tokens(text) if t not in STOPWORDS)


#: indefinite pronouns that stand for the asked thing without naming it ("Somebody.", "Somebody ranked Warsaw
#: 32nd."): an answer adding only these to the question's words says nothing
VAGUE = frozenset(stem(w) for w in "somebody someone something somewhere sometime somehow".split())


def similar(word: str, others: frozenset[str]) -> bool:
    """``word`` is in ``others``, or shares a prefix of ≥ 5 characters and ≥ 70% of the shorter word with one of
    them ("mitochondria" ~ "mitochondrion", "hellenismos" ~ "hellenism")."""
    if word in others:
        return True
    for other in others:
        n = min(len(word), len(other))
        if n >= 5 and word[:5] == other[:5]:
            k = next((i for i, (x, y) in enumerate(zip(word, other)) if x != y), n)
            if k >= 0.7 * n:
                return True
    return False


TYPO_MIN = 6  # a stem this long one edit from another is that stem misspelt ("immigr" / "immagr")


def alike(word: str, others: frozenset[str]) -> bool:
    """``similar``, or one edit (a letter changed, added or dropped) from one of ``others`` when both have at least
    ``TYPO_MIN`` letters: a misspelling ("immagrants", "Keefer") and the right spelling are one word; so are a
    British and an American spelling ("colour" and "color", "centre" and "center": ``american``)."""
    return similar(word, others) or len(word) >= TYPO_MIN and any(
        len(other) >= TYPO_MIN and abs(len(other) - len(word)) <= 1 and _one_edit(word, other) for other in others
    ) or _alike_american(word, others)


def _alike_american(word: str, others: frozenset[str]) -> bool:
    """``similar`` of the American forms, asked only when a British spelling changed one side (else it would only
    repeat ``alike``'s first test)."""
    us, others_us = american(word), _american_all(others)
    return (us != word or others_us is not others) and similar(us, others_us)


#: British spellings and their American forms, read inside a word: "colour" -> "color", "centre" -> "center",
#: "catalogue" -> "catalog"
_BRITISH = ((re.compile(r"(?<=\w\w)our(?=\w*$)"), "or"), (re.compile(r"(?<=\w\w)tre$"), "ter"),
            (re.compile(r"(?<=\w\w\w)ogue$"), "og"))


@lru_cache(maxsize=65536)
def american(word: str) -> str:
    """The word with its British spellings in American form (``_BRITISH``); both sides of a comparison go through
    it, so only two words that differ by such a spelling meet."""
    for pattern, american_form in _BRITISH:
        word = pattern.sub(american_form, word)
    return word


@lru_cache(maxsize=4096)
def _american_all(words: frozenset[str]) -> frozenset[str]:
    """The words in American form: ``words`` itself when no spelling changed."""
    changed = frozenset(american(w) for w in words)
    return words if changed == words else changed


def _one_edit(a: str, b: str) -> bool:
    if len(a) > len(b):
        a, b = b, a
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), len(a))
    return a[i + (len(a) == len(b)):] == b[i + 1:]


def has_number(text: str) -> bool:
    """A digit, or a number word (``NUMBER_WORDS``) among the normalised text's words."""
    return bool(_DIGIT.search(text)) or any(t in NUMBER_WORDS for t in text.split())


_NUMBER_RUN = re.compile(r"\b(?:(?:%s)(?:[\s-]+(?:and[\s-]+)?)?)+\b" % "|".join(
    sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True)))


def spelled_number(words: list[str]) -> int | None:
    """The number a run of number words spells ("four hundred" 400, "twenty five" 25, "two thousand ten"
    2010), or None when the run is not one number ("one", a lone "hundred", "two three")."""
    total, current, last = 0, 0, None
    for word in words:
        if word in _SCALES:
            if current == 0 and last is None:
                return None
            if _SCALES[word] == 100:
                current = (current or 1) * 100
            else:
                total, current = total + (current or 1) * _SCALES[word], 0
        elif word in _TENS:
            if current % 100 or last in _TENS:
                return None
            current += _TENS[word]
        else:
            if last in _UNITS or (current % 10 and last in _TENS):
                return None
            current += _UNITS[word]
        last = word
    return None if len(words) == 1 and words[0] in ("zero", "one") else total + current


def numbers_as_digits(text: str, *, keep_words: bool) -> str:
    """Lower-case ``text`` with each number written in words also written in digits ("about four hundred people"
    -> "about 400 people"); ``keep_words``: the words stay beside the digits ("four hundred 400"). A lone "one"
    or "zero" stays a word (a pronoun, a determiner)."""

    def write(match: re.Match) -> str:
        run = match.group(0)
        value = spelled_number([w for w in re.split(r"[\s-]+", run.strip()) if w and w != "and"])
        if value is None:
            return run
        return f"{run.rstrip()} {value} " if keep_words else f"{value}{run[len(run.rstrip()):]}"

    return _NUMBER_RUN.sub(write, text)
