"""The exact context a QA model is given: which chunks, in which order, cut to the character budget.

``select_context(chunks, max_chars)`` keeps whole chunks in rank order while their blocks fit; the first chunk
that does not fit is cut to the remaining room (when at least a few characters remain) and the rest dropped,
so the best-ranked text always survives. Each block is ``[chunk_id] text`` with the text's whitespace
collapsed, and blocks are joined by a blank line: ``len(format_context(select_context(c, m))) <= m``.

Coverage, context waste and the recorded ``context_text`` are all computed on this selection, never on the
whole retrieved list.

The QA conversation's opening is here too, below the judges that continue it: the system prompt
(``QA_INSTRUCTIONS``) and the first user turn (``qa_prompt``: the context, then the question). The QA agent
(``pipeline.qa_agent``) asks them; the served context-relevance and faithfulness judges in their conversation form
(``judging.basics.passages.opening``) ask their yes/no questions as the next user turn after them, word for word
the same, so a server that keeps the last prompt's prefix (llama.cpp, Ollama) reads the context once.
"""

from __future__ import annotations

from evaluations.core.types import RetrievedChunk

_SEP = "\n\n"
QA_INSTRUCTIONS = (
    "Answer the question using only the context below. "
    "Each context passage starts with its id in square brackets; put the ids of the passages you used in "
    "cited_ids. If the context does not contain the answer, answer \"I don't know\" with confidence 0. "
    "Keep the answer short."
)


def qa_prompt(question: str, context: str) -> str:
    """The QA agent's first user turn: ``context`` (``context_text``), then the question."""
    return f"Context:\n{context}\n\nQuestion: {question}"


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
