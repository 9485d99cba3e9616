"""Hand-labelled answers of weak systems (``datasets/labels/*.jsonl``), resolved against the shared data files.

A row holds our model's answer and a reference to its question, never the third-party text:
``{"id", "ref": {"dataset", "file", "key"}, "answerable", "model", "context", "answer", "qa_status", "label",
"label_note"}``. ``file`` is relative to the shared data folder; ``key`` is the row's id (``sample_id`` for the
RepliQA sample, ``id`` for CLAPNQ / SQuAD 2.0 / TechQA) or ``line:N`` (1-based) for rows without one (EVOUNA).
Gold answers as ``judging.labels.questions`` reads them (RepliQA, CLAPNQ, SQuAD 2.0, TechQA); EVOUNA ``golden_answer``
split on "/", keyed by line. Unanswerable rows have no gold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

from evaluations.datasets.rows import iter_rows
from evaluations.core.errors import EvaluationsError
from evaluations.judging.labels.rows import LabelledAnswer, parse_label
from evaluations.judging.labels.gold_rows import read_row

__all__ = ["Question", "read_questions", "question_index", "resolve_question", "first_row_has", "load_weak_labels",
           "is_weak_labels_file", "default_shared_dir"]


@dataclass(frozen=True)
class Question:
    dataset: str
    file: str
    key: str
    question: str
    references: tuple[str, ...]
    answerable: bool
    passage: str

    def ref(self) -> dict[str, str]:
        return {"dataset": self.dataset, "file": self.file, "key": self.key}


_READERS = {
    "repliqa": partial(read_row, "repliqa"), "clapnq": partial(read_row, "clapnq"),
    "squad2": partial(read_row, "squad2"), "techqa": partial(read_row, "techqa/wixqa"),
    "wixqa": partial(read_row, "techqa/wixqa"), "evouna": partial(read_row, "evouna"),
}


def _reader(dataset: str):
    for prefix, reader in _READERS.items():
        if dataset.startswith(prefix):
            return reader
    raise EvaluationsError(f"unknown dataset {dataset!r}", where="ref.dataset", fix=f"one of {sorted(_READERS)}")


@lru_cache(maxsize=32)
def _questions(shared: Path, dataset: str, file: str) -> tuple[Question, ...]:
    path = shared / file
    if not path.is_file():
        raise EvaluationsError("shared data file not found", where=str(path),
                               fix="put the shared data folder beside the repository (../shared/data)")
    reader, out = _reader(dataset), []
    for line, row in iter_rows(path):
        if dataset.startswith("evouna") and row.get("improper"):
            continue
        try:
            key, question, refs, answerable, passage = reader(row, line)
        except (KeyError, TypeError, IndexError) as exc:
            raise EvaluationsError(f"unexpected row shape ({exc})", where=f"{path}:{line}") from None
        out.append(Question(dataset, file, key, question, refs, answerable, passage))
    return tuple(out)


def read_questions(shared: Path, dataset: str, file: str) -> list[Question]:
    """Every question of a shared file as ``Question``s (EVOUNA: proper questions only)."""
    return list(_questions(Path(shared), dataset, file))


@lru_cache(maxsize=32)
def _index(shared: Path, dataset: str, file: str) -> Mapping[str, Question]:
    return MappingProxyType({q.key: q for q in _questions(shared, dataset, file)})


def question_index(shared: Path, dataset: str, file: str) -> Mapping[str, Question]:
    """key -> ``Question`` of a shared file, built once per process and file (read-only)."""
    return _index(Path(shared), dataset, file)


def resolve_question(shared: Path, ref: Any, where: str) -> Question:
    """The question a reference ``{"dataset", "file", "key"}`` names; one EvaluationsError at ``where`` for a
    malformed reference or an unknown key."""
    try:
        dataset, file, key = ref["dataset"], ref["file"], str(ref["key"])
    except (KeyError, TypeError):
        raise EvaluationsError(f"malformed reference {ref!r}: it needs dataset, file and key", where=where,
                               fix='a reference is {"dataset", "file", "key"}') from None
    question = question_index(shared, dataset, file).get(key)
    if question is None:
        raise EvaluationsError(f"no question with key {key!r} in {file}", where=where,
                               fix="check the shared data version; keys are row ids or line:N")
    return question


def first_row_has(path: str | Path, *keys: str) -> bool:
    """The first row of the JSON/JSONL file ``path`` is an object with every one of ``keys`` (a label file's kind)."""
    for _, row in iter_rows(Path(path)):
        return isinstance(row, dict) and all(k in row for k in keys)
    return False


def default_shared_dir(path: Path) -> Path:
    """``../shared/data`` beside the repository that holds the labels file (``<repo>/datasets/labels/F``)."""
    return Path(path).resolve().parents[2].parent / "shared" / "data"


def is_weak_labels_file(path: str | Path) -> bool:
    """The first row of ``path`` is a weak-labels row (it has ``ref`` and ``model``)."""
    return first_row_has(path, "ref", "model")


def load_weak_labels(path: str | Path, shared_dir: str | Path | None = None) -> list[LabelledAnswer]:
    """The labelled rows of ``path`` (rows whose label is null are skipped) as ``LabelledAnswer``s."""
    path = Path(path)
    shared = Path(shared_dir) if shared_dir else default_shared_dir(path)
    out = []
    for line, row in iter_rows(path):
        where = f"{path}:{line}"
        if not isinstance(row, dict) or "ref" not in row or "answer" not in row:
            raise EvaluationsError("not a labelled-answer row (needs ref, answer, label)", where=where)
        if row.get("label") is None:
            continue
        question = resolve_question(shared, row["ref"], where)
        out.append(LabelledAnswer(
            question=question.question, references=question.references, answer=str(row["answer"] or ""),
            label=parse_label(row["label"], f"{where}: label"), group=f"{question.dataset}:{question.key}",
            source=where, system=str(row.get("model", "")), context=question.passage,
            answerable=question.answerable,
        ))
    return out
