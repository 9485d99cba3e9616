"""Lexical answer judges: one function each, over a list of alternative gold answers (max wins).

``refs`` is one gold string or a list of alternatives; a judge's value is the maximum over the
alternatives. All comparisons are on ``text.normalize``d text (SQuAD style). An empty list of
alternatives, or an empty generated answer, scores 0 / False.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from evaluations.judging.basics.text import keywords, normalize, tokens

__all__ = [
    "KEYWORD_THRESHOLD",
    "keyword_overlap",
    "keyword_correct",
    "token_f1",
    "token_recall",
    "exact_match",
    "containment",
]

KEYWORD_THRESHOLD = 0.7


def _alternatives(refs: str | Sequence[str]) -> list[str]:
    return [refs] if isinstance(refs, str) else list(refs)


def _keyword_overlap_one(reference: str, generated: str, generated_kw: set[str]) -> float:
    ref_kw = keywords(reference)
    if not ref_kw:  # a gold made only of stopwords ("The Who") is compared word for word
        ref_kw, generated_kw = set(tokens(reference)), set(tokens(generated))
    if not ref_kw:
        return 0.0
    return len(ref_kw & generated_kw) / len(ref_kw)


def keyword_overlap(refs: str | Sequence[str], generated: str) -> float:
    """Keyword overlap = max over gold alternatives r of |kw(r) ∩ kw(g)| / |kw(r)|.

    kw(x) = set of lowercased words of x minus punctuation and stopwords (``text.keywords``);
    a gold made only of stopwords is compared on all words of both texts.
    """
    generated_kw = keywords(generated)
    return max((_keyword_overlap_one(r, generated, generated_kw) for r in _alternatives(refs)), default=0.0)


def keyword_correct(refs: str | Sequence[str], generated: str, threshold: float = KEYWORD_THRESHOLD) -> bool:
    """The classic keyword rule: correct iff keyword_overlap(refs, generated) > threshold (default 0.7)."""
    return keyword_overlap(refs, generated) > threshold


def _f1_one(reference: str, generated_tokens: list[str]) -> float:
    ref_tokens = tokens(reference)
    if not ref_tokens or not generated_tokens:
        return 0.0
    common = sum((Counter(ref_tokens) & Counter(generated_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(generated_tokens)
    recall = common / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(refs: str | Sequence[str], generated: str) -> float:
    """SQuAD token F1 = max over r of 2·P·R / (P + R), with common = |tok(r) ∩ tok(g)| (multiset),
    P = common / |tok(g)|, R = common / |tok(r)|."""
    generated_tokens = tokens(generated)
    return max((_f1_one(r, generated_tokens) for r in _alternatives(refs)), default=0.0)


def token_recall(refs: str | Sequence[str], generated: str) -> float:
    """Token recall = max over r of |tok(r) ∩ tok(g)| / |tok(r)| (multiset): how much of the gold the answer says."""
    generated_counts = Counter(tokens(generated))
    best = 0.0
    for reference in _alternatives(refs):
        ref_counts = Counter(tokens(reference))
        total = sum(ref_counts.values())
        if total:
            best = max(best, sum((ref_counts & generated_counts).values()) / total)
    return best


def exact_match(refs: str | Sequence[str], generated: str) -> bool:
    """Exact match = any r with normalize(r) == normalize(g) (and non-empty)."""
    answer = normalize(generated)
    return bool(answer) and any(normalize(r) == answer for r in _alternatives(refs))


def containment(refs: str | Sequence[str], generated: str) -> bool:
    """Containment = any r whose normalised form occurs in normalize(g) on word boundaries.

    i.e. " " + normalize(r) + " " is a substring of " " + normalize(g) + " " (non-empty r).
    """
    answer = f" {normalize(generated)} "
    for reference in _alternatives(refs):
        gold = normalize(reference)
        if gold and f" {gold} " in answer:
            return True
    return False
