"""The exact context a QA model is given: which chunks, in which order, cut to the character budget.

``select_context(chunks, max_chars)`` keeps whole chunks in rank order while their blocks fit; the first chunk
that does not fit is cut to the remaining room (when at least a few characters remain) and the rest dropped,
so the best-ranked text always survives. Each block is ``[chunk_id] text`` with the text's whitespace
collapsed, and blocks are joined by a blank line: ``len(format_context(select_context(c, m))) <= m``.

Coverage, context waste and the recorded ``context_text`` are all computed on this selection, never on the
whole retrieved list.
"""

from __future__ import annotations

from evaluations.core.types import RetrievedChunk

_SEP = "\n\n"


def _block(chunk: RetrievedChunk) -> str:
    return f"[{chunk.chunk_id}] {chunk.text}"


def select_context(chunks: list[RetrievedChunk], max_chars: int | None = None) -> list[RetrievedChunk]:
    """The chunks given to the model (texts whitespace-normalised; the last possibly cut to the budget)."""
    selected: list[RetrievedChunk] = []
    used = 0
    for chunk in chunks:
        chunk = chunk.model_copy(update={"text": " ".join(chunk.text.split())})
        block = _block(chunk)
        sep = len(_SEP) if selected else 0
        if max_chars is not None and used + sep + len(block) > max_chars:
            room = max_chars - used - sep - (len(chunk.chunk_id) + 3)  # "[id] " prefix
            if room > 0:
                selected.append(chunk.model_copy(update={"text": chunk.text[:room]}))
            break
        selected.append(chunk)
        used += sep + len(block)
    return selected


def format_context(chunks: list[RetrievedChunk]) -> str:
    """The selected chunks as one string: ``[chunk_id] text`` blocks joined by a blank line."""
    return _SEP.join(_block(c) for c in chunks)


def context_text(chunks: list[RetrievedChunk], max_chars: int | None = None) -> str:
    """The context string a model is given for ``chunks`` within ``max_chars``: ``format_context(select_context())``."""
    return format_context(select_context(chunks, max_chars))
