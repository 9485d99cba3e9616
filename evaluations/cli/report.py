"""``evaluations report DIR``: (re)write report.html and report.md from a finished run/comparison/matrix folder."""

from __future__ import annotations

import json
from pathlib import Path

import click

from evaluations.core.console import make_console


@click.command("report")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def report_command(folder: Path, as_json: bool) -> None:
    """Write FOLDER/report.html (self-contained) and FOLDER/report.md (+ report-*.png) from the JSON files of a
    finished run, comparison (compare.json), matrix (matrix.json) or history (history.json). Re-runs nothing."""
    from evaluations.reports.writer import write_reports

    written = write_reports(folder)
    files = [written.html, written.markdown, *written.pngs]
    if as_json:
        click.echo(json.dumps({"kind": written.kind, "seconds": round(written.seconds, 3),
                               "files": {str(p): p.stat().st_size for p in files}}, indent=2))
        return
    make_console(stderr=True).print(f"[green]wrote[/] {written.kind} report: {written.html} "
                               f"({written.html.stat().st_size / 1024:.0f} KiB), {written.markdown} + "
                               f"{len(written.pngs)} PNG charts in {written.seconds:.1f} s")


commands = [report_command]
