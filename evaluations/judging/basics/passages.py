"""One retrieved item as the reference-free judges see it (faithfulness, context relevance).

A ``Passage`` is the text a system retrieved for a question and the id it has in the system's corpus ("" when the
system gave none). Its rank is its position in the list the judge is given (1-based in verdicts). The wiring
(evaluators, ``score --format log``) builds passages from retrieved items, looking the text up in the corpus by id
when a system returns ids only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel

__all__ = ["ASK_ROOM", "Passage", "as_passages", "check_conversation_form", "opening"]

#: characters of a conversation (``opening``) kept for the question asked after it (a claim, a passage's id and
#: the wording): the same for every question, so the questions of a case share one opening
ASK_ROOM = 300


class Passage(BaseModel):
    """One retrieved item: its id ("" when unknown) and its text."""

    id: str = ""
    text: str


def as_passages(items: Iterable[str | Passage]) -> list[Passage]:
    """Passages from texts or passages (a bare text gets id "")."""
    return [item if isinstance(item, Passage) else Passage(id="", text=str(item)) for item in items]


def opening(question: str, passages: Sequence[Passage], index: int, chars: int) -> str:
    """The QA conversation's first user turn (``core.context.qa_prompt``) in which a served checker's conversation
    form (context relevance's, faithfulness's) asks about passage ``index``: the passages with text that fit
    ``chars`` characters of conversation beside the question and ``ASK_ROOM`` for the ask, in rank order, share one
    opening: the QA agent's own over them, so a server that keeps the last prompt's prefix reads it once for the
    answer and every question; a passage that does not fit whole is read in an opening of its own (its text alone,
    cut to the budget). Whatever is asked after it, every question of a case (context relevance's, faithfulness's)
    continues the same opening."""
    from evaluations.core.context import context_text, format_context, qa_prompt, select_context
    from evaluations.core.types import RetrievedChunk

    budget = max(chars - len(question) - ASK_ROOM - 40, 200)
    chunks = {i: RetrievedChunk(chunk_id=p.id, doc_id=p.id, text=p.text) for i, p in enumerate(passages)
              if p.text.strip()}
    kept = select_context(list(chunks.values()), budget)
    whole = {i for (i, chunk), held in zip(chunks.items(), kept) if held.text == " ".join(chunk.text.split())}
    if index in whole:
        return qa_prompt(question, format_context(kept))
    return qa_prompt(question, context_text([chunks[index]], budget))


def check_conversation_form(judge: str, served: bool, other_form: str, shipped: str) -> None:
    """A judge's parameters of the conversation form (fitted through a served checker) given to a checker that is not
    served: one ``EvaluationsError`` naming judge.model, the judge's ``other_form`` and its ``shipped`` file."""
    if served:
        return
    from evaluations.core.errors import EvaluationsError

    raise EvaluationsError(f"{judge} parameters of the conversation form need a served checker", where="judge.model",
                           fix=f"set judge.model to a served model, or use parameters of the {other_form} form "
                           f"(the shipped judges/{shipped})")
