"""``report.json``: the pydantic-evals ``EvaluationReport`` a run leaves behind (reload with ``load_report``).

``summary.json`` and ``cases.jsonl`` are read by ``results.rundata.load_run``, the one run-folder reader.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_evals.reporting import EvaluationReport, EvaluationReportAdapter


def load_report(path: Path) -> EvaluationReport:
    return EvaluationReportAdapter.validate_json(Path(path).read_bytes())
