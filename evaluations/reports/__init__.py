"""Reports people look at: a self-contained ``report.html`` and a GitHub ``report.md`` (+ PNG charts) for a run,
a comparison, a matrix or a history — built from their JSON files only.

Public API: ``write_reports(out_dir)``; ``calibration_summary(records, primary_judge)`` (ECE per probability,
for summary.json); ``reliability`` (reliability bins + ECE of any probability/truth pairs).
"""

from evaluations.results.calibration import BIN_RULE, Calibration, calibration_summary, reliability
from evaluations.reports.writer import Written, build_page, write_reports

__all__ = ["BIN_RULE", "Calibration", "Written", "build_page", "calibration_summary", "reliability", "write_reports"]
