"""Offline filters for generated (question, answer) pairs: no model, only word overlap.

A pair is dropped with the first reason that applies (``check_pair``, then ``NearDuplicates``):

- ``empty``: the question or the answer is blank;
- ``not_a_question``: the "question" is a statement: it neither ends with "?" nor starts with a question word
  (what, how, which, …, is/are/does/can …, or an imperative such as "name"/"list"/"describe");
- ``not_standalone``: the question points at the text it came from ("the passage", "this study", "the
  article", "according to the text", …): nobody searching a corpus asks that, and it cannot be answered
  without being shown the passage, so it measures nothing about retrieval;
- ``refusal``: the answer says the passage does not answer the question ("not mentioned", "cannot be
  determined", "no information", "I don't know", or just "unknown"/"none");
- ``unsupported``: fewer than ``SUPPORT_MIN`` (60%) of the answer's keywords occur in the passage the model was
  shown (``judging.grounded.grounding.coverage``; keywords = ``judging.basics.text.keywords``: normalised words minus stopwords), or the
  answer has no keywords at all;
- ``answer_in_question``: every keyword of the answer is already in the question (the question gives its answer
  away);
- ``vague``: fewer than ``MIN_SHARED_KEYWORDS`` (2) of the question's keywords occur in the passage (the question
  is not about this passage, so its source is no reliable label);
- ``duplicate``: the question's keyword set has Jaccard similarity >= ``DUPLICATE_JACCARD`` (0.7) with the keyword
  set of an earlier kept question; the earlier one stays.
"""

from __future__ import annotations

import re

from evaluations.judging.basics.text import keywords, normalize
from evaluations.judging.grounded.grounding import coverage

__all__ = ["DUPLICATE_JACCARD", "MIN_SHARED_KEYWORDS", "SUPPORT_MIN", "NearDuplicates", "check_pair", "jaccard"]

SUPPORT_MIN = 0.6
MIN_SHARED_KEYWORDS = 2
DUPLICATE_JACCARD = 0.7

# on normalize()d text: lower case, no punctuation ("don't" -> "dont"), no articles
_REFUSAL = re.compile(
    r"\b(not (?:explicitly )?(?:mentioned|stated|provided|given|specified|found|included|discussed|available|known)"
    r"|(?:cannot|can not|could not|couldnt|unable to) (?:be )?(?:answer|answered|determine|determined|find|found|tell)"
    r"|no (?:information|mention|answer|data)|does not (?:say|mention|specify|state)|doesnt (?:say|mention|specify)"
    r"|i do not know|i dont know|unanswerable)\b"
)
# on normalize()d text (no punctuation, no articles: "the passage" -> "passage")
_QUESTION_START = re.compile(
    r"^(?:what|whats|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|should|would"
    r"|will|has|have|had|may|might|must|shall|name|list|describe|explain|give|identify|state|define|compare)\b")
# on the lower-cased question with its punctuation turned into spaces (articles kept: "the passage", not "passage")
_POINTS_AT_SOURCE = re.compile(
    r"\b(?:the|this|that|above|given|following|provided) (?:passage|excerpt|article|study|paper|authors?)\b"
    r"|\b(?:this|the above|the given|the following|the provided) text\b"
    r"|\b(?:in|from|according to|based on) the text\b")
_BARE_REFUSAL = frozenset({"unknown", "none", "not applicable", "nothing", "no answer", "unclear"})


def check_pair(question: str, answer: str, passage: str) -> str | None:
    """The reason to drop the pair (module docstring, in that order), or None to keep it."""
    if not question.strip() or not answer.strip():
        return "empty"
    if not question.rstrip().endswith("?") and not _QUESTION_START.search(normalize(question)):
        return "not_a_question"
    if _POINTS_AT_SOURCE.search(" ".join(re.sub(r"[^\w\s]", " ", question.lower()).split())):
        return "not_standalone"
    said = normalize(answer)
    if said in _BARE_REFUSAL or _REFUSAL.search(said):
        return "refusal"
    support = coverage(answer, [passage])
    if support is None or support < SUPPORT_MIN:
        return "unsupported"
    asked = keywords(question)
    if keywords(answer) <= asked:
        return "answer_in_question"
    if len(asked & keywords(passage)) < MIN_SHARED_KEYWORDS:
        return "vague"
    return None


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets)."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


class NearDuplicates:
    """The kept questions' keyword sets; ``match`` finds an earlier near-duplicate of a new question."""

    def __init__(self, threshold: float = DUPLICATE_JACCARD) -> None:
        self.threshold = threshold
        self._kept: list[tuple[str, set[str]]] = []

    def match(self, question: str) -> str | None:
        """The id of the first kept question at least ``threshold`` similar to ``question``, or None."""
        words = keywords(question)
        return next((qid for qid, seen in self._kept if jaccard(words, seen) >= self.threshold), None)

    def add(self, qid: str, question: str) -> None:
        self._kept.append((qid, keywords(question)))
