"""Hand-labelled (question, passage) pairs for context relevance (``datasets/labels/context_relevance.jsonl``).

A row holds references into the shared data folder, never the third-party text::

    {"id": "cr-0001", "question_ref": {"dataset", "file", "key"}, "passage_ref": {"dataset", "file", "key"},
     "passage_start": 0 (optional), "passage_chars": N, "kind": "qrels|own|own_window|same_article|tfidf_negative",
     "source_label": bool, "label": bool | null, "label_note": str}

``file`` is relative to the shared data folder. A BEIR folder is referred to by its qrels split for questions
(``scifact/qrels/test.tsv``, key = query id) and by its corpus for passages (``scifact/corpus.jsonl.gz``, key =
document id; text = ``title + "\\n" + text`` as ``datasets.beir`` builds it). Any other file is a question file
read by ``judging.labels.weak_labels.read_questions``: the question is that row's question, the passage that row's own
passage (SQuAD context, CLAPNQ passage, TechQA/WixQA ``contexts[0]``, RepliQA document). The judge sees
``passage[passage_start : passage_start + passage_chars]``. ``label`` is the hand label (rubric:
``datasets/labels/CONTEXT_RUBRIC.md``); ``source_label`` is the dataset's own relevance, kept for comparison.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evaluations.core.errors import EvaluationsError
from evaluations.datasets import beir
from evaluations.datasets.rows import iter_rows
from evaluations.datasets.spec import LoadOptions
from evaluations.judging.labels.rows import parse_label
from evaluations.judging.labels.weak_labels import Question, default_shared_dir, first_row_has, question_index

__all__ = ["ContextRow", "load_context_labels", "is_context_labels_file"]

_MISSING_FIX = "put the shared data folder beside the repository (../shared/data) or pass shared_dir"


class ContextRow(BaseModel):
    """One labelled pair in the judge-agreement shape (``context`` holds the one passage as the judge sees it)."""

    model_config = ConfigDict(frozen=True)

    id: str
    query: str
    context: list[str]
    label: bool
    source_label: bool
    kind: str
    dataset: str
    group: str  # the question ("dataset:key"): rows of one question stay in one CV fold
    source: str = ""  # "file:line"


@lru_cache(maxsize=8)
def _beir(folder: Path, split: str) -> tuple[dict[str, str], dict[str, str]]:
    corpus = beir.load(LoadOptions(source=folder, split=split))
    return {q.id: q.text for q in corpus.queries}, {d.id: d.text for d in corpus.documents}


def _beir_split(shared: Path, file: str) -> tuple[Path, str] | None:
    """(folder, split) for ``<folder>/qrels/<split>.tsv[.gz]``; None for any other file."""
    path = Path(file)
    if path.parent.name != "qrels":
        return None
    return shared / path.parent.parent, path.name.split(".")[0]


def _require(path: Path) -> None:
    if not path.exists():
        raise EvaluationsError("shared data file not found", where=str(path), fix=_MISSING_FIX)


def _question(shared: Path, ref: dict[str, str]) -> str | None:
    beir_split = _beir_split(shared, ref["file"])
    if beir_split:
        _require(shared / ref["file"])
        return _beir(*beir_split)[0].get(ref["key"])
    question = _indexed(shared, ref)
    return question.question if question else None


def _passage(shared: Path, ref: dict[str, str]) -> str | None:
    path = Path(ref["file"])
    if path.name.startswith("corpus."):
        _require(shared / path)
        qrels = sorted((shared / path.parent / "qrels").glob("*.tsv*"))
        if not qrels:
            raise EvaluationsError("no qrels beside the corpus", where=str(shared / path.parent), fix=_MISSING_FIX)
        return _beir(shared / path.parent, qrels[0].name.split(".")[0])[1].get(ref["key"])
    question = _indexed(shared, ref)
    return question.passage if question else None


def _indexed(shared: Path, ref: dict[str, str]) -> Question | None:
    _require(shared / ref["file"])
    return question_index(shared, ref["dataset"], ref["file"]).get(ref["key"])


def _ref(row: dict[str, Any], name: str, where: str) -> dict[str, str]:
    ref = row.get(name)
    if not isinstance(ref, dict) or not all(isinstance(ref.get(k), (str, int)) for k in ("dataset", "file", "key")):
        raise EvaluationsError(f"{name} needs dataset, file and key", where=where,
                               fix='e.g. {"dataset": "squad2", "file": "squad2_dev_cs224n/questions.jsonl.gz", '
                                   '"key": "<row id>"}')
    return {k: str(ref[k]) for k in ("dataset", "file", "key")}


def _int(row: dict[str, Any], name: str, where: str, default: int | None = None) -> int:
    value = row.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise EvaluationsError(f"{name} must be a non-negative integer, got {value!r}", where=where,
                               fix="the character offset / length of the cut the judge sees")
    return value


def is_context_labels_file(path: str | Path) -> bool:
    """The first row of ``path`` is a context-relevance label row (it has ``question_ref`` and ``passage_ref``)."""
    return first_row_has(path, "question_ref", "passage_ref")


def load_context_labels(path: str | Path, shared_dir: str | Path | None = None) -> list[ContextRow]:
    """The labelled rows of ``path`` (rows whose label is null are skipped), resolved against the shared data."""
    path = Path(path)
    shared = Path(shared_dir) if shared_dir else default_shared_dir(path)
    out = []
    for line, row in iter_rows(path):
        where = f"{path}:{line}"
        if not isinstance(row, dict) or "id" not in row:
            raise EvaluationsError("not a context-relevance row (needs id, question_ref, passage_ref, label)",
                                   where=where)
        question_ref, passage_ref = _ref(row, "question_ref", where), _ref(row, "passage_ref", where)
        start, chars = _int(row, "passage_start", where, 0), _int(row, "passage_chars", where)
        source_label = parse_label(row.get("source_label"), f"{where}: source_label")
        if row.get("label") is None:
            continue
        label = parse_label(row["label"], f"{where}: label")
        question = _question(shared, question_ref)
        if question is None:
            raise EvaluationsError(f"no question with key {question_ref['key']!r} in {question_ref['file']}",
                                   where=where, fix="check the shared data version; keys are row / query ids")
        passage = _passage(shared, passage_ref)
        if passage is None:
            raise EvaluationsError(f"no passage with key {passage_ref['key']!r} in {passage_ref['file']}",
                                   where=where, fix="check the shared data version; keys are row / document ids")
        if chars == 0 or start + chars > len(passage):
            raise EvaluationsError(f"the cut [{start}:{start + chars}] does not fit the passage ({len(passage)} "
                                   "characters)", where=where, fix="rebuild the pairs: python scripts/context_pairs.py")
        out.append(ContextRow(
            id=str(row["id"]), query=question, context=[passage[start:start + chars]], label=label,
            source_label=source_label, kind=str(row.get("kind", "")), dataset=question_ref["dataset"],
            group=f"{question_ref['dataset']}:{question_ref['key']}", source=where,
        ))
    return out
