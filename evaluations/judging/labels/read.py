"""The one reader of labelled rows: every file format the project accepts, in one registry, and the views the judge
tools read of them.

The formats (``labels.formats.FORMATS``, first match wins, from the file's first row):

==========================  ============================================  ==========================================
format                      recognised by                                 read by
==========================  ============================================  ==========================================
weak-system hand labels     ``ref`` + ``model``                           ``weak_labels`` (answers; questions)
faithfulness hand labels    ``question_ref`` + ``passage_refs``           ``faith_labels`` (passage rows)
context-relevance labels    ``question_ref`` + ``passage_ref``            ``context_labels`` (passage rows)
EVOUNA                      ``golden_answer``                             ``data`` (answers; questions)
classic labelled answers    ``query`` + ``reference_answer``              ``data`` (answers); ``questions`` (gold)
passage rows                ``query`` + ``context``                       ``passage_rows`` (passage rows)
dataset rows with gold      RepliQA, CLAPNQ, SQuAD 2.0, TechQA, WixQA,    ``gold_rows`` (questions)
                            an ``evaluations run`` file
==========================  ============================================  ==========================================

The views (each file once: a file given twice is an error, its rows would be counted twice):

* ``read_answers(files)``: labelled answers (``LabelledAnswer``) for ``judge-agreement``, ``calibrate-judge`` and
  ``score --format classic``; ``passages=True``: rows with passages for the reference-free judges;
* ``read_questions(files)``: questions with gold answers (``QAItem``) for ``judge-check``'s controls.

Every reader names the file, the line and the field of a bad row, and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from evaluations.core.errors import EvaluationsError
from evaluations.judging.labels.data import load_labelled
from evaluations.judging.labels.passage_rows import PassageRows, load_passage_rows, reads_answer
from evaluations.judging.labels.questions import ControlQuestions, load_control_questions
from evaluations.judging.labels.rows import LabelledAnswer

__all__ = ["read_answers", "read_questions"]


def _each_once(files: Iterable[str | Path]) -> list[str]:
    """``files`` as given, each an existing file given once (by any path): else one error naming it."""
    seen: dict[Path, str] = {}
    for file in map(str, files):
        path = Path(file)
        if not path.is_file():
            raise EvaluationsError("is a folder, expected a file" if path.is_dir() else "file not found", where=file,
                                   fix="check the path of the labelled file (the command's FILES arguments)")
        if path.resolve() in seen:
            same = "" if seen[path.resolve()] == file else f" (also as {seen[path.resolve()]})"
            raise EvaluationsError(f"the file is given twice{same}: its rows would be counted twice",
                                   where=file, fix="give each labelled file once")
        seen[path.resolve()] = file
    return list(seen.values())


def read_answers(files: Sequence[str | Path], *, limit: int | None = None, passages: bool = False,
                 judges: Iterable[str] = (), nulls: dict[str, int] | None = None,
                 note: Callable[[str], None] | None = None) -> list[LabelledAnswer]:
    """The labelled answers of ``files``, at most ``limit`` per file; ``passages``: rows with passages for the
    reference-free ``judges`` (a row without ``generated_answer`` is an error when one of them reads the answer;
    rows labelled null are not applicable and left out: ``note`` is told, ``nulls`` gets each file's count)."""
    examples: list[LabelledAnswer] = []
    for file in _each_once(files):
        if not passages:
            examples.extend(load_labelled(file, limit=limit))
            continue
        rows: PassageRows = load_passage_rows(file, limit=limit, needs_answer=reads_answer(judges))
        if rows.not_applicable and note is not None:
            note(f"{file}: {rows.not_applicable} row(s) labelled not applicable (null) left out")
        if nulls is not None:
            nulls[file] = rows.not_applicable
        examples.extend(rows)
    return examples


def read_questions(files: Sequence[str | Path]) -> ControlQuestions:
    """The questions with gold answers of ``files`` (``questions.load_control_questions``: each question once,
    told apart by file and id)."""
    return load_control_questions(files)
