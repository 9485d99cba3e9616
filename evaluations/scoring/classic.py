"""Score a classic labelled-answer file.

Each row: ``query``, ``context`` (list of strings, or one string), ``generated_answer``, ``reference_answer``
(a string or a list of alternatives), optional human ``label`` (``judging.labels.data.parse_label`` words) and optional
``latency_ms`` (or ``latency``, milliseconds). JSONL, JSON array or CSV.

* correctness (the classic rule): ``keyword_overlap(reference, generated) > threshold`` (default 0.7,
  ``judging.correctness.lexical.keyword_correct``);
* coverage: ``judging.grounded.grounding.coverage(generated, context)`` = share of the answer's keywords found in the context,
  averaged over rows with a context and an answer with keywords;
* with labels on every row: the confusion matrix of that rule against the label (positive = correct),
  accuracy / precision / recall / F1, and an ``agreement`` block that is exactly ``judge-agreement --json``
  on the same file (same judges, threshold, resamples and seed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evaluations.datasets.rows import iter_rows, json_cell
from evaluations.core.errors import EvaluationsError
from evaluations.judging.labels.data import parse_label
from evaluations.judging.correctness.lexical import KEYWORD_THRESHOLD, keyword_overlap
from evaluations.judging.grounded.grounding import coverage

if TYPE_CHECKING:
    from evaluations.core.config import Config

DEFAULT_JUDGES = ("keyword", "f1", "em", "containment")


@dataclass(frozen=True, slots=True)
class ClassicRow:
    query: str
    context: list[str]
    generated: str
    references: list[str]
    label: bool | None
    latency_ms: float | None


def _strings(value: Any, key: str, where: str) -> list[str]:
    value = json_cell(value, where, key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()]
    raise EvaluationsError(f"field '{key}' must be a string or a list of strings, got {type(value).__name__}",
                           where=where, fix=f"correct '{key}' on that line")


def _answer(value: Any, where: str) -> str:
    """The generated answer: a string, "" for null (no answer). A number, boolean, list or object is an error, not
    scored as the text of its ``repr`` (an answer the system never wrote)."""
    if value is None or isinstance(value, str):
        return value or ""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    example = f" (e.g. {json.dumps(json.dumps(value))})" if number else ""
    raise EvaluationsError(f"field 'generated_answer' must be a string, got {type(value).__name__}", where=where,
                           fix=f"write the answer as one string on that line{example}, or null for no answer")


def read_classic(path: Path) -> list[ClassicRow]:
    rows = []
    for line, record in iter_rows(path):
        where = f"{path}:{line}"
        for key in ("query", "generated_answer", "reference_answer"):
            if key not in record:
                raise EvaluationsError(f"missing field '{key}'", where=where,
                                       fix="classic rows need query, generated_answer, reference_answer")
        references = _strings(record["reference_answer"], "reference_answer", where)
        if not references:
            raise EvaluationsError("field 'reference_answer' is empty", where=where, fix="give at least one gold answer")
        label = record.get("label")
        latency = record.get("latency_ms", record.get("latency"))
        if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))):
            try:
                latency = float(latency)
            except (TypeError, ValueError):
                raise EvaluationsError(f"field 'latency_ms' must be a number, got {latency!r}", where=where,
                                       fix="milliseconds as a number") from None
        rows.append(ClassicRow(
            query=str(record["query"]),
            context=_strings(record.get("context"), "context", where),
            generated=_answer(record["generated_answer"], where),
            references=references,
            label=None if label in (None, "") else parse_label(label, f"{where}: field 'label'"),
            latency_ms=None if latency in (None, "") else float(latency),
        ))
    if not rows:
        raise EvaluationsError("no rows", where=str(path), fix="give at least one classic row")
    return rows


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def score_classic(path: str | Path, *, keyword_threshold: float = KEYWORD_THRESHOLD,
                  judges: tuple[str, ...] = DEFAULT_JUDGES, resamples: int = 1000, seed: int = 0,
                  config: Config | None = None) -> dict:
    """The summary of one classic file (module docstring); ``config``: whose ``judge_cache_dir()`` the model
    judges of the agreement block cache in (default ``Config()``)."""
    from evaluations.judging.validation.agreement import confusion, metrics

    path = Path(path)
    rows = read_classic(path)
    overlaps = [keyword_overlap(r.references, r.generated) for r in rows]
    verdicts = [o > keyword_threshold for o in overlaps]
    coverages = [c for r in rows if r.context and (c := coverage(r.generated, r.context)) is not None]
    latencies = [r.latency_ms for r in rows if r.latency_ms is not None]
    summary: dict[str, Any] = {
        "format": "classic",
        "file": str(path),
        "rows": len(rows),
        "correctness": {
            "rule": f"keyword_overlap > {keyword_threshold}",
            "correct": sum(verdicts),
            "rate": sum(verdicts) / len(rows),
            "mean_keyword_overlap": _mean(overlaps),
        },
        "coverage": {"mean": _mean(coverages), "n": len(coverages)},
        "latency_ms": {"mean": _mean(latencies), "n": len(latencies)} if latencies else None,
        "labelled": all(r.label is not None for r in rows),
    }
    if 0 < (labelled := sum(r.label is not None for r in rows)) < len(rows):  # said, not silently unused
        summary["warnings"] = [f"{labelled} of {len(rows)} rows have a label, so none was used: the confusion "
                               "matrix and the judges' agreement need every row labelled (label the others, or "
                               "keep the labelled rows in a file of their own)"]
    if summary["labelled"]:
        counts = confusion([r.label for r in rows], verdicts)
        values = metrics(counts)
        summary["confusion"] = dict(zip(("tp", "fp", "fn", "tn"), map(int, counts)))
        # undefined (0/0: no answer judged correct, or none labelled correct) is null, shown "unknown", never 0
        summary.update({name: None if np.isnan(values[name]) else float(values[name])
                        for name in ("accuracy", "precision", "recall", "f1")})
        summary["agreement"] = agreement_block(path, judges, keyword_threshold, resamples, seed, config)
    return summary


def agreement_block(path: Path, judges: tuple[str, ...], keyword_threshold: float, resamples: int, seed: int,
                    config: Config | None = None) -> dict:
    """``judge-agreement FILE --json`` on the same file (same loader, same ``run_judges``)."""
    from evaluations.judging.labels.read import read_answers
    from evaluations.judging.validation.agreement import payload, run_judges

    examples = read_answers([path])
    results = run_judges(examples, list(judges), keyword_threshold=keyword_threshold, resamples=resamples, seed=seed,
                         config=config)
    return payload([str(path)], examples, results, resamples=resamples, seed=seed)
