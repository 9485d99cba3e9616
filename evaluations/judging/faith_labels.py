"""Hand-labelled faithfulness rows (``datasets/labels/faithfulness.jsonl``), resolved against the shared data files.

A row holds our answer (a weak model's or an edit we made) and references into ``../shared/data``, never the
third-party text: ``{"id", "question_ref": {"dataset", "file", "key"}, "passage_refs": [{...}, ...],
"context_chars", "origin", "system", "answer", "label", "label_note", "weak_ref"}``. The context is the passage of
each ``passage_refs`` question, cut to ``context_chars`` (the cut the model was given). ``label``: true = every
claim of the answer is supported by the context, false = one is not, null = not applicable (refusal, empty answer,
no claim). See ``datasets/labels/FAITHFULNESS_RUBRIC.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evaluations.core.errors import EvaluationsError
from evaluations.datasets.rows import iter_rows
from evaluations.judging.labels import parse_label
from evaluations.judging.weak_labels import Question, default_shared_dir, read_questions

__all__ = ["FaithfulnessRow", "load_faithfulness_labels", "is_faithfulness_labels_file"]

_FIX = 'each row needs "id", "question_ref", "passage_refs" (refs {"dataset", "file", "key"}), "context_chars", "answer", "label"'


class FaithfulnessRow(BaseModel):
    """One answer with the passages it is judged against and the hand label (None = not applicable)."""

    model_config = ConfigDict(frozen=True)

    id: str
    query: str
    context: list[str]
    generated_answer: str
    label: bool | None
    system: str = ""
    origin: str = ""
    group: str  # the question ("dataset:key"): the unit of grouped cross-validation
    source: str = ""  # "file:line"


def is_faithfulness_labels_file(path: str | Path) -> bool:
    """The first row of ``path`` is a faithfulness-labels row (it has ``question_ref`` and ``passage_refs``)."""
    for _, row in iter_rows(Path(path)):
        return isinstance(row, dict) and "question_ref" in row and "passage_refs" in row
    return False


class _Resolver:
    """Questions of the shared files by (dataset, file, key), each file read once."""

    def __init__(self, shared: Path) -> None:
        self.shared = shared
        self.files: dict[tuple[str, str], dict[str, Question]] = {}

    def __call__(self, ref: Any, where: str) -> Question:
        try:
            dataset, file, key = ref["dataset"], ref["file"], str(ref["key"])
        except (KeyError, TypeError):
            raise EvaluationsError(f"malformed reference {ref!r}", where=where,
                                   fix='a reference is {"dataset", "file", "key"}') from None
        if (dataset, file) not in self.files:
            self.files[(dataset, file)] = {q.key: q for q in read_questions(self.shared, dataset, file)}
        question = self.files[(dataset, file)].get(key)
        if question is None:
            raise EvaluationsError(f"no question with key {key!r} in {file}", where=where,
                                   fix="check the shared data version; keys are row ids or line:N")
        return question


def _row(row: Any, where: str, resolve: _Resolver) -> FaithfulnessRow:
    if not isinstance(row, dict) or not {"question_ref", "passage_refs", "answer", "label"} <= row.keys():
        raise EvaluationsError("not a faithfulness-label row", where=where, fix=_FIX)
    refs, cut = row["passage_refs"], row.get("context_chars")
    if not isinstance(refs, list) or not refs:
        raise EvaluationsError("passage_refs must be a non-empty list", where=where, fix=_FIX)
    if cut is not None and (not isinstance(cut, int) or isinstance(cut, bool) or cut <= 0):
        raise EvaluationsError(f"context_chars {cut!r} is not a positive integer", where=where, fix=_FIX)
    question = resolve(row["question_ref"], f"{where}: question_ref")
    passages = [resolve(ref, f"{where}: passage_refs[{i}]").passage for i, ref in enumerate(refs)]
    if not all(passages):
        raise EvaluationsError("a passage reference points at a question without a passage", where=where,
                               fix="refer to a question that has a passage")
    label = None if row["label"] is None else parse_label(row["label"], f"{where}: label")
    ref = row["question_ref"]
    return FaithfulnessRow(
        id=str(row.get("id", where)), query=question.question, context=[p[:cut] for p in passages],
        generated_answer=str(row["answer"] or ""), label=label, system=str(row.get("system", "")),
        origin=str(row.get("origin", "")), group=f"{ref['dataset']}:{ref['key']}", source=where)


def load_faithfulness_labels(path: str | Path, shared_dir: str | Path | None = None) -> list[FaithfulnessRow]:
    """Every row of ``path`` (not-applicable rows included, ``label`` None) with its references resolved."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationsError("faithfulness labels file not found", where=str(path), fix="give an existing .jsonl file")
    resolve = _Resolver(Path(shared_dir) if shared_dir else default_shared_dir(path))
    return [_row(row, f"{path}:{line}", resolve) for line, row in iter_rows(path)]
