"""The run history (SQLite): rows recorded from real run folders, `evaluations history`, `gate --baseline last`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from evaluations.core.config import load_config
from evaluations.experiments.history import config_hash, history_path, list_runs, record_run
from inprocess import run_evaluations

REPO = Path(__file__).resolve().parents[1]


def test_record_and_read_back(scifact_runs, tmp_path):
    store = tmp_path / "history.sqlite"
    config = load_config(None, {"storage.data_dir": str(tmp_path)})
    assert history_path(config) == tmp_path / "history.sqlite"  # default: <data_dir>/history.sqlite
    first = record_run(scifact_runs["fts"], config, path=store, cwd=REPO)
    second = record_run(scifact_runs["hybrid"], None, path=store, cwd=tmp_path)  # not a git repository
    assert second > first
    rows = list_runs(store)
    assert [r["id"] for r in rows] == [first, second]
    summary = json.loads((scifact_runs["fts"] / "summary.json").read_text())
    row = rows[0]
    assert row["run_dir"] == str(scifact_runs["fts"].resolve()) and row["name"] == "scifact-fts"
    assert (row["dataset"], row["fingerprint"]) == (summary["dataset"]["name"], summary["dataset"]["fingerprint"])
    assert row["config_hash"] == config_hash(config) and len(row["config_hash"]) == 64
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    assert row["git_commit"] == head and isinstance(row["git_dirty"], bool)
    assert rows[1]["git_commit"] is None and rows[1]["git_dirty"] is None
    for metric, value in summary["metrics"].items():  # the pipeline's own means
        assert row["metrics"][metric] == pytest.approx(value)
    assert row["metrics"]["latency_p95_ms"] == pytest.approx(summary["latency_ms"]["p95"])
    with sqlite3.connect(store) as db:  # the long table holds the same values
        long = dict(db.execute("SELECT metric, value FROM metrics WHERE run_id = ?", (first,)).fetchall())
    assert long == pytest.approx(row["metrics"])


def test_history_command_and_gate_baseline_last(scifact_runs, tmp_path, cli):
    store = tmp_path / "h.sqlite"
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: mrr@10, max_drop: 0.0}\n")
    code, _, err = cli(["gate", str(scifact_runs["worse"]), "--baseline", "last", "--history", str(store),
                         "--rules", str(rules)])
    assert code == 2 and "no earlier run" in err  # empty history
    for name in ("fts", "worse"):
        record_run(scifact_runs[name], path=store)
    code, out, _ = cli(["history", "--history", str(store), "--metric", "mrr@10", "--json"])
    trend = json.loads(out)
    means = [json.loads((scifact_runs[n] / "summary.json").read_text())["metrics"]["mrr@10"] for n in ("fts", "worse")]
    assert code == 0 and [t["value"] for t in trend] == pytest.approx(means)
    assert trend[0]["change"] is None and trend[1]["change"] == pytest.approx(means[1] - means[0])
    code, out, _ = cli(["history", "--history", str(store), "--dataset", "beir"])
    assert code == 0 and "scifact" in out and "ndcg@10" in out
    code, _, err = cli(["history", "--history", str(store), "--metric", "bleu"])
    assert code == 2 and "'bleu'" in err
    # gate --baseline last: the newest comparable run other than the one gated (worse itself is newest)
    code, out, _ = cli(["gate", str(scifact_runs["worse"]), "--baseline", "last", "--history", str(store),
                         "--rules", str(rules), "--json"])
    result = json.loads(out)
    assert result["baseline"] == str(scifact_runs["fts"].resolve())
    assert code == (0 if means[1] >= means[0] else 1)


def test_after_a_run_reports_history_and_otel_get_the_run_in_memory(scifact_small, tmp_path, cli, monkeypatch,
                                                                     run_reports):
    """The steps after a run (report.html/report.md, the history row, the OTel export) are given the finished run;
    none reads the run folder back (every folder reader raises here)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    import evaluations.experiments.history as history_module
    import evaluations.experiments.otel as otel_module
    import evaluations.results.rundata as rundata

    def no_reading(path):
        raise AssertionError(f"the run folder {path} was read back")

    for module in (rundata, history_module, otel_module):
        monkeypatch.setattr(module, "load_run", no_reading)
    reader = InMemoryMetricReader()
    exported = {}

    def export(run, env=None):
        exported.update(otel_module.export_run(run, meter_provider=MeterProvider(metric_readers=[reader])))
        return True

    monkeypatch.setattr(otel_module, "export_run_if_configured", export)
    store, out = tmp_path / "history.sqlite", tmp_path / "run"
    (tmp_path / "config.yaml").write_text(f"history: {{path: {store}}}\n")
    code, _, err = cli(["beir", str(scifact_small), "--search-mode", "fts", "--db", str(tmp_path / "db"), "--out",
                        str(out), "--no-progress", "--config", str(tmp_path / "config.yaml")])
    assert code == 0 and "warning" not in err
    summary = json.loads((out / "summary.json").read_text())
    (row,) = list_runs(store)
    assert row["run_dir"] == str(out.resolve()) and row["metrics"]["ndcg@10"] == pytest.approx(summary["metrics"]["ndcg@10"])
    assert exported["ndcg@10"] == pytest.approx(summary["metrics"]["ndcg@10"])
    assert f"{summary['metrics']['ndcg@10']:.4f}" in (out / "report.md").read_text()


def test_a_damaged_history_file_is_one_error_and_is_left_as_it_is(tmp_path):
    """A history path holding something that is not SQLite (a damaged store, another file): exit 2 naming the file,
    the fix says to move it aside, and the file is not overwritten (its bytes are kept for the user)."""

    damaged = tmp_path / "history.sqlite"
    damaged.write_bytes(b"not a database, but somebody's notes\n" * 50)
    before = damaged.read_bytes()
    proc = run_evaluations(["history", "--history", str(damaged)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{damaged}: cannot open the history store" in proc.stderr and "move it aside" in proc.stderr
    assert damaged.read_bytes() == before


def test_gate_baseline_last_whose_recorded_folder_is_gone_says_so(scifact_runs, tmp_path, cli):
    """A baseline recorded in the history, then moved or deleted, is named as gone (it read "no earlier run")."""
    import shutil

    from conftest import assert_one_error

    store = tmp_path / "h.sqlite"
    moved = tmp_path / "fts-copy"
    shutil.copytree(scifact_runs["fts"], moved)
    record_run(moved, path=store)
    record_run(scifact_runs["worse"], path=store)
    shutil.rmtree(moved)
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: mrr@10, max_drop: 0.0}\n")
    code, out, err = cli(["gate", str(scifact_runs["worse"]), "--baseline", "last", "--history", str(store),
                          "--rules", str(rules)])
    assert_one_error(code, out + err, f"{store}: the history has 1 earlier run(s) of dataset", str(moved),
                     "fix: pass --baseline RUN_DIR")


def test_the_history_table_cuts_no_name_on_a_pipe(scifact_runs, tmp_path, monkeypatch):
    """One column per recorded metric and a long run folder name need more than a fixed width: the table on a pipe
    is as wide as its widest row, so no column name or run name is cut ("context_releva…"), and it is the same
    whatever $COLUMNS says."""
    import shutil

    store = tmp_path / "h.sqlite"
    long_name = "a-run-folder-whose-name-tells-the-embedder-the-qa-model-and-the-chunk-size-apart-" * 2
    again = shutil.copytree(scifact_runs["fts"], tmp_path / long_name.strip("-"))  # the same summary name
    for folder in (scifact_runs["fts"], again):
        record_run(folder, path=store)
    outputs = []
    for columns in ("40", "300"):
        proc = run_evaluations(["history", "--history", str(store)],
                              capture_output=True, text=True, cwd=REPO, env={**os.environ, "COLUMNS": columns})
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert "…" not in outputs[0] and long_name.strip("-") in outputs[0]
    header = next(line for line in outputs[0].splitlines() if " id " in f" {line} ")
    recorded = list_runs(store)[0]["metrics"]
    assert all(name in header.split() for name in ("mrr@10", "ndcg@10", "recall@10", "latency_p95_ms"))
    assert set(header.split()[4:-1]) <= set(recorded)
