"""One retrieved item as the reference-free judges see it (faithfulness, context relevance).

A ``Passage`` is the text a system retrieved for a question and the id it has in the system's corpus ("" when the
system gave none). Its rank is its position in the list the judge is given (1-based in verdicts). The wiring
(evaluators, ``score --format log``) builds passages from retrieved items, looking the text up in the corpus by id
when a system returns ids only.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

__all__ = ["Passage", "as_passages"]


class Passage(BaseModel):
    """One retrieved item: its id ("" when unknown) and its text."""

    id: str = ""
    text: str


def as_passages(items: Iterable[str | Passage]) -> list[Passage]:
    """Passages from texts or passages (a bare text gets id "")."""
    return [item if isinstance(item, Passage) else Passage(id="", text=str(item)) for item in items]
