"""The HTML reports as a person sees them: opened in real headless Chromium (Debian's ``chromium``, driven by
playwright with ``executable_path``; no browser download). A missing browser is a failure, not a skip:
``scripts/setup.sh`` installs it.

For a run, a comparison and a matrix report: no console error, no network request of any kind (every request
is intercepted: only the page's own file:// URL may load), every chart an inline SVG with a non-zero size, the
headline numbers as displayed equal to summary.json, and the page readable with JavaScript off.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from evaluations.reports import write_reports

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    assert Path(CHROMIUM).is_file(), "Debian's chromium is missing: run scripts/setup.sh (apt-get install chromium)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def open_report(browser, html: Path, *, javascript: bool = True):
    """The page, loaded; returns (page, console errors, requests other than the page itself)."""
    context = browser.new_context(java_script_enabled=javascript, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    url = html.resolve().as_uri()
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url == url:
            r.continue_()
        else:
            requests.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("request", lambda req: requests.append(req.url) if req.url != url else None)
    page.goto(url, wait_until="load")
    return page, errors, requests


def chart_sizes(page) -> list[tuple[float, float]]:
    return page.eval_on_selector_all(
        "figure.chart > svg",
        "svgs => svgs.map(s => { const r = s.getBoundingClientRect(); return [r.width, r.height]; })")


def shown_headline(page) -> dict[str, list[str]]:
    return page.eval_on_selector_all(
        "#headline tbody tr", "rows => Object.fromEntries(rows.map(r => [r.dataset.key, "
        "Array.from(r.querySelectorAll('td.num')).map(td => td.innerText)]))")


def expected_headline(summary: dict) -> dict[str, str]:
    """The headline rows a reader must see, written out from summary.json here (not by the page's code):
    row key -> the number as displayed (thousands separator, 4 decimals; latency and tokens 1, cost 6); a
    measure the run does not have is not shown."""
    answers = summary.get("answers") or {}
    primary = answers.get("primary_judge")
    rows = {name: (summary.get("metrics", {}).get(name), 4) for name in ("ndcg@10", "recall@10", "mrr@10")}
    if primary:
        rows[primary] = (answers["judges"][primary]["accuracy"], 4)
    rows["latency_p95_ms"] = ((summary.get("latency_ms") or {}).get("p95"), 1)
    rows["tokens_per_query"] = ((answers.get("tokens") or {}).get("per_query"), 1)
    rows["cost_per_query"] = ((answers.get("cost_usd") or {}).get("per_query"), 6)
    return {key: f"{value:,.{digits}f}" for key, (value, digits) in rows.items() if value is not None}


def check_page(browser, html: Path, screenshot: Path) -> object:
    page, errors, requests = open_report(browser, html)
    assert errors == [] and requests == []
    sizes = chart_sizes(page)
    pngs = list(html.parent.glob("report-*.png"))
    assert len(sizes) == len(pngs) > 0
    assert all(w > 50 and h > 50 for w, h in sizes), sizes
    duplicate_ids = page.evaluate("() => { const ids = [...document.querySelectorAll('[id]')].map(e => e.id);"
                                  " return ids.filter((id, i) => ids.indexOf(id) !== i); }")
    assert duplicate_ids == []  # inline SVGs included: each chart's ids are its own
    page.screenshot(path=str(screenshot), full_page=True)
    return page


def test_run_reports_in_chromium(browser, scifact_runs, answers_run, tmp_path):
    for folder in (scifact_runs["hybrid"], answers_run):
        write_reports(folder)
        summary = json.loads((folder / "summary.json").read_text())
        page = check_page(browser, folder / "report.html", tmp_path / f"{folder.name}.png")
        shown = shown_headline(page)
        expected = expected_headline(summary)
        assert len(expected) >= 3  # retrieval measures or an answer accuracy, latency, tokens/cost
        assert {k: v[0] for k, v in shown.items()} == expected  # the numbers a reader sees = summary.json
        # optional sorting works where JavaScript runs: sort the judges / latency table by its second column
        table = page.locator("table.sortable").first
        first_column = lambda: table.locator("tbody tr td:first-child").all_inner_texts()  # noqa: E731
        before = first_column()
        table.locator("thead th").nth(0).click()
        assert sorted(before, key=str.lower) == first_column()
        page.context.close()


def test_comparison_and_matrix_reports_in_chromium(browser, report_runs, matrix_dir, tmp_path):
    write_reports(report_runs["compare"])
    page = check_page(browser, report_runs["compare"] / "report.html", tmp_path / "compare.png")
    compare = json.loads((report_runs["compare"] / "compare.json").read_text())
    base = json.loads((Path(compare["run_dirs"][compare["baseline"]]) / "summary.json").read_text())
    assert shown_headline(page)["ndcg@10"][0] == f"{base['metrics']['ndcg@10']:.4f}"
    significant = page.eval_on_selector_all("#headline td.better, #headline td.worse", "tds => tds.length")
    expected = sum(1 for c in compare["comparisons"] if c["significant"] and c["metric"] in
                   {"ndcg@10", "recall@10", "mrr@10", "latency_ms"})
    assert significant == expected
    page.context.close()
    write_reports(matrix_dir)
    check_page(browser, matrix_dir / "report.html", tmp_path / "matrix.png").context.close()


def test_cases_where_judges_disagree_are_marked_and_filterable(browser, tmp_path):
    from test_answer_accuracy import hand_counted_run

    folder = hand_counted_run(tmp_path)
    write_reports(folder)
    split = set(json.loads((folder / "summary.json").read_text())["answers"]["disagreements"]["cases"])
    page, errors, _ = open_report(browser, folder / "report.html")
    worst = page.locator("#section-worst-cases")
    names = worst.locator("details.case .case-name").all_inner_texts()
    marked = [n for n in names if n in split]
    assert marked and len(marked) < len(names)  # some of the worst cases are disagreements, not all
    worst.get_by_label("only: judges disagree").check()
    visible = worst.locator("details.case:visible .case-name").all_inner_texts()
    assert visible == marked
    assert worst.locator("details.case:visible .flag").count() == len(marked)
    worst.get_by_label("only: judges disagree").uncheck()
    assert worst.locator("details.case:visible").count() == len(names)
    # every disagreement is listed in its own section's table
    keys = page.eval_on_selector_all("#disagreements tbody tr", "rows => rows.map(r => r.dataset.key)")
    assert set(keys) == split
    assert errors == []
    page.context.close()


def test_readable_without_javascript(browser, scifact_runs, answers_run):
    write_reports(answers_run)
    page, errors, requests = open_report(browser, answers_run / "report.html", javascript=False)
    assert errors == [] and requests == []
    assert len(chart_sizes(page)) == len(list(answers_run.glob("report-*.png")))
    assert page.locator("table#headline").is_visible()
    assert page.locator("input.filter").count() == 0  # the filter box is JavaScript's only addition
    page.locator("details.case summary").first.click()  # the drill-down opens without JavaScript
    assert page.locator("details.case").first.locator(".case-body").is_visible()
    page.context.close()


def test_the_network_check_sees_requests(browser, tmp_path):
    """The interception the checks above rely on does catch a page that fetches something (and its error)."""
    page_file = tmp_path / "fetching.html"
    page_file.write_text('<!doctype html><title>t</title><img src="https://example.invalid/chart.png" alt="x">')
    page, errors, requests = open_report(browser, page_file)
    assert "https://example.invalid/chart.png" in requests and errors
    page.context.close()
