"""Which kind of labelled file is this? One registry of the formats, recognised from the file's first row.

Every reader asks here (``labels.read``, ``data.load_labelled``, ``passage_rows.load_passage_rows``,
``questions.load_control_questions``) instead of testing keys itself. First match wins:

* ``WEAK``: weak-system hand labels (``ref`` + ``model``), ``weak_labels``;
* ``FAITHFULNESS``: faithfulness hand labels (``question_ref`` + ``passage_refs``), ``faith_labels``;
* ``CONTEXT``: context-relevance hand labels (``question_ref`` + ``passage_ref``), ``context_labels``;
* ``EVOUNA``: EVOUNA questions with their systems' labelled answers (``golden_answer``), ``data``;
* ``CLASSIC``: classic labelled answers (``query`` + ``reference_answer``), ``data``;
* ``PASSAGES``: passage rows (``query`` + ``context``), ``passage_rows``.

Anything else is read as dataset rows with gold answers (``gold_rows``: RepliQA, CLAPNQ, SQuAD 2.0, TechQA, WixQA,
an ``evaluations run`` file), or refused by the reader with the formats it knows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evaluations.judging.labels.context_labels import is_context_labels_file
from evaluations.judging.labels.faith_labels import is_faithfulness_labels_file
from evaluations.judging.labels.weak_labels import first_row_has, is_weak_labels_file

__all__ = ["CLASSIC", "CONTEXT", "EVOUNA", "FAITHFULNESS", "FORMATS", "PASSAGES", "WEAK", "detect"]

WEAK, FAITHFULNESS, CONTEXT = "weak-system hand labels", "faithfulness hand labels", "context-relevance hand labels"
EVOUNA, CLASSIC, PASSAGES = "EVOUNA", "classic labelled answers", "passage rows"

#: format name -> detect(path), in detection order
FORMATS: dict[str, Callable[[Path], bool]] = {
    WEAK: is_weak_labels_file,
    FAITHFULNESS: is_faithfulness_labels_file,
    CONTEXT: is_context_labels_file,
    EVOUNA: lambda path: first_row_has(path, "golden_answer"),
    CLASSIC: lambda path: first_row_has(path, "query", "reference_answer"),
    PASSAGES: lambda path: first_row_has(path, "query", "context"),
}


def detect(path: str | Path) -> str | None:
    """The first format of ``FORMATS`` that recognises the file ``path``; None for another file (or none)."""
    path = Path(path)
    if not path.is_file():
        return None
    return next((name for name, recognises in FORMATS.items() if recognises(path)), None)
