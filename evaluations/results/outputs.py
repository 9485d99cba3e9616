"""Reading what a run left behind. The run folder itself is written by ``evaluations.results``:

- ``report.json``: the pydantic-evals ``EvaluationReport`` (reload with ``load_report``);
- ``summary.json``: metrics, answers, latency, counts, dataset, index, run, config (``runs.summary``);
- ``cases.jsonl``: one ``CaseRecord`` per case, failed ones included with their error (``load_records``);
- ``summary.md``: the summary for people.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic_evals.reporting import EvaluationReport, EvaluationReportAdapter

from evaluations.core.errors import EvaluationsError
from evaluations.results.records import CaseRecord


def load_report(path: Path) -> EvaluationReport:
    return EvaluationReportAdapter.validate_json(Path(path).read_bytes())


def load_records(run_dir: Path) -> list[CaseRecord]:
    """The case records of a run folder; a malformed line is one clear error naming file:line."""
    path = Path(run_dir) / "cases.jsonl"
    if not path.is_file():
        raise EvaluationsError("not a run folder (no cases.jsonl)", where=str(run_dir),
                               fix="give the --out folder of a run")
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(CaseRecord.model_validate(json.loads(line)))
            except ValueError as exc:
                raise EvaluationsError(f"not a case record ({str(exc).splitlines()[0]})", where=f"{path}:{number}",
                                       fix="the run folder is damaged; re-run or --resume it") from None
    return records
