"""Hand-labelled faithfulness rows (``datasets/labels/faithfulness.jsonl``), resolved against the shared data files.

A row holds references into ``../shared/data``, never the third-party text: ``{"id", "question_ref": {"dataset",
"file", "key"}, "passage_refs": [{...}, ...], "context_chars", "origin", "system", "answer" | "answer_from" (+
"edit"), "answer_sha256", "label", "label_note", "weak_ref"}``. The context is the passage of each ``passage_refs``
question, cut to ``context_chars`` (the cut the model was given). ``answer`` is text we wrote (a weak model's
answer, a paraphrase); an answer taken from a passage is stored as a recipe (``AnswerRecipe``): ``answer_from`` a
slice ``{"passage", "start", "end"}`` of a context passage (whitespace runs collapsed) or the question's gold answer
``{"gold": index}``, then ``edit`` ``{"old", "new"}`` replaces the first ``old`` by ``new`` (a swapped entity, number
or date). ``answer_sha256`` (hex sha256 of the UTF-8 answer) keeps the label attached to the text it was given for.
``label``: true = every claim of the answer is supported by the context, false = one is not, null = not applicable
(refusal, empty answer, no claim). See ``datasets/labels/FAITHFULNESS_RUBRIC.md``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator

from evaluations.core.errors import EvaluationsError
from evaluations.datasets.rows import iter_rows
from evaluations.judging.labels.rows import parse_label
from evaluations.judging.labels.weak_labels import Question, default_shared_dir, first_row_has, resolve_question

__all__ = ["FaithfulnessRow", "AnswerRecipe", "PassageSlice", "GoldRef", "AnswerEdit", "answer_sha256",
           "load_faithfulness_labels", "is_faithfulness_labels_file"]

_FIX = ('each row needs "id", "question_ref", "passage_refs" (refs {"dataset", "file", "key"}), "context_chars", '
        '"answer" or "answer_from", "label"')
_RECIPE_FIX = ('"answer_from" is {"passage": i, "start": a, "end": b} (a slice of context passage i, 0 <= a < b) or '
               '{"gold": i}; "edit" is {"old": "...", "new": "..."} with "old" in the slice; rebuild with '
               'scripts/faithfulness_answers.py')


def answer_sha256(answer: str) -> str:
    """The hex sha256 of the UTF-8 answer (the row's ``answer_sha256``)."""
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()


class PassageSlice(BaseModel):
    """Characters ``start:end`` of context passage ``passage`` (after the cut), whitespace runs collapsed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    passage: int = Field(ge=0)
    start: int = Field(ge=0)
    end: int

    @model_validator(mode="after")
    def _ordered(self) -> PassageSlice:
        if self.end <= self.start:
            raise ValueError(f"end {self.end} is not after start {self.start}")
        return self

    def text(self, context: Sequence[str]) -> str:
        if self.passage >= len(context) or self.end > len(context[self.passage]):
            raise ValueError(f"slice {self.start}:{self.end} of passage {self.passage} is outside the context")
        return " ".join(context[self.passage][self.start:self.end].split())


class GoldRef(BaseModel):
    """The question's gold answer number ``gold`` (0 = the first)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gold: int = Field(ge=0)

    def text(self, references: Sequence[str]) -> str:
        if self.gold >= len(references):
            raise ValueError(f"the question has {len(references)} gold answers, not {self.gold + 1}")
        return references[self.gold]


class AnswerEdit(BaseModel):
    """Replace the first ``old`` by ``new`` (a swapped entity, number or date: a few words, ours to store)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    old: str = Field(min_length=1)
    new: str


def _source_kind(value: Any) -> str:
    return "gold" if isinstance(value, GoldRef) or (isinstance(value, dict) and "gold" in value) else "slice"


class AnswerRecipe(BaseModel):
    """How an answer taken from the shared data is rebuilt from the row's context (no third-party text stored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answer_from: Annotated[Annotated[PassageSlice, Tag("slice")] | Annotated[GoldRef, Tag("gold")],
                           Discriminator(_source_kind)]
    edit: AnswerEdit | None = None

    def apply(self, context: Sequence[str], references: Sequence[str]) -> str:
        """The answer; ValueError when the recipe does not fit the context / gold answers."""
        source = self.answer_from
        text = source.text(context) if isinstance(source, PassageSlice) else source.text(references)
        if self.edit is None:
            return text
        if self.edit.old not in text:
            raise ValueError(f"edit.old {self.edit.old!r} does not occur in the answer taken")
        return text.replace(self.edit.old, self.edit.new, 1)


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
    return first_row_has(path, "question_ref", "passage_refs")


def _answer(row: dict, context: list[str], question: Question, where: str) -> str:
    """The row's answer: stored, or rebuilt from its recipe; checked against ``answer_sha256`` when given."""
    if "answer_from" in row:
        try:
            recipe = AnswerRecipe.model_validate({k: row[k] for k in ("answer_from", "edit") if k in row})
            answer = recipe.apply(context, question.references)
        except (ValidationError, ValueError) as err:
            detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()) \
                if isinstance(err, ValidationError) else str(err)
            raise EvaluationsError(f"malformed answer recipe ({detail})", where=where, fix=_RECIPE_FIX) from None
    else:
        answer = str(row["answer"] or "")
    digest = row.get("answer_sha256")
    if digest is not None and digest != answer_sha256(answer):
        raise EvaluationsError("the answer does not match answer_sha256 (the label belongs to another text)",
                               where=where, fix="check the shared data version and the row's recipe; rebuild with "
                               "scripts/faithfulness_answers.py --labels")
    return answer


def _row(row: Any, where: str, resolve: Callable[[Any, str], Question]) -> FaithfulnessRow:
    if not isinstance(row, dict) or not {"question_ref", "passage_refs", "label"} <= row.keys() \
            or ("answer" in row) == ("answer_from" in row):
        raise EvaluationsError("not a faithfulness-label row", where=where, fix=_FIX + " (exactly one of the two)")
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
    ref, context = row["question_ref"], [p[:cut] for p in passages]
    return FaithfulnessRow(
        id=str(row.get("id", where)), query=question.question, context=context,
        generated_answer=_answer(row, context, question, where), label=label, system=str(row.get("system", "")),
        origin=str(row.get("origin", "")), group=f"{ref['dataset']}:{ref['key']}", source=where)


def load_faithfulness_labels(path: str | Path, shared_dir: str | Path | None = None) -> list[FaithfulnessRow]:
    """Every row of ``path`` (not-applicable rows included, ``label`` None) with its references resolved."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationsError("faithfulness labels file not found", where=str(path), fix="give an existing .jsonl file")
    resolve = partial(resolve_question, Path(shared_dir) if shared_dir else default_shared_dir(path))
    return [_row(row, f"{path}:{line}", resolve) for line, row in iter_rows(path)]
