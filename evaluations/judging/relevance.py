"""``answer_relevance``: does the answer address the question, whether or not it is right? No gold answer needed.

Reference-free: it reads the question, the answer and (when there is one) the context the system was given. It
is lexical (no model), so it runs on every case that has an answer, in microseconds. It is deliberately *not*
RAGAS's "questions generated back from the answer" similarity, which an echo of the question passes.

The rules, checked in this order (the first that applies rejects the answer; ``KINDS`` is the registry):

1. non-answers. From the screen without gold (``nonanswer.screen(question, (), answer)``, ``SCREEN_KINDS``):
   ``empty``, ``refusal``, ``echo``, ``options`` (a hedge "A or B", unless the question asks for several things:
   "two", "three", "both", "list"). On a question marked unanswerable a refusal is accepted (it is the answer).
   Then the question's own words given back (``_restates``; the screen's restatement and heading rules read the
   gold, so they are replaced here): with kw = ``nonanswer.stems`` and novel = kw(A) − ``GENERIC`` less the stems
   similar to one of kw(Q) (Q also split at punctuation), the answer restates the question when novel = ∅ and it
   reuses ≥ min(``RESTATE_WORDS``, ``RESTATE_COVER``·|kw(Q)|) of the question's keywords (≥ 1): ``heading`` when
   it is shaped like a title (no final period, every word of more than 3 letters capitalised; then one reused
   keyword is enough), else ``restatement``. A short answer that picks one word of the question ("concrete" to
   "abstract or concrete?") is neither.
2. ``wrong_type``: the question asks for a type the answer's form cannot be (``ASKED``, first match wins):
   * number ("how many", "how much", "how old", "what percentage / number / proportion"): the answer has no
     number (a digit, a number word, or a quantity word such as "several");
   * time ("when …" at the start, "what/which year / date / month / day / century / decade / time"): the answer has
     no time marker (a digit, a number word, a month, a weekday, a time word such as "century", "during", or a
     condition: "when", "if", "while");
   * person or place ("who", "whom", "whose", "where" at the start; "what/which [adjective] country / city /
     person / name / language / religion / team …"): the answer is only numbers and time words ("1995" to "who
     wrote …", "10th century" to "from which countries …");
   * polar (the question starts with an auxiliary such as "is", "did", "can", and offers no "or"): the answer has
     no polarity word (yes, no, not, true, false …) and is not a statement of at least ``POLAR_MIN_WORDS`` words
     ("1995" to "Is Paris the capital of France?").
3. ``off_topic`` (an answer about something else), only when the context is known (has a keyword): with S = kw(A) − ``GENERIC``
   less the keywords holding a digit (numbers, versions and codes do not say what an answer is about), and a
   keyword *related* when it is similar (``nonanswer.similar``: equal, or a shared prefix of ≥ 5 characters and
   ≥ 70% of the shorter word) to a keyword of the question or of the context,
       support = |{s ∈ S : s related}| / |S|,
       off_topic  iff  S ≠ ∅ and support < ``MIN_SUPPORT`` and |{s ∈ S : s related}| < ``MIN_RELATED``
   (a long answer with several related keywords is on topic even when it says more than its context).
   Without a context a bare value cannot be told from an answer about something else by words alone ("Paris" to
   "what is the capital of France" shares no word with the question), so the rule does not apply then, and the
   reason says so.

Anything else is ``relevant``. Validated without labels by ``evaluations judge-check --judges answer_relevance``
(``judging.controls``: non-answer controls must be rejected, gold answers in every form accepted); the measured
rates are in ``docs/answers-and-judges.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from evaluations.judging.nonanswer import KINDS as NONANSWER_KINDS
from evaluations.judging.nonanswer import FILLER, MONTH, NUMBER_WORDS, has_number, is_refusal, screen, similar, stems
from evaluations.judging.text import normalize

__all__ = ["KINDS", "ASKED", "GENERIC", "MIN_SUPPORT", "MIN_RELATED", "POLAR_MIN_WORDS", "Relevance",
           "answer_relevance", "asked_type"]

#: rejection kind -> what it means: the screen's non-answer kinds, then this judge's own ("relevant" is the pass)
KINDS: dict[str, str] = {
    **{kind: NONANSWER_KINDS[kind] for kind in ("empty", "refusal", "echo", "options", "restatement", "heading")},
    "wrong_type": "the answer's form cannot be the asked type",
    "off_topic": "an answer about something else: its words relate to neither the question nor the context",
}
MIN_SUPPORT = 0.5
MIN_RELATED = 5  # ... or this many related keywords: a long answer that says more than its context is on topic
POLAR_MIN_WORDS = 4
#: words that say nothing about the topic: the screen's filler, and generic nouns a sentence wraps a value in
GENERIC = FILLER | frozenset("person people name place thing answer overview introduction summary".split())

_QUANTITY = frozenset("few several many numerous multiple both dozen hundred thousand million billion".split())
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_TIME_WORDS = frozenset(
    """century centuries decade decades year years era age period during after before since until ago today
    yesterday tomorrow morning afternoon evening night noon midnight spring summer autumn fall winter season
    week weeks month months day days hour hours minute minutes early late mid later earlier recently currently
    now then once daily weekly monthly annually bc ad bce ce when whenever while if""".split())
_TIME_STEMS = frozenset(s for w in _TIME_WORDS for s in stems(w)) | _TIME_WORDS
_POLARITY = re.compile(r"\b(yes|no|not|never|true|false|correct|incorrect|indeed|none|neither|nor|nt|cannot)\b")
_AUX_START = re.compile(r"^\W*(is|are|was|were|am|do|does|did|can|could|will|would|should|shall|has|have|had|may|"
                        r"might|must|isn't|aren't|wasn't|weren't|don't|doesn't|didn't)\b", re.I)


#: the screen's kinds taken as they are (its restatement and heading rules read gold answers: ``_restates``)
SCREEN_KINDS = ("empty", "refusal", "echo", "options")
#: a restatement reuses at least this many of the question's keywords, or at least RESTATE_COVER of them
RESTATE_WORDS = 4
RESTATE_COVER = 0.5
_DIGIT = re.compile(r"\d")
_SEVERAL = re.compile(r"\b(two|three|both|list)\b", re.I)


def _asks_several(question: str) -> bool:
    """The question asks for several things ("two", "three", "both", "list"): "A or B" may answer it."""
    return bool(_SEVERAL.search(question))


def _restates(question: str, answer: str) -> str | None:
    """Why the answer restates the question, or None: it adds no keyword beyond the question's words and
    ``GENERIC`` ones (novel = kw(A) − GENERIC, less the stems similar to one of kw(Q), is ∅), and it reuses at
    least min(``RESTATE_WORDS``, ``RESTATE_COVER``·|kw(Q)|) of the question's keywords (at least one): a short
    answer that picks one word of the question ("concrete" to "abstract or concrete?") is not a restatement."""
    q, a = _question_stems(question), stems(answer) - GENERIC
    if not a or any(not similar(w, q) for w in a):
        return None
    shared = len({w for w in q if similar(w, a)})
    need = 1.0 if _titled(answer) else max(1.0, min(RESTATE_WORDS, RESTATE_COVER * len(q)))
    if shared < need:
        return None
    return f"reuses {shared} of the question's {len(q)} keywords and adds none"


def _question_stems(question: str) -> frozenset[str]:
    """kw(Q), also with the question split at punctuation ("load.rules" gives "load" and "rule" too)."""
    return stems(question) | stems(re.sub(r"[^\w\s]", " ", question))


def _titled(answer: str) -> bool:
    """Shaped like a title: no final period, and every word of more than 3 letters (``GENERIC`` aside) capitalised."""
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]+", answer) if w.lower() not in GENERIC]
    return bool(words) and not answer.strip().endswith(".") and all(w[0].isupper() for w in words if len(w) > 3)


def _has_number(text: str) -> bool:
    """``nonanswer.has_number``, or a quantity word ("several", "hundreds")."""
    return has_number(normalize(text)) or bool((set(normalize(text).split()) | stems(text)) & _QUANTITY)


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
    return bool(_POLARITY.search(normalize(answer))) or len(answer.split()) >= POLAR_MIN_WORDS


@dataclass(frozen=True)
class Asked:
    """An asked type: the question pattern that asks for it, and the check the answer's form must pass."""

    question: re.Pattern[str]
    accepts: Callable[[str], bool]
    needs: str  # for the reason: what the answer lacks


#: asked type -> (question pattern, answer check); the first pattern that matches the question decides
ASKED: dict[str, Asked] = {
    "number": Asked(re.compile(r"\bhow (many|much|old)\b|\bwhat (percentage|percent|number|proportion)\b", re.I),
                    _has_number, "no number"),
    "time": Asked(re.compile(r"^\W*(when|since when|until when)\b(?!.*\b(what|which|who|whom|where|how)\b)|\b(what|which) (year|date|month|day|century|"
                             r"decade|time)\b", re.I), _has_time, "no date or time"),
    "person or place": Asked(re.compile(r"^\W*(who|whom|whose|where)\b|\b(what|which)\s+(\w+\s+)?(country|"
                                        r"countries|city|cities|state|place|person|people|name|team|company|"
                                        r"language|religion|group|organi[sz]ation|author|artist|band)\b|\bwhat is "
                                        r"(it|he|she|this|that) called\b", re.I),
                             lambda a: not _only_numbers_or_time(a), "only numbers or time words"),
    "polar": Asked(_AUX_START, _polar_ok, f"no yes/no word and fewer than {POLAR_MIN_WORDS} words"),
}


def asked_type(question: str) -> str | None:
    """The type the question asks for (``ASKED`` key), or None (what/which/why/how …: any form may answer)."""
    for name, asked in ASKED.items():
        if asked.question.search(question) and not (name == "polar" and re.search(r"\bor\b", question, re.I)):
            return name
    return None


@dataclass(frozen=True)
class Relevance:
    verdict: bool
    kind: str  # a ``KINDS`` key when rejected, "relevant" when accepted
    reason: str  # names the rule


def answer_relevance(question: str, answer: str, context: str | None = None, *, answerable: bool = True
                     ) -> Relevance:
    """Judge one answer (module docstring). ``context``: the text the system was given (None or "" when unknown);
    ``answerable`` False: the question has no answer, and a refusal is the relevant reply."""
    answer = answer or ""
    if not answerable and is_refusal(answer):
        return Relevance(True, "relevant", "declines a question marked unanswerable")
    screened = screen(question, (), answer)
    if screened.kind in SCREEN_KINDS and not (screened.kind == "options" and _asks_several(question)):
        return Relevance(False, screened.kind, f"{screened.kind}: {screened.reason}")
    restated = _restates(question, answer)
    if restated is not None:
        kind = "heading" if _titled(answer) else "restatement"
        return Relevance(False, kind, f"{kind}: {KINDS[kind]} ({restated})")
    asked = asked_type(question)
    if asked is not None and not ASKED[asked].accepts(answer):
        return Relevance(False, "wrong_type",
                         f"wrong_type: the question asks for a {asked}, the answer has {ASKED[asked].needs}")
    context_words = stems(context or "")
    words = {w for w in stems(answer) - GENERIC if not _DIGIT.search(w)}  # numbers, codes, versions: no topic
    if context_words and words:
        known = _question_stems(question) | context_words
        related = [w for w in words if similar(w, known)]
        support = len(related) / len(words)
        if support < MIN_SUPPORT and len(related) < MIN_RELATED:
            return Relevance(False, "off_topic",
                             f"off_topic: {len(related)} of {len(words)} answer keywords relate to the question or "
                             f"the context (support {support:.2f} < {MIN_SUPPORT:g}, fewer than {MIN_RELATED})")
    return Relevance(True, "relevant", "relevant: " + (f"a {asked} as asked" if asked else "addresses the question")
                     + ("" if context_words else " (no context: the off-topic rule did not apply)"))
