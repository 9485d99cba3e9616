"""Reports people look at: a self-contained ``report.html`` and a GitHub ``report.md`` (+ PNG charts) for a run
(from its ``RunData``), a comparison, a matrix or a history (from their JSON files).

Public API: ``write_reports(out_dir)``, ``build_page``.
"""

from evaluations.reports.writer import Written, build_page, write_reports

__all__ = ["Written", "build_page", "write_reports"]
