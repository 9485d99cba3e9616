"""Dataset rows read as questions with gold answers: one reader per format (RepliQA, CLAPNQ, SQuAD 2.0,
TechQA/WixQA, a generic dataset file, EVOUNA), and how a format is recognised from its first row.

Used by ``judging.labels.questions`` (controls) and ``judging.labels.weak_labels`` (hand labels that refer to these rows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluations.datasets.repliqa import NOT_FOUND  # RepliQA's gold for an unanswerable question
from evaluations.judging.basics.text import split_alternatives

__all__ = ["FORMATS", "NOT_FOUND", "QAItem", "READERS", "read_row"]


@dataclass(frozen=True)
class QAItem:
    """One question: gold alternatives (empty when unanswerable), the passage it is answered from ("" when none)."""

    question: str
    references: tuple[str, ...]
    context: str
    answerable: bool
    group: str
    source: str = ""


Row = dict[str, Any]
Reader = Callable[[Row, int], tuple[str, str, tuple[str, ...], bool, str]]  # key, question, refs, answerable, passage


def _texts(value: Any, key: str) -> list[str]:
    """The gold answers at ``key``: a list of texts, else a TypeError naming the key (a string would otherwise be
    read letter by letter, a number left out unseen)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"field {key!r} must be a list of texts, got {value!r:.60}")
    return value


def _text(value: Any, key: str) -> str:
    """The passage at ``key``: a text (absent or null: none), else a TypeError naming the key."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"field {key!r} must be a text, got {type(value).__name__}")
    return value or ""


def _impossible(row: Row) -> bool:
    """``is_impossible``: true, false or absent, else a TypeError (the string "false" is not false)."""
    value = row.get("is_impossible")
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"field 'is_impossible' must be true or false, got {value!r:.40}")
    return bool(value)


def _repliqa(row: Row, line: int):
    answer = str(row.get("answer") or "")
    answerable = answer.strip().lower() != NOT_FOUND
    return (str(row.get("question_id", row.get("sample_id", f"line:{line}"))), row["question"],
            (answer,) if answerable and answer.strip() else (), answerable,
            _text(row.get("document_extracted"), "document_extracted"))


def _clapnq(row: Row, line: int):
    golds = tuple(o["answer"] for o in row.get("output") or [] if (o.get("answer") or "").strip())
    passages = row.get("passages") or [{}]
    return str(row["id"]), row["input"], golds, bool(golds), _text(passages[0].get("text"), "passages.0.text")


def _squad(row: Row, line: int):
    golds = tuple(dict.fromkeys(t for t in _texts(row["answers"]["text"], "answers.text") if t.strip()))
    return (str(row["id"]), row["question"], golds, not _impossible(row) and bool(golds),
            _text(row.get("context"), "context"))


def _with_contexts(row: Row, line: int):
    answerable = not _impossible(row) and bool((row.get("answer") or "").strip())
    contexts = row.get("contexts") or []
    return (str(row.get("id", f"line:{line}")), row["question"], (row["answer"],) if answerable else (), answerable,
            _text(contexts[0].get("text"), "contexts.0.text") if contexts else "")


def _evouna(row: Row, line: int):
    return f"line:{line}", row["question"], tuple(split_alternatives(row["golden_answer"])), True, ""


def _generic(row: Row, line: int):
    answers = tuple(a for a in _texts(row.get("answers") or [], "answers") if a.strip())
    return str(row["id"]), row["query"], answers, bool(row.get("answerable", True)) and bool(answers), ""


#: format name -> (detect(first row), reader); the labelled formats are read by ``data.load_labelled``
FORMATS: dict[str, tuple[Callable[[Row], bool], Reader | None]] = {
    "labelled": (lambda r: "reference_answer" in r or "golden_answer" in r or "ref" in r, None),
    "repliqa": (lambda r: "document_extracted" in r and "question" in r, _repliqa),
    "clapnq": (lambda r: "input" in r and "output" in r, _clapnq),
    "squad2": (lambda r: isinstance(r.get("answers"), dict) and "question" in r, _squad),
    "techqa/wixqa": (lambda r: "contexts" in r and "question" in r and "answer" in r, _with_contexts),
    "generic": (lambda r: "query" in r and "id" in r, _generic),
}


#: format name -> its row reader: the dataset formats above, and EVOUNA's rows (question, golden_answer) read as
#: questions (``weak_labels`` resolves its references with these)
READERS: dict[str, Reader] = {**{name: r for name, (_, r) in FORMATS.items() if r is not None}, "evouna": _evouna}


def read_row(fmt: str, row: Row, line: int) -> tuple[str, str, tuple[str, ...], bool, str]:
    """(key, question, gold alternatives, answerable, passage) of one row of format ``fmt`` (``READERS``)."""
    return READERS[fmt](row, line)
