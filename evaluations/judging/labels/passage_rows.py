"""Labelled rows for the reference-free judges (``judge-agreement --judges faithfulness,context_relevance``).

A row (JSONL, JSON array or CSV, ``datasets.rows``) holds ``query``, ``context`` (a list of passage texts, or one
text; in CSV a JSON list), ``generated_answer`` (not needed for context relevance), ``label`` (the property the
judge measures: the answer is supported by the context / the passage is needed to answer / the answer addresses
the question; true/false, 1/0, yes/no; null = not applicable, left out of the agreement, in CSV/TSV an empty cell
or ``null`` too, as a cell cannot hold JSON's null) and optional ``id`` (the question: the resampling unit),
``system``, ``reference_answer`` (a text or a list of texts); other fields are ignored. A missing required field is
an error that names the row's field seemingly meant for it (another tool's name, ``ALIASES``, or a near spelling:
``question``, ``contexts``, ``lable``). ``query`` is a non-empty string and
``generated_answer`` a string (null or "" = no answer): a number or a boolean is an error, never read as text.
The hand-labelled sets of this project are read by their own loaders, detected from their first row
(``LOADERS``, by ``labels.formats``): faithfulness labels (``judging.labels.faith_labels``) and context-relevance labels
(``judging.labels.context_labels``). Every row becomes a ``LabelledAnswer`` whose ``passages`` are the context.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.datasets.rows import iter_rows, json_cell
from evaluations.judging.labels.context_labels import load_context_labels
from evaluations.judging.labels.faith_labels import load_faithfulness_labels
from evaluations.judging.labels.formats import CONTEXT, FAITHFULNESS, detect
from evaluations.judging.labels.rows import NOT_APPLICABLE_HINT, LabelledAnswer, parse_label

__all__ = ["LOADERS", "PassageRows", "load_passage_rows", "reads_answer"]

#: the judges that read a row's question and passages only, never its ``generated_answer``
ANSWERLESS = frozenset({"context_relevance"})


def reads_answer(judges: Iterable[str]) -> bool:
    """Whether one of ``judges`` reads the answer, so a row must have ``generated_answer``."""
    return any(j not in ANSWERLESS for j in judges)


_FIX = ('each row needs "query", "context" (a list of passages) and "label"; faithfulness and answer_relevance also '
        '"generated_answer"')
#: the suffixes of files whose cells are text (CSV/TSV): an empty or ``null`` label cell is JSON's null there
_TEXT_CELLS = (".csv", ".csv.gz", ".tsv", ".tsv.gz")


class PassageRows(list[LabelledAnswer]):
    """The labelled rows of a file, and how many rows were not applicable (label null, left out)."""

    not_applicable: int = 0

    def add(self, example: LabelledAnswer | None) -> None:
        """A labelled row, or None for a row labelled null (counted, with how many came before each labelled row)."""
        self._nulls_before = getattr(self, "_nulls_before", [])
        if example is None:
            self.not_applicable += 1
        else:
            self._nulls_before.append(self.not_applicable)
            self.append(example)

    def first(self, limit: int) -> PassageRows:
        """The first ``limit`` labelled rows, counting the null rows read before the next labelled one."""
        if limit >= len(self):
            return self
        kept = PassageRows(self[:limit])
        kept.not_applicable = self._nulls_before[limit]
        return kept


def _passages(value: Any, where: str) -> tuple[str, ...]:
    value = json_cell(value, where, "context")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v for v in value if v.strip())  # a blank passage has nothing to judge: as a span without text
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list):  # name the first item that is not a text, as JSON names it (never read as text)
        index, item = next((i, v) for i, v in enumerate(value, 1) if not isinstance(v, str))
        text = " (of a passage object, its text alone)" if isinstance(item, dict) else ""
        raise EvaluationsError(f"field 'context' must be a list of passage texts, but its item {index} is "
                               f"{_json_kind(item)}", where=where,
                               fix=f'write every passage as a string{text}: "context": ["passage 1", "passage 2"]')
    raise EvaluationsError(f"field 'context' must be a list of passage texts, got {_json_kind(value)}", where=where,
                           fix=_FIX)


def _json_kind(value: Any) -> str:
    """``value`` as a message names it: its JSON type and the value, cut to 60 characters."""
    kind = {bool: "a boolean", list: "a list", dict: "an object", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)
    return kind if value is None else f"{kind} ({json.dumps(value, ensure_ascii=False)[:60]})"


def _references(value: Any, where: str) -> tuple[str, ...]:
    """``reference_answer``: null/absent (none), one text, or a list of texts (alternatives)."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v for v in value if v)
    raise EvaluationsError(f"field 'reference_answer' must be a string or a list of strings, got {_json_kind(value)}",
                           where=where, fix='write the gold answer as text ("1889"), a list of texts, or null')


#: the required fields, and the names other evaluation tools give them (RAGAS, DeepEval, TruLens): a row missing
#: one of ours gets an error naming the field of the row that seems meant for it
ALIASES: dict[str, tuple[str, ...]] = {
    "query": ("question", "input", "user_input", "prompt"),
    "context": ("contexts", "retrieval_context", "retrieved_contexts", "passages", "passage"),
    "generated_answer": ("answer", "response", "actual_output", "output"),
    "label": ("labels", "human_label", "verdict"),
}


def _meant(row: dict[str, Any], key: str) -> str | None:
    """The field of ``row`` that seems meant for the missing ``key``: another tool's name for it, or a near spelling
    (``difflib``, ratio ≥ 0.8), else None."""
    import difflib

    others = [k for k in row if isinstance(k, str)]
    alias = next((k for k in others if k in ALIASES[key]), None)
    close = difflib.get_close_matches(key, others, n=1, cutoff=0.8)
    return alias or (close[0] if close else None)


def _example(row: dict[str, Any], where: str, n: int, needs_answer: bool = False) -> LabelledAnswer | None:
    for key in ("query", "context", "label", *(("generated_answer",) if needs_answer else ())):
        if key not in row:
            why = ' (the judges asked for read the answer; an empty answer is "")' if key == "generated_answer" else ""
            meant = _meant(row, key)
            raise EvaluationsError(f"missing field {key!r}{why}" + (f"; the row has {meant!r}" if meant else ""),
                                   where=where, fix=f"rename {meant!r} to {key!r}" if meant else _FIX)
    if not isinstance(row["query"], str) or not row["query"].strip():
        got = "an empty string" if isinstance(row["query"], str) else _json_kind(row["query"])
        raise EvaluationsError(f"field 'query' must be a non-empty string (the question), got {got}", where=where,
                               fix=_FIX)
    answer = row.get("generated_answer")
    if answer is not None and not isinstance(answer, str):
        quoted = f'; write it as text: "{answer}"' if isinstance(answer, (int, float)) and \
            not isinstance(answer, bool) else ""
        raise EvaluationsError(f"field 'generated_answer' must be a string (null or \"\" for no answer), got "
                               f"{_json_kind(answer)}", where=where, fix=f"{_FIX}{quoted}")
    passages = _passages(row["context"], where)  # checked on every row: a null label does not hide a bad context
    if row["label"] is None:
        return None
    return LabelledAnswer(
        question=row["query"], references=_references(row.get("reference_answer"), where),
        answer=answer or "", label=parse_label(row["label"], f"{where}: field 'label'", nullable=True),
        # the question a row belongs to (CV folds and bootstrap resample questions): as the classic rows
        # (``judging.labels.data``), its id, else its question's text
        group=str(row.get("group") or row.get("id") or row.get("query_id") or row["query"]), source=where,
        system=str(row.get("system") or ""),
        context="\n\n".join(passages), passages=passages)


def _generic(path: Path, needs_answer: bool) -> PassageRows:
    rows = PassageRows()
    cells = path.name.lower().endswith(_TEXT_CELLS)
    for line, row in iter_rows(path):
        where = f"{path}:{line}"
        if not isinstance(row, dict):
            raise EvaluationsError(f"expected a JSON object, got {type(row).__name__}", where=where, fix=_FIX)
        label = row.get("label")
        if cells and isinstance(label, str) and label.strip().lower() in ("", "null"):
            row = {**row, "label": None}  # a CSV cell cannot hold null: empty or "null" says not applicable
        rows.add(_example(row, where, line, needs_answer))
    return rows


def _labelled(rows: list[Any], path: Path) -> PassageRows:
    """Typed hand-label rows (query, context, label, group, source) as labelled answers."""
    out = PassageRows()
    for n, row in enumerate(rows):
        data = row.model_dump()
        out.add(_example({**data, "context": list(data["context"])}, str(data.get("source") or path), n))
    return out


#: format (``labels.formats``) -> load(path) -> typed rows; a file of another format is read as generic rows
LOADERS: dict[str, Callable[[Path], list[Any]]] = {
    FAITHFULNESS: load_faithfulness_labels,
    CONTEXT: load_context_labels,
}


def load_passage_rows(path: str | Path, limit: int | None = None, needs_answer: bool = False) -> PassageRows:
    """The labelled rows of ``path`` (module docstring); ``limit``: the first N labelled rows; ``needs_answer``: a
    judge asked for reads the answer, so a row without ``generated_answer`` is an error (not an empty answer)."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationsError("file not found", where=str(path), fix="give a JSONL/JSON/CSV file of labelled rows")
    load = LOADERS.get(detect(path) or "")
    rows = _generic(path, needs_answer) if load is None else _labelled(load(path), path)
    if not rows:
        what = f"all {rows.not_applicable} rows are labelled null (not applicable)" if rows.not_applicable else \
            "no labelled rows found"
        raise EvaluationsError(f"{what}: nothing to compare the judges with", where=str(path),
                               fix=f"{_FIX}, label true/false ({NOT_APPLICABLE_HINT})")
    return rows if limit is None else rows.first(limit)
