"""What follows a finished run, given the run in memory (never re-read from its folder): report.html/report.md
(unless ``reports.write`` is off; an older run's pages are never there: ``--overwrite`` sets its files aside), the
history row and the OpenTelemetry export. Each failing is a warning (the run's own files are complete),
never a lost run; what they need installed is checked before the run (``check_after_run``). The CLI and ``matrix``
hand ``after_run`` to ``pipeline.runner.run``."""

from __future__ import annotations

from rich.console import Console

from evaluations.core.config import Config
from evaluations.core.errors import EvaluationsError
from evaluations.results.rundata import RunData


def check_after_run() -> None:
    """What ``after_run`` needs is installed: the ``otel`` extra when an OTLP endpoint is configured. The CLI and
    ``matrix`` call it before any work (a missing package is one error then, not a warning after the run)."""
    from evaluations.experiments.otel import check_export

    check_export()


def after_run(run: RunData, config: Config, console: Console) -> None:
    from evaluations.experiments.history import record_run
    from evaluations.experiments.otel import export_run_if_configured
    from evaluations.reports.writer import write_run_reports

    steps = [("history", lambda: record_run(run, config)),
             ("OpenTelemetry export", lambda: export_run_if_configured(run))]
    if config.reports.write:
        steps.insert(0, ("report.html/report.md", lambda: write_run_reports(run)))
    for label, step in steps:
        try:
            step()
        except EvaluationsError as exc:
            console.print(f"[yellow]warning: {label} not written: {exc.render()}[/]")
        except Exception as exc:  # noqa: BLE001 - an extra after the run must never lose the written run
            console.print(f"[yellow]warning: {label} not written ({type(exc).__name__}: {exc})[/]")
