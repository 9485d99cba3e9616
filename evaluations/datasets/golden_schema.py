"""The golden code-span file: a JSON array of ``GoldenQuery`` records
(JSON schema: ``datasets/schemas/golden_code_query.schema.json``)::

    {"query_id": "<UUID>", "query": "...",
     "expected_spans": [{"span_hash": "<sha256 of the span text>", "path": "evaluations/pipeline/runner.py",
                         "symbol": "run", "relevance_score": 2}],
     "ground_truth_answer": "...", "tags": ["definition"], "difficulty": "easy"}

A span is ``path::symbol`` of ``datasets.code`` (``symbol`` ``<module>`` for module-level code);
``relevance_score`` is the graded relevance (3 = the answer, 2 = needed, 1 = related).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluations.core.errors import EvaluationsError, field_errors
from evaluations.datasets.rows import json_items, read_utf8

Difficulty = Literal["easy", "medium", "hard"]


class ExpectedSpan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    span_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 (hex) of the span's text.")
    path: str = Field(min_length=1, description="File path relative to the repository root (POSIX).")
    symbol: str = Field(min_length=1, description="Dotted qualified name, or '<module>'.")
    relevance_score: int = Field(ge=1, le=3, description="3 = the answer, 2 = needed, 1 = related.")

    @property
    def id(self) -> str:
        return f"{self.path}{self.symbol}" if self.symbol.startswith("#") else f"{self.path}::{self.symbol}"


class GoldenQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", title="evaluations golden code-span query")

    query_id: UUID
    query: str = Field(min_length=1)
    expected_spans: list[ExpectedSpan] = Field(min_length=1)
    ground_truth_answer: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list, description="e.g. definition, how-to, troubleshooting, multi-file")
    difficulty: Difficulty

    def relevance(self) -> dict[str, int]:
        return {span.id: span.relevance_score for span in self.expected_spans}


def read_golden(path: str | Path) -> list[GoldenQuery]:
    """All queries of a golden file; every problem listed in one error (``file: record N: field``)."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationsError("golden file not found", where=str(path), fix="pass the golden JSON file")
    text = read_utf8(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvaluationsError(f"not valid JSON ({exc.msg})", where=f"{path}:{exc.lineno}", fix="fix the JSON") from None
    if not isinstance(data, list):
        raise EvaluationsError("a golden file is a JSON array of queries", where=str(path), fix="wrap the queries in [ ]")
    # again, refusing a key given twice in one query (json.loads keeps the last one silently)
    rows = [row for _, row in json_items(text, len(text) - len(text.lstrip()), path)]
    queries, problems, seen = [], [], set()
    for number, row in enumerate(rows, 1):
        try:
            query = GoldenQuery.model_validate(row)
        except ValidationError as exc:
            problems += [f"record {number}: field '{key}': {msg}" for key, msg, _ in field_errors(exc.errors())]
            continue
        if query.query_id in seen:
            problems.append(f"record {number}: field 'query_id': duplicate {query.query_id}")
        seen.add(query.query_id)
        queries.append(query)
    if problems:
        raise EvaluationsError(f"{len(problems)} problem(s) in the golden file:\n  " + "\n  ".join(problems[:50]),
                               where=str(path), fix="see datasets/schemas/golden_code_query.schema.json")
    return queries


def write_golden(path: str | Path, queries: list[GoldenQuery]) -> None:
    rows = [q.model_dump(mode="json") for q in queries]
    Path(path).write_text(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
