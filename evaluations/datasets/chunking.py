"""Split documents into overlapping chunks, keeping the chunk -> document mapping.

Tokens are words and punctuation marks (``\\w+|[^\\w\\s]``), a tokenizer-free stand-in for model
tokens; ``chunk_size`` and ``chunk_overlap`` (``processing.*`` in the config) count them. A chunk's
text is the exact slice of the document between its first and last token, so nothing is rewritten.
A document shorter than ``chunk_size`` is one chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evaluations.core.types import Document

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_id: str  # "<doc_id>#<index>"
    doc_id: str
    index: int
    text: str


def chunk_text(text: str, chunk_size: int, chunk_overlap: int) -> list[str]:
    if chunk_overlap >= chunk_size:
        raise ValueError("chunk_overlap must be smaller than chunk_size")
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if len(spans) <= chunk_size:
        return [text.strip()] if text.strip() else []
    step = chunk_size - chunk_overlap
    pieces = []
    for start in range(0, len(spans), step):
        window = spans[start : start + chunk_size]
        pieces.append(text[window[0][0] : window[-1][1]])
        if start + chunk_size >= len(spans):
            break
    return pieces


def chunk_document(document: Document, chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    return [
        Chunk(chunk_id=f"{document.id}#{i}", doc_id=document.id, index=i, text=piece)
        for i, piece in enumerate(chunk_text(document.text, chunk_size, chunk_overlap))
    ]
