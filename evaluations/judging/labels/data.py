"""Labelled answers for judge agreement and calibration: loaders for two formats.

* classic: one record per answer with ``query``, ``generated_answer``, ``reference_answer``
  (a string, or a list of alternatives; may be absent for the reference-free judges, such as ``answer_relevance``,
  whose ``label`` is then the property they measure), human ``label`` (bool, 0/1, "correct"/"incorrect",
  "true"/"false", "yes"/"no") and optional ``context`` (a string or a list of passages) / ``id``. JSONL
  (``.jsonl``, ``.jsonl.gz``),
  a JSON array (``.json``) or CSV (``.csv``; ``reference_answer`` may then be a JSON list).
* weak-system labels (``datasets/labels/*.jsonl``, detected by ``ref`` + ``model``): ``judging.labels.weak_labels``.
* EVOUNA (auto-detected by its ``golden_answer`` key): one record per question with
  ``golden_answer`` (alternatives separated by "/") and ``answer_<system>`` / ``judge_<system>``
  pairs. One example per (question, system) whose ``judge_<system>`` is not null, on questions
  with ``improper == false`` (annotators flagged the others as ambiguous/outdated). A null
  answer with a label is kept as the empty answer.

Malformed records raise one ``EvaluationsError`` naming the file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evaluations.datasets.rows import iter_rows, json_cell, json_type
from evaluations.core.errors import EvaluationsError
from evaluations.judging.labels.rows import LabelledAnswer, parse_label
from evaluations.judging.basics.text import split_alternatives

__all__ = ["LabelledAnswer", "load_labelled", "parse_label"]

EVOUNA_SYSTEMS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")
_CLASSIC_REQUIRED = ("query", "generated_answer", "label")  # reference_answer too, unless judged reference-free


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for JSONL / JSON array / CSV files (``evaluations.datasets.rows``)."""
    return iter_rows(path)


def _string(record: dict[str, Any], key: str, where: str, *, nullable: bool = False) -> str | None:
    if key not in record:
        raise EvaluationsError(f"missing field {key!r}", where=where, fix=f"add {key!r} to every record")
    value = record[key]
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise EvaluationsError(f"field {key!r} must be a string, got {_given(value)}", where=where,
                               fix=f'write {key!r} as a JSON string ("…")' + (" or null" if nullable else ""))
    return value


def _given(value: Any) -> str:
    """A value as JSON names it, for messages (``[true]``, ``null``, ``3``; not Python's ``[True]``, ``None``)."""
    text = json.dumps(value, ensure_ascii=False)
    return f"{json_type(value)} {text[:60]}{'…' if len(text) > 60 else ''}" if value is not None else "null"


def _references(value: Any, where: str) -> tuple[str, ...]:
    value = json_cell(value, where, "reference_answer")
    if isinstance(value, str):
        refs = (value.strip(),) if value.strip() else ()
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        refs = tuple(v.strip() for v in value if v.strip())
    else:
        raise EvaluationsError(
            f"field 'reference_answer' must be a string or a list of strings, got {_given(value)}", where=where,
            fix='a gold answer or a list of them: "reference_answer": ["Paris", "the city of Paris"]')
    if not refs:
        raise EvaluationsError("field 'reference_answer' is empty", where=where, fix="give at least one gold answer")
    return refs


def _classic(path: Path, line: int, record: dict[str, Any]) -> list[LabelledAnswer]:
    where = f"{path}:{line}"
    for key in _CLASSIC_REQUIRED:
        if key not in record:
            raise EvaluationsError(f"missing field {key!r}", where=where, fix=f"every record needs {_CLASSIC_REQUIRED}")
    question = _string(record, "query", where)
    answer = _string(record, "generated_answer", where, nullable=True) or ""
    context = record.get("context") or ""
    if isinstance(context, list) and all(isinstance(c, str) for c in context):
        context = "\n\n".join(context)  # a list of passages
    elif not isinstance(context, str):
        context = json.dumps(context)
    group = str(record.get("id") or record.get("query_id") or question)
    return [
        LabelledAnswer(
            question=question,
            references=(_references(record["reference_answer"], where)
                        if "reference_answer" in record else ()),  # reference-free judges need none
            answer=answer,
            label=parse_label(record["label"], f"{where}: field 'label'"),
            group=group,
            source=where,
            system=str(record.get("system") or ""),
            context=context,
        )
    ]


def _evouna(path: Path, line: int, record: dict[str, Any]) -> list[LabelledAnswer]:
    where = f"{path}:{line}"
    if "improper" not in record:
        raise EvaluationsError("missing field 'improper'", where=where,
                               fix="EVOUNA records carry improper: true or false (true: the question is left out)")
    if not isinstance(record["improper"], bool):
        raise EvaluationsError(f"field 'improper' must be true/false, got {_given(record['improper'])}",
                               where=where, fix="true leaves the question out, false keeps it")
    if record["improper"]:
        return []
    question = _string(record, "question", where)
    golden = _string(record, "golden_answer", where)
    references = tuple(split_alternatives(golden))
    if not references:
        raise EvaluationsError("field 'golden_answer' is empty", where=where,
                               fix="give the gold answer, or mark the question improper: true")
    examples = []
    for system in EVOUNA_SYSTEMS:
        judge_key, answer_key = f"judge_{system}", f"answer_{system}"
        if judge_key not in record:
            raise EvaluationsError(f"missing field {judge_key!r}", where=where,
                                   fix=f"EVOUNA records carry judge_<system> (true, false or null: not judged) for "
                                       f"each of {', '.join(EVOUNA_SYSTEMS)}")
        if record[judge_key] is None:
            continue
        if not isinstance(record[judge_key], bool):
            raise EvaluationsError(
                f"field {judge_key!r} must be true/false/null, got {_given(record[judge_key])}", where=where,
                fix="true (the answer is right), false (wrong) or null (not judged)")
        answer = _string(record, answer_key, where, nullable=True) or ""
        examples.append(
            LabelledAnswer(question, references, answer, record[judge_key], f"{path.name}:{line}", where, system)
        )
    return examples


def load_labelled(path: str | Path, *, limit: int | None = None) -> list[LabelledAnswer]:
    """All labelled answers of one file (format auto-detected per file from its first record).

    ``limit`` stops after that many examples (deterministic: file order).
    """
    path = Path(path)
    from evaluations.judging.labels.formats import WEAK, detect
    from evaluations.judging.labels.weak_labels import load_weak_labels

    if detect(path) == WEAK:  # datasets/labels/*.jsonl: references into ../shared/data
        examples = load_weak_labels(path)
        return examples[:limit] if limit is not None else examples
    examples = []
    parse, improper, rows = None, 0, 0
    for line, record in _records(path):
        if not isinstance(record, dict):
            raise EvaluationsError(f"expected a JSON object, got {_given(record)}", where=f"{path}:{line}",
                                   fix="one labelled answer (or one EVOUNA question) per object")
        if parse is None:
            parse = _evouna if "golden_answer" in record else _classic
        found = parse(path, line, record)
        improper += parse is _evouna and record.get("improper") is True
        rows += 1
        examples.extend(found)
        if limit is not None and len(examples) >= limit:
            return examples[:limit]
    if not examples and improper and improper == rows:
        raise EvaluationsError(f"no labelled answers: all {improper} EVOUNA questions of the file are marked "
                               "improper: true (left out)", where=str(path),
                               fix="keep the questions to judge with improper: false")
    if not examples:
        raise EvaluationsError("no labelled answers found", where=str(path), fix="check the file's format")
    return examples
