"""The golden set a log is scored against: {query_id: Gold(relevant, answers)}.

Accepted: a generic dataset file (``datasets.generic``: relevance + answers), a golden code-span file
(``golden``: ``expected_spans`` -> ``path::symbol`` graded by ``relevance_score``, ``ground_truth_answer``),
or TREC/BEIR qrels (relevance only).
"""

from __future__ import annotations

import json
from pathlib import Path

from evaluations.scoring.logs import Gold


def _is_golden_code(path: Path) -> bool:
    if not path.name.endswith(".json"):
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):  # not one: the reader that takes it says why
        return False
    rows = data.get("queries", data) if isinstance(data, dict) else data
    return isinstance(rows, list) and bool(rows) and isinstance(rows[0], dict) and "expected_spans" in rows[0]


def load_gold(path: str | Path) -> dict[str, Gold]:
    path = Path(path)
    if _is_golden_code(path):
        from evaluations.datasets.golden_schema import read_golden

        return {str(q.query_id): Gold(relevant=q.relevance(), answers=[q.ground_truth_answer] if q.ground_truth_answer else [])
                for q in read_golden(path)}
    if path.suffix in (".tsv", ".txt", ".qrels") or path.name.endswith((".tsv.gz", ".qrels.gz")):
        from evaluations.scoring.trec import read_qrels

        return {qid: Gold(relevant=grades, answers=[]) for qid, grades in read_qrels(path).items()}
    from evaluations.datasets.generic import read_records

    return {r.id: Gold(relevant=r.relevance(), answers=list(r.answers)) for r in read_records(path)}
