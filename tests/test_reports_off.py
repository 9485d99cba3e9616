"""``reports.write`` (default from ``$EVALUATIONS_REPORTS``): a run without its report pages, and the pages later.

The suite's runs write none by default (conftest: ``EVALUATIONS_REPORTS=none``); a user's runs write them."""

from __future__ import annotations

import os

from conftest import assert_one_error
from inprocess import run_evaluations

REPORT_FILES = ("report.html", "report.md")


def _beir(data, out, *extra: str, reports: str | None = None):
    env = {**os.environ}
    if reports is None:
        env.pop("EVALUATIONS_REPORTS", None)
    else:
        env["EVALUATIONS_REPORTS"] = reports
    return run_evaluations(["beir", str(data), "--search-mode", "fts", "--skip-qa", "--limit", "4", "--no-progress",
                            "--db", str(out.parent / "db"), "--out", str(out), *extra], env=env, text=True)


def _pages(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name in REPORT_FILES or p.suffix == ".png")


def test_by_default_a_run_writes_its_pages_and_none_leaves_none_not_even_an_older_runs(scifact_small, tmp_path):
    out = tmp_path / "run"
    proc = _beir(scifact_small, out, reports=None)  # a user's environment: the variable unset
    assert proc.returncode == 0, proc.stderr
    pages = _pages(out)
    assert {"report.html", "report.md"} <= set(pages) and any(p.endswith(".png") for p in pages)
    assert "report.html, report.md" in proc.stderr.splitlines()[-1]
    proc = _beir(scifact_small, out, "--overwrite", reports="none")  # the same folder again, pages off
    assert proc.returncode == 0, proc.stderr
    assert _pages(out) == []  # the older run's pages would describe another run
    assert proc.stderr.splitlines()[-1] == f"wrote {out}/ (report.json, summary.json, cases.jsonl)"
    # written later from the run's files
    proc = run_evaluations(["report", str(out)], text=True)
    assert proc.returncode == 0, proc.stderr
    assert {"report.html", "report.md"} <= set(_pages(out))


def test_the_config_key_wins_over_the_variable(scifact_small, tmp_path):
    (tmp_path / "on.yaml").write_text("reports: {write: true}\n")
    (tmp_path / "off.yaml").write_text("reports: {write: false}\n")
    on, off = tmp_path / "on", tmp_path / "off"
    assert _beir(scifact_small, on, "--config", str(tmp_path / "on.yaml"), reports="none").returncode == 0
    assert _beir(scifact_small, off, "--config", str(tmp_path / "off.yaml"), reports="all").returncode == 0
    assert {"report.html", "report.md"} <= set(_pages(on)) and _pages(off) == []
    # (the setting changes no result: a run resumed under the other one is the same run, test_run_folder_integrity)


def test_a_bad_value_is_one_error_naming_the_variable(scifact_small, tmp_path):
    proc = _beir(scifact_small, tmp_path / "run", reports="some")
    assert_one_error(proc.returncode, proc.stderr, "EVALUATIONS_REPORTS", "'some'", "'none'")
    assert not (tmp_path / "run").exists()
