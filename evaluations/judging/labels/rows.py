"""A human-labelled answer and the label words accepted for it (``judging.labels.data`` reads the files)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluations.core.errors import EvaluationsError

_TRUE = {"true", "1", "correct", "yes", "y", "t"}
_FALSE = {"false", "0", "incorrect", "no", "n", "f", "wrong"}


@dataclass(frozen=True, slots=True)
class LabelledAnswer:
    """One generated answer with its gold alternatives and the human verdict (True = correct)."""

    question: str
    references: tuple[str, ...]
    answer: str
    label: bool
    group: str  # resampling/CV unit: the question (one question has several answers)
    source: str = ""  # "file:line" for messages
    system: str = ""  # which system produced the answer, when known
    context: str = field(default="", repr=False)
    answerable: bool = True  # False: the question has no answer in its source; a refusal is the correct reply
    passages: tuple[str, ...] = field(default=(), repr=False)  # the retrieved passages (reference-free judges)


#: what a reference-free row's label may be besides true/false (``judging.labels.passage_rows``), said in the fix
NOT_APPLICABLE_HINT = "null (in CSV an empty cell or null) = not applicable, left out"


def parse_label(value: Any, where: str, *, nullable: bool = False) -> bool:
    """bool, 0/1 or a word ("correct"/"incorrect", "true"/"false", "yes"/"no") -> bool, else EvaluationsError.
    ``nullable``: the file's rows may be labelled not applicable (the caller reads null before this), so the fix
    says how; a correctness file has no such label (a row without one is removed or labelled)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    words = 'true/false, 1/0, yes/no or "correct"/"incorrect"'
    raise EvaluationsError(
        f"label {value!r} is not a {'true/false' if nullable else 'correctness'} label",
        where=where,
        fix=f"use {words}; {NOT_APPLICABLE_HINT}" if nullable else
        f"use {words}; every row of a correctness file needs one (remove a row nobody labelled)",
    )
