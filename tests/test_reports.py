"""Reports (report.html + report.md + PNGs) from real run folders, comparisons, matrices and histories.

The browser checks (console, network, rendered charts, headline numbers as displayed) are in
test_reports_browser.py; here: the files, the Markdown, the numbers against their sources, and ECE against
scikit-learn.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from evaluations.cli.root import main
from evaluations.reports import write_reports
from evaluations.results.calibration import run_calibration
from evaluations.results.records import CaseRecord
from evaluations.reports.run_page import headline_values


class _Page(HTMLParser):
    """What a test needs from a report page: headline cells, inline SVGs, external references, page data."""

    def __init__(self):
        super().__init__()
        self.svgs, self.external, self.headline, self.data = 0, [], {}, ""
        self._table, self._key, self._in_data = None, None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svgs += 1
        for name in ("src", "href"):
            if a.get(name) and not a[name].startswith("#"):
                self.external.append(a[name])
        if tag == "table":
            self._table = a.get("id")
        if tag == "tr" and self._table == "headline":
            self._key = a.get("data-key")
        if tag == "td" and self._table == "headline" and "data-value" in a:
            self.headline.setdefault(self._key, []).append(float(a["data-value"]))
        if tag == "script" and a.get("id") == "report-data":
            self._in_data = True

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        if tag == "script":
            self._in_data = False

    def handle_data(self, data):
        if self._in_data:
            self.data += data


def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def markdown_tables(text: str) -> list[list[str]]:
    tables, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables + ([current] if current else [])


def check_markdown(folder: Path, charts: int) -> str:
    text = (folder / "report.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(images) == charts
    for image in images:
        assert not image.startswith(("/", "http")) and (folder / image).is_file(), image  # relative, present
        assert (folder / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for table in markdown_tables(text):  # GitHub pipe tables: header, separator, rows of the same width
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in table}
        assert len(widths) == 1, table
        assert re.fullmatch(r"\|(-{3,}:?\|)+", table[1]), table[1]
    return text


def test_run_report_of_a_scifact_run(scifact_runs, capsys):
    folder = scifact_runs["fts"]
    main(["report", str(folder), "--json"])
    written = json.loads(capsys.readouterr().out)
    assert written["kind"] == "run"
    summary = json.loads((folder / "summary.json").read_text())
    page = parse(folder / "report.html")
    assert page.external == []  # nothing referenced outside the page
    pngs = sorted(folder.glob("report-*.png"))
    assert page.svgs == len(pngs) >= 2  # P@k/R@k and latency at least, one inline SVG per chart
    for key, label, value, digits in headline_values(summary):
        if value is None:
            assert key not in page.headline
        else:
            assert page.headline[key] == [pytest.approx(value, rel=1e-12)], key
    assert page.headline["ndcg@10"] == [pytest.approx(summary["metrics"]["ndcg@10"])]
    text = check_markdown(folder, len(pngs))
    assert f"| nDCG@10 | {summary['metrics']['ndcg@10']:.4f} |" in text
    # the drill-down lists the worst cases: the ones with the lowest nDCG@10 first
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    worst = min(cases, key=lambda c: c["metrics"].get("ndcg@10", 1.0))
    first_card = text.index("<details>")
    assert f"<b>{worst['name']}</b>" in text[first_card:first_card + 200]


def test_answers_report_with_labels_calibration_and_tiers(answers_run):
    written = write_reports(answers_run)
    summary = json.loads((answers_run / "summary.json").read_text())
    page = parse(written.html)
    confusions = [a for a in summary["analyses"] if a["type"] == "confusion_matrix"]
    assert len(confusions) >= 4  # keyword, exact match, containment, offline judge vs the human label
    html = written.html.read_text()
    for analysis in confusions:
        assert f"{analysis['title']}: rows = human label" in html
    # the headline value is the primary judge's accuracy over every case to answer (all EVOUNA answers have gold)
    records = [json.loads(line) for line in (answers_run / "cases.jsonl").read_text().splitlines()]
    correct = sum(1 for r in records if r["judges"].get("offline_correct") is True)
    assert page.headline["offline_correct"] == [pytest.approx(correct / len(records))]
    assert summary["answers"]["judges"]["offline_correct"]["accuracy"] == pytest.approx(correct / len(records))
    assert f"answer accuracy {correct / len(records):.2f} (primary judge: offline_correct — not validated)" in html
    # judges disagree: keyword_correct and offline_correct (the run's two correctness judges) differ
    split = [r["name"] for r in records if r["judges"]["keyword_correct"] != r["judges"]["offline_correct"]]
    assert 0 < len(split) < len(records)
    assert f"judges disagree on {len(split)} of {len(records)} answers" in html
    table = html[html.index('<table id="disagreements"'):]
    assert re.findall(r'<tr data-key="([^"]+)">', table[:table.index("</table>")]) == split
    assert "Escalation rate" in html and 'id="tiers"' in html and 'id="segments"' in html
    check_markdown(answers_run, len(written.pngs))
    # ECE of the offline judge's probability against the human labels, checked against scikit-learn's bins
    (cal,) = [c for c in run_calibration([CaseRecord.model_validate(r) for r in records], "offline_correct")
              if c.name == "offline_p_correct"]
    p = np.array([r["judges"]["offline_p_correct"] for r in records])
    y = np.array([r["label"] for r in records], dtype=int)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    assert [b["accuracy"] for b in cal.bins] == pytest.approx(list(prob_true))
    assert [b["confidence"] for b in cal.bins] == pytest.approx(list(prob_pred))
    edges = np.linspace(0, 1, 11)
    assert not np.isin(p, edges[1:-1]).any()  # no probability on an inner edge: np.histogram's bins agree
    counts = np.histogram(p, bins=edges)[0]
    counts = counts[counts > 0]
    assert cal.ece == pytest.approx(float(np.sum(counts / len(p) * np.abs(prob_true - prob_pred))))
    assert cal.n == len(records) and 0 < cal.ece < 1
    data = json.loads(page.data)  # the ECE is in the page's summary data too
    assert data["calibration"]["offline_p_correct"]["ece"] == pytest.approx(cal.ece)
    assert "10 equal-width bins" in data["calibration"]["offline_p_correct"]["bin_rule"]


def test_comparison_report(report_runs):
    """The comparison page: headline of the baseline, an nDCG@10 change coloured exactly when compare.json calls it
    significant (on these 30 queries no quality difference is, after Holm over 62 comparisons; the one that used to
    be, hybrid's latency, depends on the machine's load, so the test no longer asks that one exists), forest charts."""
    folder = report_runs["compare"]
    written = write_reports(folder)
    compare = json.loads((folder / "compare.json").read_text())
    html = written.html.read_text()
    page = parse(written.html)
    base = json.loads((Path(compare["run_dirs"][compare["baseline"]]) / "summary.json").read_text())
    assert page.headline["ndcg@10"][0] == pytest.approx(base["metrics"]["ndcg@10"])
    # a change is coloured exactly when compare.json calls that metric's difference significant
    for other in compare["runs"][1:]:
        row = next(c for c in compare["comparisons"] if c["b"] == other and c["metric"] == "ndcg@10")
        summary = json.loads((Path(compare["run_dirs"][other]) / "summary.json").read_text())
        change = summary["metrics"]["ndcg@10"] - base["metrics"]["ndcg@10"]
        cell = re.search(r'<tr data-key="ndcg@10">(.*?)</tr>', html, re.S).group(1)
        coloured = re.search(rf'class="num (better|worse)" data-value="{re.escape(repr(change))}"', cell)
        assert bool(coloured) == row["significant"], (other, row["significant"])
    assert len(re.findall(r'id="chart-forest-\d+"', html)) >= 2
    assert html.count("<tr data-key=") >= len(compare["comparisons"])
    for regression in compare["regressions"][:5]:
        assert f"<td>{regression['case']}</td>" in html
    check_markdown(folder, len(written.pngs))


def test_matrix_report_marks_the_pareto_frontier(matrix_dir):
    written = write_reports(matrix_dir)
    cells = json.loads((matrix_dir / "matrix.json").read_text())["cells"]
    html = written.html.read_text()
    xs = np.array([c["latency_ms"]["p95"] for c in cells])
    ys = np.array([c["metrics"]["ndcg@10"] for c in cells])
    # independent frontier: a cell is dominated when another is no slower, no worse, and better on one axis
    dominated = ((xs[None, :] <= xs[:, None]) & (ys[None, :] >= ys[:, None])
                 & ((xs[None, :] < xs[:, None]) | (ys[None, :] > ys[:, None]))).any(axis=1)
    rows = re.findall(r"<tr data-key=\"([^\"]+)\">(.*?)</tr>", html, re.S)
    assert len(rows) == len(cells)
    for (key, row), is_dominated in zip(rows, dominated):
        assert ('class="frontier"' in row) == (not is_dominated), key
    assert 'id="chart-pareto"' in html
    check_markdown(matrix_dir, len(written.pngs))


def test_history_report(report_runs):
    written = write_reports(report_runs["history"])
    rows = json.loads((report_runs["history"] / "history.json").read_text())
    html = written.html.read_text()
    assert html.count('<tr data-key="') == len(rows) == 3
    assert 'id="chart-trend"' in html
    for row in rows:
        assert f'data-value="{row["metrics"]["ndcg@10"]!r}"' in html
    check_markdown(report_runs["history"], len(written.pngs))


def test_report_errors_are_one_message(tmp_path, capsys):
    for folder in (tmp_path / "missing", tmp_path):
        with pytest.raises(SystemExit) as exit_info:
            main(["report", str(folder)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert "error:" in err and "Traceback" not in err
        assert "".join(str(folder).split()) in "".join(err.split())  # rich may wrap the path


def test_a_run_scored_at_other_cut_offs_is_reported_at_them(tmp_path, capsys, run_reports):
    """A run with --k 1,3,5 has no @10 metric: the report's headline, segments and worst cases use its largest
    cut-off below 10 (5), never "not measured" (it said nDCG@10, Recall@10 and MRR@10 were not measured, and listed
    the worst cases without their nDCG). Values read back from summary.json and cases.jsonl."""
    from conftest import write_scifact_subset

    subset = write_scifact_subset(tmp_path / "data", 12, 12)
    (tmp_path / "c.yaml").write_text(f"storage: {{data_dir: {tmp_path / 'home'}}}\n"
                                     f"history: {{path: {tmp_path / 'h.sqlite'}}}\n")
    out = tmp_path / "run"
    main(["beir", str(subset), "--search-mode", "fts", "--skip-qa", "--no-progress", "--k", "1,3,5", "--config",
          str(tmp_path / "c.yaml"), "--db", str(tmp_path / "db"), "--out", str(out)])
    capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    assert "ndcg@10" not in summary["metrics"] and "ndcg@5" in summary["metrics"]
    page = parse(out / "report.html")
    for key in ("ndcg@5", "recall@5", "mrr@5"):
        assert page.headline[key] == [pytest.approx(summary["metrics"][key], rel=1e-12)], key
    text = (out / "report.md").read_text()
    assert f"| nDCG@5 | {summary['metrics']['ndcg@5']:.4f} |" in text
    assert "nDCG@10" not in text and "Not measured in this run: nDCG" not in text
    cases = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    worst = min(cases, key=lambda c: c["metrics"].get("ndcg@5", 1.0))
    assert worst["metrics"]["ndcg@5"] < 1.0  # BM25 misses on some of SciFact's claims
    first_card = text.index("<details>")
    assert f"<b>{worst['name']}</b>" in text[first_card:first_card + 200]
    assert f"nDCG@5 = {worst['metrics']['ndcg@5']:.3f}" in text
