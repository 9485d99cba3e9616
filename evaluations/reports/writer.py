"""``write_reports(out_dir)``: (re)write ``report.html`` and ``report.md`` (+ ``report-*.png``) into a folder from
the JSON files already there — a run folder, a comparison (``compare.json``), a matrix (``matrix.json``) or a
history (``history.json``). Nothing is re-run."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluations.core.errors import EvaluationsError
from evaluations.core.fsutil import atomic_write_bytes, atomic_write_text
from evaluations.reports.page import Page
from evaluations.results.rundata import RunData


def _run(folder: Path) -> Page:
    from evaluations.reports.run_page import build_run_page
    from evaluations.results.rundata import load_run

    return build_run_page(load_run(folder))


def _comparison(folder: Path) -> Page:
    from evaluations.reports.experiment_pages import build_comparison_page

    return build_comparison_page(folder)


def _matrix(folder: Path) -> Page:
    from evaluations.reports.experiment_pages import build_matrix_page

    return build_matrix_page(folder)


def _history(folder: Path) -> Page:
    from evaluations.reports.experiment_pages import build_history_page

    return build_history_page(folder)


#: what a folder holds -> how its page is built; the first file present decides
KINDS: list[tuple[str, Callable[[Path], Page]]] = [
    ("matrix.json", _matrix),
    ("compare.json", _comparison),
    ("history.json", _history),
    ("summary.json", _run),
]


@dataclass
class Written:
    html: Path
    markdown: Path
    pngs: list[Path]
    kind: str
    seconds: float


def build_page(out_dir: str | Path) -> Page:
    folder = Path(out_dir)
    if not folder.is_dir():
        raise EvaluationsError("no such folder", where=str(folder),
                               fix="give the --out folder of a run, a comparison or a matrix")
    for name, build in KINDS:
        if (folder / name).is_file():
            return build(folder)
    raise EvaluationsError("nothing to report on: no " + ", ".join(n for n, _ in KINDS) + " in this folder",
                           where=str(folder), fix="give the --out folder of a finished run, comparison or matrix")


def write_reports(out_dir: str | Path) -> Written:
    """Write ``report.html``, ``report.md`` and the Markdown's ``report-<chart>.png`` files into ``out_dir``.

    Old ``report-*.png`` files that the new report does not use are removed.
    """
    clock = time.perf_counter()
    return _write(Path(out_dir), build_page(out_dir), clock)


def write_run_reports(run: RunData) -> Written:
    """The reports of a run given in memory (right after it finished), written into its folder."""
    from evaluations.reports.run_page import build_run_page

    clock = time.perf_counter()
    return _write(run.path, build_run_page(run), clock)


def _write(folder: Path, page: Page, clock: float) -> Written:
    from evaluations.reports.html import render_html
    from evaluations.reports.markdown import render_markdown

    pngs = []
    for chart in page.charts:
        atomic_write_bytes(folder / chart.png_name, chart.png)
        pngs.append(folder / chart.png_name)
    keep = {p.name for p in pngs}
    for old in folder.glob("report-*.png"):
        if old.name not in keep:
            old.unlink(missing_ok=True)
    atomic_write_text(folder / "report.html", render_html(page))
    atomic_write_text(folder / "report.md", render_markdown(page))
    return Written(folder / "report.html", folder / "report.md", pngs, page.kind, time.perf_counter() - clock)
