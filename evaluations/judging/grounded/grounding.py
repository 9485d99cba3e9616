"""Grounding measures of an answer in its context, as plain functions (no pydantic-evals import):
used by the run's evaluators (``evaluators.context``) and by ``evaluations score`` on precomputed outputs.

* coverage = |context_kw ∩ answer_kw| / |answer_kw|, ``kw`` = ``judging.basics.text.keywords``; None when the answer has
  no keywords;
* context waste = tokens(chunks of non-relevant documents) / tokens(all context chunks), tokens = words and
  punctuation marks (``\\w+|[^\\w\\s]``); None without tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from evaluations.judging.basics.text import keywords

_TOKEN = re.compile(r"\w+|[^\w\s]")


def coverage(answer: str, contexts: Iterable[str]) -> float | None:
    answer_kw = keywords(answer)
    if not answer_kw:
        return None
    context_kw: set[str] = set()
    for text in contexts:
        context_kw |= keywords(text)
    return len(answer_kw & context_kw) / len(answer_kw)


def context_waste(chunks: Iterable[tuple[str, bool]]) -> float | None:
    """``chunks``: (text, is_relevant) pairs."""
    sizes = [(len(_TOKEN.findall(text)), relevant) for text, relevant in chunks]
    total = sum(n for n, _ in sizes)
    if total == 0:
        return None
    return sum(n for n, rel in sizes if not rel) / total
