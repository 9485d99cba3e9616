"""``report.json``: the pydantic-evals ``EvaluationReport`` a run leaves behind (reload with ``load_report``).

``summary.json`` and ``cases.jsonl`` are read by ``results.rundata.load_run``, the one run-folder reader.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError
from pydantic_evals.reporting import EvaluationReport, EvaluationReportAdapter

from evaluations.core.errors import EvaluationsError


def load_report(path: Path) -> EvaluationReport:
    """``report.json`` (pydantic-evals' report); EvaluationsError naming the file when it is not one."""
    try:
        return EvaluationReportAdapter.validate_json(Path(path).read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        problem = "not valid JSON" if first["type"] == "json_invalid" else \
            f"not a pydantic-evals report ({first['msg']})"
        raise EvaluationsError(problem, where=str(path),
                               fix="the folder is damaged: start a new run with --out") from None
