"""Questions with gold answers from any labelled or dataset file: what controls are built from.

``load_questions(path)`` detects the format from the first row's keys (``FORMATS``, first match wins):

* labelled answers (``query`` + ``reference_answer``, EVOUNA's ``golden_answer``, weak-system labels with ``ref``):
  read by ``judging.data.load_labelled``, one question per group;
* RepliQA (``document_extracted`` + ``question``; "The answer is not found in the document." = unanswerable);
* CLAPNQ (``input`` + ``output``; every non-empty ``output[i].answer``; none = unanswerable);
* SQuAD 2.0 (``answers.text``, ``context``, ``is_impossible``);
* TechQA (``is_impossible`` + ``contexts``) and WixQA (``article_ids`` + ``contexts``): ``answer``;
* the generic dataset file (``id`` + ``query`` + ``answers``, ``evaluations run``'s format).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluations.datasets.rows import iter_rows
from evaluations.core.errors import EvaluationsError
from evaluations.judging.text import split_alternatives

if TYPE_CHECKING:
    from evaluations.judging.data import LabelledAnswer

__all__ = ["QAItem", "FORMATS", "load_questions", "read_row"]

NOT_FOUND = "the answer is not found in the document."


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


def _repliqa(row: Row, line: int):
    answer = str(row.get("answer") or "")
    answerable = answer.strip().lower() != NOT_FOUND
    return (str(row.get("question_id", row.get("sample_id", f"line:{line}"))), row["question"],
            (answer,) if answerable and answer.strip() else (), answerable, row.get("document_extracted") or "")


def _clapnq(row: Row, line: int):
    golds = tuple(o["answer"] for o in row.get("output") or [] if (o.get("answer") or "").strip())
    passages = row.get("passages") or [{}]
    return str(row["id"]), row["input"], golds, bool(golds), passages[0].get("text", "")


def _squad(row: Row, line: int):
    golds = tuple(dict.fromkeys(t for t in row["answers"]["text"] if t.strip()))
    return str(row["id"]), row["question"], golds, not row.get("is_impossible") and bool(golds), row.get("context", "")


def _with_contexts(row: Row, line: int):
    answerable = not row.get("is_impossible") and bool((row.get("answer") or "").strip())
    contexts = row.get("contexts") or []
    return (str(row.get("id", f"line:{line}")), row["question"], (row["answer"],) if answerable else (), answerable,
            contexts[0].get("text", "") if contexts else "")


def _evouna(row: Row, line: int):
    return f"line:{line}", row["question"], tuple(split_alternatives(row["golden_answer"])), True, ""


def _generic(row: Row, line: int):
    answers = tuple(a for a in row.get("answers") or [] if isinstance(a, str) and a.strip())
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


def _from_labelled(path: Path, limit: int | None) -> list[QAItem]:
    from evaluations.judging.data import load_labelled

    return questions_of(load_labelled(path), limit)


def questions_of(examples: Iterable[LabelledAnswer], limit: int | None = None) -> list[QAItem]:
    """One ``QAItem`` per question (``group``) of labelled answers, from its first answer, in order; ``limit``:
    stop after that many answerable questions."""
    seen: dict[str, QAItem] = {}
    for e in examples:
        if e.group not in seen:
            seen[e.group] = QAItem(e.question, tuple(e.references), e.context, e.answerable, e.group, e.source)
            if limit is not None and sum(i.answerable for i in seen.values()) >= limit:
                break
    return list(seen.values())


def load_questions(path: str | Path, limit: int | None = None) -> list[QAItem]:
    """The questions of ``path`` (module docstring). ``limit``: stop after that many answerable questions
    (file order, deterministic). Unanswerable questions are kept (controls skip them and say how many)."""
    path = Path(path)
    fmt, out = None, []
    for line, row in iter_rows(path):
        where = f"{path}:{line}"
        if not isinstance(row, dict):
            raise EvaluationsError(f"expected a JSON object, got {type(row).__name__}", where=where)
        if fmt is None:
            fmt = next((name for name, (detect, _) in FORMATS.items() if detect(row)), None)
            if fmt is None:
                raise EvaluationsError(
                    "not a question file this tool knows", where=where,
                    fix="labelled answers (query, reference_answer), EVOUNA, RepliQA, CLAPNQ, SQuAD 2.0, TechQA, "
                        "WixQA or an `evaluations run` dataset file (id, query, answers)")
            if fmt == "labelled":
                return _from_labelled(path, limit)
        if row.get("improper"):
            continue
        try:
            key, question, refs, answerable, passage = read_row(fmt, row, line)
        except (KeyError, TypeError, IndexError, AttributeError) as exc:
            raise EvaluationsError(f"a {fmt} row without the expected field {exc}", where=where,
                                   fix="every row of one file must have the same format") from None
        if not isinstance(question, str) or not question.strip():
            raise EvaluationsError("empty or non-text question", where=where)
        out.append(QAItem(question, refs, passage or "", answerable, f"{path.name}:{key}", where))
        if limit is not None and sum(i.answerable for i in out) >= limit:
            break
    if not out:
        raise EvaluationsError("no questions found", where=str(path), fix="check the file's format")
    return out
