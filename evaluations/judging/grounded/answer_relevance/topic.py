"""Rules 3-4 of answer relevance (the package docstring): an answer about something else, by the context
(``topic``: its keywords the context grounds and its meaning near the question, scored by the fitted
``TOPIC_WEIGHTS``), by the words a title adds that the context lacks (``ungrounded_title``), by a meaning far from
the question's (``far_from_question``), or as a statement about another subject to a yes/no question
(``another_subject``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from evaluations.judging.basics.lexicon import POLARITY, alike, stems
from evaluations.judging.basics.question_forms import is_polar
from evaluations.judging.basics.text import STOPWORDS, normalize
from evaluations.judging.grounded.answer_relevance.words import (DIGIT, GENERIC, PLACEHOLDERS, POLAR_STEMS, TOKEN,
                                                                 Embed, grounded, numerals, own_name, plain_digits,
                                                                 question_stems, quotes_a_name, sentences, share_from,
                                                                 title_shaped, unpossessed)
from evaluations.judging.grounded.claims import has_verb

#: the context's sentences most similar to the question (cosine of all-MiniLM-L6-v2), each with its neighbours,
#: are the passage "near the question's words" the answer's meaning is compared with
NEAR_TOP = 3


#: the off-topic rule applies only when some context sentence is about the question (cosine ≥ MIN_ABOUT): a
#: context about something else (retrieval failed) cannot tell what is on topic
MIN_ABOUT = 0.25


#: rule 4: an answer of at least FAR_MIN_WORDS keywords, with cos(e(Q), e(A)) < FAR_COS and less than FAR_SHARE of its
#: keywords from the question, is about something else
FAR_MIN_WORDS = 5


#: ... unless the context vouches for it: a sentence of the context is clearly about the question (cosine ≥
#: VOUCH_ABOUT) and the answer's meaning is close to the sentences near the question (≥ VOUCH_CLOSE)
VOUCH_ABOUT = 0.45


VOUCH_CLOSE = 0.3


FAR_COS = 0.25


FAR_SHARE = 0.34


LONG_WORDS = 12  # an answer of this many words or more is "long" (length weight 1)


#: the fitted linear score of being on topic (``Topic.score``; logistic regression on the controls of SQuAD 2.0
#: and TechQA, ``scripts/fit_answer_relevance.py``); off_topic iff score < TOPIC_THRESHOLD
TOPIC_WEIGHTS: dict[str, float] = {"short_grounding": 1.53, "long_grounding": 2.08, "short_close": 0.47,
                                   "long_close": 1.13, "short_asked": 0.27, "long_asked": 0.94, "length": -0.10}


TOPIC_BIAS = -1.53


TOPIC_THRESHOLD = -0.25


@dataclass(frozen=True)
class Topic:
    """What says an answer is about its question, given a context (module docstring, rule 3)."""

    found: int  # answer keywords that occur in the context or the question
    total: int  # answer keywords
    close: float  # max cosine of the answer to the sentences near the question
    asked: float  # cosine of the answer to the question
    about: float  # max cosine of the question to a context sentence
    length: float  # min(1, words / LONG_WORDS)

    @property
    def grounding(self) -> float:
        return self.found / self.total

    def features(self) -> dict[str, float]:
        short, long = 1.0 - self.length, self.length
        return {"short_grounding": short * self.grounding, "long_grounding": long * self.grounding,
                "short_close": short * self.close, "long_close": long * self.close,
                "short_asked": short * self.asked, "long_asked": long * self.asked, "length": self.length}

    def score(self) -> float:
        return TOPIC_BIAS + sum(TOPIC_WEIGHTS[k] * v for k, v in self.features().items())


def topic(question: str, answer: str, context: str, embed: Embed) -> Topic | None:
    """The ``Topic`` signals of an answer, or None without a context or without an answer keyword (a yes/no
    word answering a yes/no question is none: "Yes" states the asked polarity, not a topic)."""
    parts = sentences(context)
    polar = POLAR_STEMS if is_polar(question) else frozenset()
    words = frozenset(stems(numerals(answer, keep_words=False)) - GENERIC - polar)
    if not parts or not words:
        return None
    vectors = embed([question, answer, *parts])
    q, a, s = vectors[0], vectors[1], vectors[2:]
    to_question = s @ q
    near = sorted({j for i in np.argsort(-to_question)[:NEAR_TOP] for j in (i - 1, i, i + 1) if 0 <= j < len(parts)})
    found = len(grounded(words, context, question))
    return Topic(found, len(words), float(np.max(s[near] @ a)), float(q @ a), float(np.max(to_question)),
                 min(1.0, len(answer.split()) / LONG_WORDS))


def ungrounded_title(question: str, answer: str, context: str) -> str | None:
    """Why a title-shaped answer is a heading by what it adds, or None (module docstring, rule 3): no verb, and the
    keywords it adds to the question's (``GENERIC`` and ``PLACEHOLDERS`` aside) occur nowhere in the context
    ("Charles Runnington's Birthplace", "Allkpop's Bergen County Location")."""
    if not title_shaped(answer) or has_verb(answer, participles=False):
        return None
    asked = question_stems(question)
    # a word in -ed is no verb in a title ("Moon Shapes Explained"), but a title with one that names something of its
    # own ("... Drafted by Detroit Red Wings", '... Starred in "The Last Star') gives a value, right or wrong
    if has_verb(answer) and (own_name(answer, asked, context) or quotes_a_name(question, answer) is not None):
        return None
    added = {w for w in stems(numerals(unpossessed(answer), keep_words=False)) - GENERIC - PLACEHOLDERS
             if not alike(w, asked)}
    if not added or grounded(added, context) or any(DIGIT.search(w) for w in added):  # a number is a value
        return None
    return f"shaped like a title, it adds to the question only {', '.join(sorted(added))}, which the context never uses"


def another_subject(question: str, answer: str) -> str | None:
    """Why a statement answers a yes/no question about something else, or None: the question names things (its
    capitalised words after the first, stopwords aside), and the answer, a sentence with a verb, has no yes/no
    word, names none of them, and opens with a name of its own (a run of capitalised words, the first no stopword):
    "Nicholls is a suburb in Canberra." to "Are Sherwood Stewart and Ekaterina Makarova from the same country?".
    "They were both born in England." is about the question's things; a wh-question's answer may well open with a
    new name (the asked one)."""
    first = next(iter(sentences(answer)), "")
    if not is_polar(question) or POLARITY.search(normalize(answer)) or not has_verb(first):
        return None
    named = {unpossessed(w).lower() for w in TOKEN.findall(question)[1:]
             if w[:1].isupper() and w.lower() not in STOPWORDS}
    words = TOKEN.findall(answer)
    if not named or any(unpossessed(w).lower() in named for w in words) or not words or (
            words[0].lower() in STOPWORDS | _NOT_NAMES):
        return None
    subject = list(itertools.takewhile(lambda w: w[:1].isupper(), words))
    if not subject:
        return None
    return f"a statement about {' '.join(subject)}, naming none of the question's {', '.join(sorted(named))}"


_NOT_NAMES = frozenset("one neither either".split())


def topic_reason(signals: Topic) -> str:
    """Why rule 3 finds the answer about something else (module docstring)."""
    return (f"score {signals.score():.2f} < {TOPIC_THRESHOLD:g}: {signals.found} of {signals.total} answer keywords "
            f"occur in the context, meaning close to the sentences near the question {signals.close:.2f}, to the "
            f"question {signals.asked:.2f}")


def far_from_question(question: str, answer: str, embed: Embed) -> str | None:
    """Why the answer's meaning is about something else than the question's, or None (module docstring, rule 4)."""
    said = stems(plain_digits(answer)) - GENERIC
    if len(said) < FAR_MIN_WORDS or not has_verb(answer):  # a list of names ("Raymond Unwin (Barry Parker)") is no
        return None  # sentence about something else: it is judged as a bare value
    share = share_from(said, question_stems(question))
    if share >= FAR_SHARE:
        return None
    q, a = embed([question, answer])
    cosine = float(q @ a)
    if cosine >= FAR_COS:
        return None
    return (f"meaning far from the question (cosine {cosine:.2f} < {FAR_COS:g}) and {share:.0%} of its keywords from "
            f"the question (< {FAR_SHARE:.0%})")
