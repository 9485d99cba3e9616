"""Questions with gold answers from any labelled or dataset file: what controls are built from.

``load_questions(path)`` detects the format from the first row's keys (``FORMATS``, first match wins):

* labelled answers (``query`` + ``reference_answer``, EVOUNA's ``golden_answer``, weak-system labels with ``ref``):
  read by ``judging.labels.data.load_labelled``, one question per group;
* RepliQA (``document_extracted`` + ``question``; "The answer is not found in the document." = unanswerable);
* CLAPNQ (``input`` + ``output``; every non-empty ``output[i].answer``; none = unanswerable);
* SQuAD 2.0 (``answers.text``, ``context``, ``is_impossible``);
* TechQA (``is_impossible`` + ``contexts``) and WixQA (``article_ids`` + ``contexts``): ``answer``;
* the generic dataset file (``id`` + ``query`` + ``answers``, ``evaluations run``'s format).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluations.datasets.rows import iter_rows, json_cell
from evaluations.core.errors import EvaluationsError
from evaluations.judging.labels.gold_rows import FORMATS, QAItem, read_row

if TYPE_CHECKING:
    from evaluations.judging.labels.data import LabelledAnswer

__all__ = ["QAItem", "FORMATS", "ControlQuestions", "first_answerable", "load_control_questions", "load_questions",
           "read_row"]


def _from_labelled(path: Path, limit: int | None) -> list[QAItem]:
    from evaluations.judging.labels.data import load_labelled

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


def first_answerable(items: list[QAItem], limit: int | None) -> list[QAItem]:
    """``items`` up to and including the ``limit``-th answerable one (what ``load_questions(limit=...)`` keeps)."""
    if limit is None:
        return list(items)
    seen = 0
    for k, item in enumerate(items):
        seen += item.answerable
        if seen >= limit:
            return items[:k + 1]
    return list(items)


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
        except KeyError as exc:
            raise EvaluationsError(f"a {fmt} row without the expected field {exc}", where=where,
                                   fix="every row of one file must have the same format") from None
        except (TypeError, IndexError, AttributeError) as exc:
            raise EvaluationsError(f"a {fmt} row with a value of the wrong type ({exc})", where=where,
                                   fix=f"correct it on that line: every row is read as a {fmt} row, the first "
                                       "row's format") from None
        if not isinstance(question, str) or not question.strip():
            raise EvaluationsError(f"empty or non-text question (got {question!r:.60})", where=where,
                                   fix="write each question as non-empty text")
        out.append(QAItem(question, refs, passage or "", answerable, f"{path.name}:{key}", where))
        if limit is not None and sum(i.answerable for i in out) >= limit:
            break
    if not out:
        raise EvaluationsError("no questions found", where=str(path), fix="check the file's format")
    return out


# -- the questions of judge-check's files (controls are built from them) ----------------------------------
@dataclass
class ControlQuestions:
    """The questions of the files judge-check was given (``load_control_questions``): each distinct file, in the
    order given, with its questions in file order (their groups qualified by the file, so that two files' ids never
    merge); ``notes``: what was read once instead of twice, to say on stderr."""

    files: list[tuple[str, list[QAItem]]]
    notes: list[str] = field(default_factory=list)

    def first(self, limit: int | None) -> list[QAItem]:
        """Each file's questions up to its ``limit``-th answerable one (``questions.first_answerable``)."""
        return [item for _, items in self.files for item in first_answerable(items, limit)]

    def every(self) -> list[QAItem]:
        """Every question of every file."""
        return [item for _, items in self.files for item in items]


def load_control_questions(files: Sequence[str | Path]) -> ControlQuestions:
    """The questions of ``files`` (``load_questions``; classic labelled rows by ``_gold_rows``), each
    question once:

    * a file given twice (by the same or another path) is an error, as in judge-agreement and calibrate-judge:
      counting its questions twice would double n and narrow every interval with no new evidence;
    * questions are told apart by file and id: two files may both number their questions from 1;
    * within a file, an id given to two different questions is an error naming both lines (they would be counted
      as one question, and neither could be the other's "other question"); rows repeating a question (same id,
      same question) are read once, with a note for a dataset file (one row per question), silently for labelled
      rows (one row per answer)."""
    out = ControlQuestions([])
    seen: dict[object, str] = {}
    for file in files:
        path = Path(file)
        try:
            stat = os.stat(path)
            key: object = (stat.st_dev, stat.st_ino)
        except OSError:
            key = str(path)  # the loader says what is wrong with it
        if key in seen:  # as judge-agreement and calibrate-judge refuse it (``cli.judge_common.load_answers``)
            same = "" if seen[key] == str(file) else f" (also as {seen[key]})"
            raise EvaluationsError(f"the file is given twice{same}: its questions would be counted twice",
                                   where=str(file), fix="give each file once")
        seen[key] = str(file)
        items = _gold_rows(path) if _is_gold_rows(path) else _one_per_id(path, load_questions(path), out.notes)
        out.files.append((str(file), [replace(item, group=f"{file}::{item.group}") for item in items]))
    return out


def _is_gold_rows(path: Path) -> bool:
    """The first row is a classic labelled row (``query`` + ``reference_answer``), not one of the hand labels."""
    from evaluations.judging.labels.formats import CLASSIC, detect

    return detect(path) == CLASSIC


def _two_questions(key: str, first: QAItem, item: QAItem) -> EvaluationsError:
    return EvaluationsError(
        f"id {key!r} is given to two different questions: {first.question!r:.70} at {first.source} and "
        f"{item.question!r:.70} here (they would be counted as one question)", where=item.source,
        fix="give each question its own id; a row repeating a question repeats its id and its question")


def _one_per_id(path: Path, items: list[QAItem], notes: list[str]) -> list[QAItem]:
    """The questions of a dataset file (``load_questions``), one per id: a repeated row (same id and question) is
    read once and said in ``notes``; an id given to two different questions is an error naming both lines."""
    first: dict[str, QAItem] = {}
    repeated = 0
    for item in items:
        seen = first.setdefault(item.group, item)
        if seen is item:
            continue
        if seen.question.strip() != item.question.strip():
            raise _two_questions(item.group.removeprefix(f"{path.name}:"), seen, item)
        repeated += 1
    if repeated:
        notes.append(f"{path}: {repeated} row(s) repeat the id and question of an earlier row: read once")
    return list(first.values())


_GOLD_FIX = ('each row needs "query" (the question) and "reference_answer" (a text or a list of texts); "id", '
             '"context" are optional; "generated_answer" and "label" are not read')


def _gold(value: Any, where: str) -> tuple[str, ...]:
    """``reference_answer``: a text or a list of texts (in CSV a JSON list); absent, null or blank: no gold."""
    value = json_cell(value, where, "reference_answer")
    if value is None or isinstance(value, str):
        value = [value or ""]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EvaluationsError(f"field 'reference_answer' must be a text or a list of texts, got {value!r:.60}",
                               where=where, fix=_GOLD_FIX)
    return tuple(dict.fromkeys(v.strip() for v in value if v.strip()))


def _context(value: Any, where: str) -> str:
    """``context``: one text or a list of passage texts (in CSV a JSON list), joined; absent or null: none."""
    value = json_cell(value, where, "context")
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n\n".join(value)
    raise EvaluationsError(f"field 'context' must be a text or a list of passage texts, got {value!r:.60}",
                           where=where, fix=_GOLD_FIX)


def _gold_rows(path: Path) -> list[QAItem]:
    """The questions of a file of classic labelled rows (``judging.labels.data``'s format, JSONL/JSON/CSV). Controls bring
    their own answers, so a question and its gold are enough: ``generated_answer`` and ``label`` are neither needed
    nor read. One question per ``id`` (else ``query_id``, else the question's text, as ``judging.labels.data`` groups),
    from its first row with gold; a question without gold (absent, null or blank) counts as unanswerable (skipped
    by the controls, and not towards ``--limit``). An id given to two different questions is an error."""
    first: dict[str, QAItem] = {}
    for line, row in iter_rows(path):
        where = f"{path}:{line}"
        if not isinstance(row, dict):
            raise EvaluationsError(f"expected a JSON object, got {type(row).__name__}", where=where, fix=_GOLD_FIX)
        question = row.get("query")
        if not isinstance(question, str) or not question.strip():
            raise EvaluationsError(f"field 'query' must be a non-empty text (the question), got {question!r:.60}",
                                   where=where, fix=_GOLD_FIX)
        refs = _gold(row.get("reference_answer"), where)
        key = str(row.get("id") or row.get("query_id") or question)
        item = QAItem(question, refs, _context(row.get("context"), where), bool(refs), key, where)
        seen = first.setdefault(key, item)
        if seen is not item:
            if seen.question.strip() != question.strip():
                raise _two_questions(key, seen, item)
            if refs and not seen.references:
                first[key] = replace(item, source=seen.source)
    if not first:
        raise EvaluationsError("no questions found", where=str(path), fix=_GOLD_FIX)
    return list(first.values())
