"""The non-answer screen: answers that say nothing, judged incorrect before any judge model sees them.

Every correctness judge (offline, embedded LLM, served LLM, combined) runs ``screen`` first. An answer to an
answerable question that the screen classifies as a non-answer is incorrect, with the kind and the reason
recorded; on an unanswerable question (RepliQA's "not found", CLAPNQ / SQuAD 2.0 / TechQA impossible rows) the
rule is reversed: a refusal is the correct answer and anything else is not. Everything else is left to the
judge (``Screen.decided is None``).

The screen uses signals, not per-dataset patterns. With kw(x) the keyword stems of x (``text.keywords``, light
suffix stemming, ``stem``) and Q, A, G the question, the answer and one gold alternative:

* novel(A)  = kw(A) − kw(Q) − FILLER: what the answer adds beyond the question's words;
* inf(G)    = kw(G) − kw(Q), less words similar to a question word (below): the gold's *informative* keywords (RepliQA-style golds restate the question,
  so overlap with the whole gold rewards a restatement; only these words carry the answer);
* recall    = max over alternatives with inf(G) ≠ ∅ of |inf(G) ∩ kw(A)| / |inf(G)| (None when no alternative has one);
* has_gold  = some alternative occurs in A (``lexical.containment``), or all of its keywords do, or recall > 0;
  a keyword counts as present when A has it or a word sharing a prefix of ≥ 5 characters and ≥ 70% of the
  shorter one ("mitochondria" for "mitochondrion").

Kinds (``KINDS``, checked in this order; the first that applies wins):

* ``empty``: no letter or digit;
* ``refusal``: a refusal / "I don't know" phrase and not has_gold;
* ``echo``: A is the question (same normalised text, or a question whose words add nothing: novel(A) = ∅ and A
  ends with "?");
* ``options``: A hedges between candidates: at most OPTIONS_MAX_WORDS words, "X or Y" (parts of at most
  OPTION_MAX_WORDS words) with two or more parts that have keywords, not all of them gold (a part is gold when it
  contains a gold alternative or most of its informative words, or shares a word with one);
* ``restatement``: not has_gold, A does not pick one of the question's options (``picks_option``, below) nor
  answer a yes/no question with its polarity (``answers_polar``: "No, X does not Y."), A is
  mostly the question's words (|kw(A) ∩ kw(Q)| ≥ max(1, |kw(A)|/2)) and adds (almost) nothing:
  |novel(A)| ≤ RESTATE_SHARE · |kw(A)| when the gold has informative words, novel(A) = ∅ otherwise (a one-word
  paraphrase of the gold shares nothing with the question);
* ``heading``: not has_gold, no option picked, and A is shaped like a title (4–10 words, no comma or final period,
  a function word or a colon, ≥ 60% of its content words capitalised, no finite verb from a small list), not to a
  who-question unless it reuses the question's words;
* ``fragment``: the asked-for part is missing: a date is asked for explicitly ("on which date", "what day";
  a plain "when" accepts a year) and every gold alternative has a month but A gives only a
  year; a number is asked (how many / how much / what percentage) and the gold has one but A has none.

An answer that picks one of the options a question offers ("Arthur's Magazine" or "Arthur's Magazine was started
first." to "Which magazine was started first, Arthur's Magazine or First for Women?") uses only the question's words
by necessity: it is an answer, not a restatement or a heading. ``question_options``: around each "or" of the
question, the option on each side is the run of capitalised words next to it (function words such as "of" or "for"
inside it, a leading article left out: "the Rolling Stones", "F. Scott Fitzgerald") or else the content words next
to it, as many as both sides have (up to ``OPTION_RUN``: "a musician or an actor", "the red button or the green
button"; "a public or private company" is "public" / "private"), and the short items of a comma list before it
("Poland, Austria or Switzerland"). An "or" offers a choice only when no stopword stands next to it ("one or more",
"whether or not"), and the question starts with an auxiliary ("Is it … or …?"), or the left option is its comma
piece's only words (", the Kessler Tower or …"), or the question compares (``_COMPARES``: first, most, taller …) and
the options end it. ``picks_option``: every keyword of the answer is the question's, the answer has a keyword of
exactly one option that neither another option nor the rest of the question has, it does not say "or" itself (a
hedge is the ``options`` kind), and, when it is shaped like a title (no final period, ≥ 60% of its content words
capitalised), it has at most one keyword beyond that option's (a heading of the question's words that names one
option is still a heading). A one-sentence answer that names several options picks the one it opens with as its
subject, unless another option is joined to it ("Mary Ramsey is younger than Lee Ranaldo."; not "Mary Ramsey and
Lee Ranaldo are ..."). An option's run keeps a capitalised joiner inside a name ("Del Lord") but not the question's
capitalised first word ("Is Advanced Micro Devices or ..."). ``answers_polar``: a yes/no word the question lacks, answering a yes/no question
(``is_polar``), adds the polarity ("No, X does not Y."); a statement of the question's proposition answers it "yes"
(``affirms_polar``: "Paris is the capital of France." to "Is Paris the capital of France?"; "had" to "Did ... have
...?"). Both count only without
gold: with gold, a pick that is not the gold is the judge's to reject, and the screen keeps those verdicts. """

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evaluations.judging.basics.lexicon import FILLER, MONTH, POLARITY, VERBS, YEAR, has_number, similar, stem, stems
from evaluations.judging.basics.question_forms import OPTION_MAX_WORDS, affirms_polar, is_polar, picks_option
from evaluations.judging.basics.text import STOPWORDS, normalize, tokens
from evaluations.judging.correctness import lexical

__all__ = ["KINDS", "Screen", "screen", "is_refusal", "refusal_start", "Signals", "signals", "novelty",
           "informative_recall", "answers_polar"]

#: kind -> what it means (every list of kinds derives from this registry)
KINDS: dict[str, str] = {
    "empty": "the answer is empty or whitespace",
    "refusal": "a refusal or 'I don't know' to a question that has an answer",
    "echo": "the question echoed back",
    "options": "a hedge between candidates ('A or B') instead of one answer",
    "restatement": "the question restated: the answer adds nothing beyond the question's words",
    "heading": "a heading or title instead of an answer",
    "fragment": "a fragment that misses the asked-for part (a year for a date, no number for 'how many')",
}

OPTIONS_MAX_WORDS = 10  # an "X or Y" answer longer than this is a sentence that mentions alternatives
RESTATE_SHARE = 0.2

_REFUSAL = re.compile(
    r"\b(i (?:do not|dont|cannot|cant|am unable to|am not able to|couldnt|could not) (?:know|answer|find|determine|say|"
    r"tell|provide|help)|(?:not|no|none) (?:mentioned|specified|stated|provided|given|available|found|known|"
    r"discussed|included|indicated|disclosed|addressed)|no (?:information|answer|mention|details?|data|"
    r"relevant information)|(?:does|do|did) not (?:say|mention|specify|state|provide|contain|include|indicate|"
    r"address|answer)|doesnt (?:say|mention|specify|state|provide|contain|include)|(?:cannot|cant|can not) be "
    r"(?:determined|answered|found)|(?:cannot|cant|can not|could not|couldnt) provide (?:a |an |the )?(?:specific |"
    r"definitive |clear |exact |precise |direct )?(?:answer|response)|"
    r"unable to (?:answer|determine|find|provide)|not (?:possible|able) to "
    r"(?:answer|determine|say)|unanswerable|not enough information|insufficient information|"
    r"(?:im|i am) (?:sorry|not sure)|as an ai|no way to (?:know|tell))\b"
)
#: words that refuse only when the answer says nothing else ("Unknown.", "The author is unknown." to "Who wrote
#: it?"), while "A term used originally in derision, Huguenot has unclear origins." answers a question about the
#: name's origin; "nothing else": stopwords, the question's words and ``_GENERIC``
_HEDGE = re.compile(r"\b(unknown|unclear|is not clear)\b")
_GENERIC = frozenset("answer information context passage question document documents text exact exactly source "
                     "sources provided given currently still clear".split())
_LETTER = re.compile(r"\w")
_ASKS_DATE = re.compile(r"\b(what|which|exact) (date|day)\b|\bon (what|which) (date|day)\b")
_ASKS_NUMBER = re.compile(r"\bhow (many|much|long|old|far|often|tall|big|large)\b|\bwhat (percentage|percent|number|"
                          r"amount|proportion|share)\b")
_WHO = re.compile(r"^\s*(who|whom|whose)\b", re.I)
_OR = re.compile(r"\s*(?:\bor\b|/)\s*")


def refusal_start(answer: str) -> int | None:
    """The number of (normalised) words before the first refusal or "I don't know" phrase of the answer
    (``_REFUSAL``: "... is not known to me."), or None when it has none."""
    text = normalize(answer)
    match = _REFUSAL.search(text)
    return None if match is None else len(text[: match.start()].split())


def is_refusal(answer: str, question: str = "") -> bool:
    """A refusal or "I don't know" phrase (normalised text, ``_REFUSAL``) in a short answer (≤ 30 words) or
    among the first 12 words of a longer one (a long answer that mentions "not stated" in passing is not one); or
    a hedge ("unknown", "unclear", ``_HEDGE``) in an answer with no content word besides it, the ``question``'s
    words and ``_GENERIC`` ("Unknown.", "Its origin is unknown." to a question about the origin, but not "A term used
    originally in derision, Huguenot has unclear origins.")."""
    text = normalize(answer)
    start = refusal_start(answer)
    if start is None:
        if not _HEDGE.search(text):
            return False
        asked = stems(question)
        return all(w in STOPWORDS or w in _GENERIC or stem(w) in asked for w in _HEDGE.sub(" ", text).split())
    return len(text.split()) <= 30 or start < 12


@dataclass(frozen=True)
class Signals:
    """The screen's measurements of one (question, gold, answer) triple (module docstring)."""

    novel: frozenset[str]
    answer_keywords: int
    shared: int  # |kw(A) ∩ kw(Q)|: how much of the answer is the question's own words
    recall: float | None  # informative-keyword recall; None when no gold alternative has informative words
    contains_gold: bool

    @property
    def has_gold(self) -> bool:
        return self.contains_gold or (self.recall or 0.0) > 0


def signals(question: str, refs: Sequence[str], answer: str) -> Signals:
    q, a = stems(question), stems(answer)
    recalls = []
    contains = bool(refs) and lexical.containment(list(refs), answer)
    for ref in refs:
        gold = stems(ref)
        informative = frozenset(w for w in gold - q if not similar(w, q))  # "canadian" is not news after "canada"
        if informative:
            recalls.append(sum(similar(w, a) for w in informative) / len(informative))
        elif gold and gold <= a:
            contains = True  # every gold keyword is in the answer (and in the question)
    return Signals(frozenset(a - q - FILLER), len(a), len(a & q), max(recalls) if recalls else None, contains)


def novelty(question: str, answer: str) -> float:
    """|novel(A)| / |kw(A)|: the share of the answer's keywords that are not the question's (0 for no keywords)."""
    a = stems(answer)
    return len(a - stems(question) - FILLER) / len(a) if a else 0.0


def informative_recall(question: str, refs: Sequence[str], answer: str) -> float:
    """``signals().recall``, or containment (0/1) when no gold alternative has informative keywords."""
    s = signals(question, refs, answer)
    return s.recall if s.recall is not None else float(s.contains_gold)


@dataclass(frozen=True)
class Screen:
    """What the screen decided: ``decided`` False/True is the verdict, None leaves it to the judge."""

    decided: bool | None
    kind: str | None = None  # a ``KINDS`` key when the answer is a non-answer
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.decided is None


_PASS = Screen(None)


def screen(question: str, refs: Sequence[str], answer: str, *, answerable: bool = True) -> Screen:
    """Classify one answer (module docstring). ``answerable`` False: a refusal is correct, anything else is not."""
    answer = answer or ""
    if not _LETTER.search(answer):
        return Screen(False, "empty", KINDS["empty"])
    if not answerable:
        if is_refusal(answer, question):
            return Screen(True, None, "unanswerable question, and the answer declines: correct")
        return Screen(False, None, "unanswerable question, but the answer gives one instead of declining")
    s = signals(question, refs, answer)
    if is_refusal(answer, question) and not s.has_gold:
        return Screen(False, "refusal", KINDS["refusal"])
    if _is_echo(question, answer, s):
        return Screen(False, "echo", KINDS["echo"])
    options = _options(question, refs, answer)
    if options:
        return Screen(False, "options", f"{KINDS['options']}: {' / '.join(options)}")
    if not s.has_gold and not (not refs and (picks_option(question, answer) or answers_polar(question, answer))):
        limit = RESTATE_SHARE * s.answer_keywords if s.recall is not None else 0
        if len(s.novel) <= limit and s.shared >= max(1.0, 0.5 * s.answer_keywords):
            added = f" (adds only: {', '.join(sorted(s.novel))})" if s.novel else ""
            return Screen(False, "restatement", KINDS["restatement"] + added)
        if _is_heading(question, answer):
            return Screen(False, "heading", KINDS["heading"])
    fragment = _fragment(question, refs, answer)
    if fragment:
        return Screen(False, "fragment", fragment)
    return _PASS


def answers_polar(question: str, answer: str) -> bool:
    """A yes/no answer to a yes/no question ("No, DataPower does not support SHA-2." to "Does DataPower support
    SHA-2?"): its polarity, a yes/no word the question does not have, is what it adds to the question's words, so
    it restates nothing; or it affirms the question's proposition (``affirms_polar``)."""
    added = set(POLARITY.findall(normalize(answer))) - set(POLARITY.findall(normalize(question)))
    if not is_polar(question) or is_refusal(answer, question):
        return False
    return bool(added) or affirms_polar(question, answer)


def _is_echo(question: str, answer: str, s: Signals) -> bool:
    if normalize(answer) == normalize(question):
        return True
    return answer.strip().endswith("?") and not s.novel


def _options(question: str, refs: Sequence[str], answer: str) -> list[str]:
    """The alternatives of an "X or Y" answer when it hedges: two or more parts with keywords, not all of them
    gold, and no gold alternative itself says "or"."""
    words = tokens(answer)
    if len(words) > OPTIONS_MAX_WORDS or any(_OR.search(normalize(r)) for r in refs):
        return []
    parts = [p for p in _OR.split(normalize(answer)) if p.strip()]
    if len(parts) < 2 or any(len(p.split()) > OPTION_MAX_WORDS for p in parts):
        return []
    keyworded = [p for p in parts if stems(p)]
    if len(keyworded) < 2:
        return []
    gold = [p for p in keyworded if refs and (lexical.containment(list(refs), p) or _gold_recall(refs, question, p))]
    return keyworded if len(gold) < len(keyworded) else []


def _gold_recall(refs: Sequence[str], question: str, part: str) -> bool:
    s = signals(question, refs, part)
    return s.contains_gold or (s.recall or 0.0) >= 0.5 or any(similar(w, stems(r)) for w in stems(part) for r in refs)


def _is_heading(question: str, answer: str) -> bool:
    text = answer.strip()
    if text.endswith((".", "!", "?")) or "\n" in text:
        return False
    words = re.findall(r"[^\W\d_][\w'’-]*", text)
    if not 4 <= len(words) <= 10 or "," in text:
        return False
    if not (":" in text or any(w.lower() in STOPWORDS for w in words)):
        return False  # "Nova Scotia Canada", "Lou Gehrig's Disease": a name, not a title
    content = [w for w in words if w.lower() not in STOPWORDS]
    if not content or any(w.lower() in VERBS for w in words):
        return False
    capitalised = sum(1 for w in content if w[0].isupper())
    if capitalised / len(content) < 0.6:
        return False
    if _WHO.search(question) and not (stems(answer) & stems(question)):
        return False  # a name answering "who"
    return True


def _fragment(question: str, refs: Sequence[str], answer: str) -> str | None:
    q, a = normalize(question), normalize(answer)
    golds = [normalize(r) for r in refs]
    if _ASKS_DATE.search(q) and golds and all(MONTH.search(g) for g in golds):
        if YEAR.search(a) and not MONTH.search(a):
            return f"{KINDS['fragment']}: the question asks for a date, the answer gives only a year"
    if _ASKS_NUMBER.search(q) and golds and all(has_number(g) for g in golds) and not has_number(a):
        return f"{KINDS['fragment']}: the question asks for a number, the answer has none"
    return None


