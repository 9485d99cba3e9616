"""A run's figures corrected by a person's labels (summary.json's ``corrected``) in report.md, report.html and the
console summary; a run without them shows no such section.

The run folder is the real EVOUNA answers run of the report tests (``answers_run``), copied; its ``corrected``
section is written here by hand, and every expected text below comes from those hand-written values.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic_evals.reporting import EvaluationReport
from rich.cells import cell_len
from rich.console import Console

from evaluations.reports import write_reports
from evaluations.reports.console import show
from evaluations.results.rundata import RunSummary

TITLE = "Corrected by a person's labels"
METHOD = ("stratified PPI++, λ = 0.250, 4 strata of 4 (sure yes, unsure yes, unsure no, sure no), finite-population "
          "variance, normal 95%")
TARGET = "the share of the cases to answer that are answered correctly (the primary judge's accuracy)"
ERROR = "the run has no faithfulness verdicts to correct"

CORRECTED: dict[str, Any] = {
    "accuracy": {
        "estimate": 0.71, "ci95": [0.62, 0.8], "se": 0.045, "n_labels": 24, "n_cases": 80, "method": METHOD,
        "target": TARGET, "judge_only": {"estimate": 0.78, "ci95": [0.73, 0.82], "n": 80},
        "labels_only": {"estimate": 0.66, "ci95": [0.52, 0.78], "n": 24},
        "agreement": {"n": 24, "accuracy": 0.86, "kappa": 0.64, "sensitivity": 0.93, "specificity": 0.7},
        "strata": 4, "ppi_lambda": 0.25,
    },
    "faithfulness": {"error": ERROR},
}

#: the texts a reader must find, from the values above
SENTENCE = ("accuracy: 0.710 (0.620–0.800) corrected by a person's labels, 0.780 (0.730–0.820) by the judge alone "
            "(95% intervals); a person read 24 of 80 answers.")
AGREEMENT = "accuracy 0.860 · κ 0.640 · sensitivity 0.930 · specificity 0.700"
ROW = f"| accuracy | 0.780 (0.730–0.820) | 0.710 (0.620–0.800) | 24 of 80 answers | {AGREEMENT} |"


@pytest.fixture
def run_folder(answers_run: Path, tmp_path: Path) -> Path:
    """A copy of the answers run (the session's folder is shared with other tests), without reports yet."""
    folder = tmp_path / "run"
    shutil.copytree(answers_run, folder, ignore=shutil.ignore_patterns("report*"))
    return folder


def add_corrected(folder: Path, corrected: dict[str, Any]) -> None:
    summary = json.loads((folder / "summary.json").read_text())
    summary["corrected"] = corrected
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))


def without_section(markdown: str, title: str) -> str:
    """The Markdown without its section ``title`` (from its heading to the next one)."""
    return re.sub(rf"## {re.escape(title)}\n.*?(?=^## )", "", markdown, flags=re.S | re.M)


def escaped(text: str) -> str:
    """``text`` as the HTML page writes it (jinja2's autoescape)."""
    return text.replace("&", "&amp;").replace("'", "&#39;")


def console_text(folder: Path, width: int) -> str:
    """What ``show`` prints of the run folder's summary on a terminal ``width`` columns wide (no cases)."""
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=False, color_system=None, emoji=False)
    summary = RunSummary.model_validate_json((folder / "summary.json").read_text())
    show(console, EvaluationReport(name=summary.name or "run", cases=[]), summary)
    return out.getvalue()


def words(text: str) -> str:
    """The text without box-drawing and with white space folded: a wrapped table cell read as words."""
    return " ".join(re.sub(r"[\u2500-\u257f]", " ", text).split())


def test_the_reports_show_the_corrected_figures(run_folder):
    add_corrected(run_folder, CORRECTED)
    written = write_reports(run_folder)
    markdown = written.markdown.read_text(encoding="utf-8")
    assert f"## {TITLE}" in markdown
    assert f"**{SENTENCE}**" in markdown
    assert ROW in markdown
    assert METHOD in markdown and TARGET in markdown
    assert f"faithfulness: not corrected: {ERROR}" in markdown
    html = written.html.read_text(encoding="utf-8")
    assert f"<h2>{escaped(TITLE)}</h2>" in html
    assert escaped(SENTENCE) in html
    table = html[html.index('<table id="corrected"'):]
    table = table[:table.index("</table>")]
    assert re.findall(r'<tr data-key="([^"]+)">', table) == ["accuracy"]
    assert "<td>24 of 80 answers</td>" in table and f"<td>{AGREEMENT}</td>" in table
    assert re.search(r"<caption>[^<]*" + re.escape(METHOD), table)  # the method: the caption's small text
    assert f"faithfulness: not corrected: {ERROR}" in html
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html,
                                flags=re.S).group(1))
    assert data["corrected"] == CORRECTED


def test_a_run_without_labels_reports_as_before(run_folder):
    plain = write_reports(run_folder)
    markdown, html = plain.markdown.read_text(encoding="utf-8"), plain.html.read_text(encoding="utf-8")
    assert "Corrected by" not in markdown and "Corrected by" not in html and 'id="corrected"' not in html
    assert "corrected" not in console_text(run_folder, 120).lower()
    add_corrected(run_folder, CORRECTED)
    labelled = write_reports(run_folder).markdown.read_text(encoding="utf-8")
    assert labelled != markdown
    assert without_section(labelled, TITLE) == markdown  # the section is all that the labels add


@pytest.mark.parametrize("width", [40, 120])
def test_the_console_shows_the_corrected_figures_at_any_width(run_folder, width):
    add_corrected(run_folder, CORRECTED)
    text = console_text(run_folder, width)
    assert max(cell_len(line) for line in text.splitlines()) <= width
    lines = text.splitlines()
    for figure in ("0.780 (0.730–0.820)", "0.710 (0.620–0.800)", "24 of 80 answers"):
        assert any(figure in line for line in lines), figure  # each figure whole on a line, even at 40 columns
    read = words(text)
    assert "accuracy, corrected by a person's labels" in read
    assert AGREEMENT in read and METHOD in read
    assert f"faithfulness: not corrected: {ERROR}" in read


def test_a_measure_without_a_judge_figure_shows_a_dash(run_folder):
    entry = {**CORRECTED["accuracy"], "judge_only": {"estimate": None, "ci95": None, "n": 0},
             "agreement": {"n": 24, "accuracy": 0.86, "kappa": None, "sensitivity": 0.93, "specificity": None}}
    add_corrected(run_folder, {"answer_relevance": entry})
    markdown = write_reports(run_folder).markdown.read_text(encoding="utf-8")
    assert ("| answer_relevance | — | 0.710 (0.620–0.800) | 24 of 80 answers | accuracy 0.860 · κ — · sensitivity "
            "0.930 · specificity — |") in markdown
