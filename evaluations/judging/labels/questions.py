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

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from evaluations.datasets.rows import iter_rows
from evaluations.core.errors import EvaluationsError
from evaluations.judging.labels.gold_rows import FORMATS, QAItem, read_row

if TYPE_CHECKING:
    from evaluations.judging.labels.data import LabelledAnswer

__all__ = ["QAItem", "FORMATS", "first_answerable", "load_questions", "read_row"]


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
