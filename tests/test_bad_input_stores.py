"""Bad input to the commands that read stores and experiment files: the history store (``history``, ``gate
--baseline last``), the JSON files ``report`` reads (compare.json, matrix.json, history.json), ``compare --out``
and a served judge that is not there (``judge-agreement``, ``judge-check``). Each is one error through the real
CLI (a subprocess): exit 2, no traceback, the file / flag / URL named, and a reading command creates or changes
nothing (no folder, file or table)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
from pathlib import Path

import pytest
from conftest import write_scifact_subset

from evaluations.experiments.history import SCHEMA
from inprocess import run_evaluations

METRICS = {"ndcg@10": 0.5, "mrr@10": 0.4}


def run_cli(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[int, str]:
    """(exit code, stderr) of ``evaluations ARGS`` as a user runs it (a new process)."""
    proc = run_evaluations([*map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)
    return proc.returncode, proc.stderr


def assert_bad_input(code: int, err: str, *needles: str | Path) -> None:
    assert code == 2, err
    assert "Traceback" not in err, err
    assert "error:" in err and "fix:" in err, err
    flat = " ".join(err.split())  # the console may wrap a long path
    for needle in needles:
        assert " ".join(str(needle).split()) in flat, f"{needle!r} not in {err!r}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A small BM25 run over 5 SciFact queries (no model) and a copy of it: two runs over the same cases."""
    from evaluations.cli.root import main

    root = tmp_path_factory.mktemp("store_runs")
    data = write_scifact_subset(root / "data", 5, 10)
    config = root / "config.yaml"
    config.write_text(f"storage: {{data_dir: {root / 'home'}}}\nhistory: {{path: {root / 'history.sqlite'}}}\n")
    main(["beir", str(data), "--search-mode", "fts", "--skip-qa", "--no-reference-free", "--no-progress",
          "--config", str(config), "--db", str(root / "db"), "--out", str(root / "a"), "--name", "a"])
    shutil.copytree(root / "a", root / "b")
    return {"a": root / "a", "b": root / "b"}


def _store(path: Path, metrics: str = json.dumps(METRICS)) -> Path:
    """A history store with one recorded run whose metrics column holds ``metrics``."""
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA)
        db.execute("INSERT INTO runs (recorded_at, run_dir, name, dataset, metrics) VALUES (?, ?, ?, ?, ?)",
                   ("2026-01-02T03:04:05+00:00", "/runs/a", "a", "beir", metrics))
    db.close()
    return path


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    db.close()
    return tables


# -- the history store ------------------------------------------------------------------------------------------

def test_a_metrics_column_that_is_not_json_names_the_store_and_row(tmp_path):
    store = _store(tmp_path / "history.sqlite", metrics="{bad")
    code, err = run_cli("history", "--history", store)
    assert_bad_input(code, err, store, "row id 1", "not valid JSON")


def test_reading_a_missing_store_creates_nothing(tmp_path, runs):
    """`history` and `gate --baseline last` given a store that is not there: 'history store not found', and no
    folder or empty store is left behind (recording is the run's job)."""
    missing = tmp_path / "newdir" / "x.sqlite"
    code, err = run_cli("history", "--history", missing)
    assert_bad_input(code, err, missing, "history store not found")
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: mrr@10, max_drop: 0.0}\n")
    code, err = run_cli("gate", runs["a"], "--rules", rules, "--baseline", "last", "--history", missing)
    assert_bad_input(code, err, missing, "history store not found", "--baseline RUN_DIR")
    relative = Path("newdir2") / "x.sqlite"
    code, err = run_cli("history", "--history", relative, cwd=tmp_path)
    assert_bad_input(code, err, relative, "history store not found")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rules.yaml"]


def test_another_programs_database_is_refused_untouched(tmp_path):
    """A SQLite file with its own ``runs`` table (or none) is not a history store: refused, named, and no table is
    added to it."""
    for tables in ("CREATE TABLE runs (x INTEGER)", "CREATE TABLE notes (text TEXT)"):
        other = tmp_path / f"other{len(tables)}.sqlite"
        with sqlite3.connect(other) as db:
            db.executescript(f"{tables}; INSERT INTO {tables.split()[2]} VALUES (1);")
        db.close()
        before, names = other.read_bytes(), _tables(other)
        code, err = run_cli("history", "--history", other)
        assert_bad_input(code, err, other, "not a history store")
        assert "writable" not in err
        assert other.read_bytes() == before and _tables(other) == names


def test_a_truncated_store_is_called_damaged(tmp_path):
    store = _store(tmp_path / "history.sqlite")
    for _ in range(60):  # pages beyond the first, so a cut file is malformed rather than empty
        _store(store)
    data = store.read_bytes()
    store.write_bytes(data[:3000])
    code, err = run_cli("history", "--history", store)
    assert_bad_input(code, err, store, "not a history store", "damaged", "move it aside")
    assert "writable" not in err
    assert store.read_bytes() == data[:3000]


# -- report of experiment files of the wrong shape --------------------------------------------------------------

_COMPARE = {"runs": ["a", "b"], "baseline": "a", "run_dirs": {"a": "/gone/a", "b": "/gone/b"}, "alpha": 0.05,
            "cases": {"shared": 5, "only_in": {"a": 0, "b": 0}}, "comparisons": [], "regressions": [], "segments": {}}


@pytest.mark.parametrize(("name", "content", "said"), [
    ("compare.json", [], "holds an array"),
    ("compare.json", {**_COMPARE, "run_dirs": ["/gone/a", "/gone/b"]}, "'run_dirs'"),
    ("compare.json", {**_COMPARE, "comparisons": "oops"}, "'comparisons'"),
    ("matrix.json", [], "holds an array"),
    ("matrix.json", {"cells": "oops"}, "'cells'"),
    ("history.json", ["x", "y"], "row 1 is a string"),
    ("history.json", [{"bogus": 1}], "row 1 is not a recorded run"),
    ("history.json", [{"id": 1, "metrics": "oops"}], "'metrics'"),
], ids=["compare-array", "compare-run_dirs-list", "compare-comparisons-str", "matrix-array", "matrix-cells-str",
        "history-strings", "history-bogus-row", "history-metrics-str"])
def test_report_of_a_file_of_the_wrong_shape(tmp_path, name, content, said):
    (tmp_path / name).write_text(json.dumps(content))
    code, err = run_cli("report", tmp_path)
    assert_bad_input(code, err, tmp_path / name, said)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no report written


# -- compare --out ------------------------------------------------------------------------------------------------

def test_compare_out_that_cannot_be_a_folder(tmp_path, runs):
    (tmp_path / "somefile.yaml").write_text("a: 1\n")
    outs = [tmp_path / "somefile.yaml" / "sub"] + ([Path("/proc/x")] if Path("/proc").is_dir() else [])
    for out in outs:
        code, err = run_cli("compare", runs["a"], runs["b"], "--out", out, "--no-cases")
        assert_bad_input(code, err, f"--out {out}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["somefile.yaml"]


# -- a served judge that is not there ------------------------------------------------------------------------------

def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("command", ["judge-agreement", "judge-check"])
def test_a_served_judge_without_its_server_is_checked_first(tmp_path, command):
    """The `llm` judge on ollama:NAME with nothing listening: exit 2 naming the server's URL before any row is
    judged (the config lets a regression fail fast: no retries, a 2 s timeout)."""
    rows = [{"query": f"What is the capital of {c}?", "context": f"{a} is the capital of {c}.",
             "generated_answer": a, "reference_answer": a, "label": True}
            for c, a in (("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"))]
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = tmp_path / "config.yaml"
    config.write_text(f"storage: {{data_dir: {tmp_path / 'home'}}}\nrequests: {{retries: 0, timeout: 2}}\n")
    url = f"http://127.0.0.1:{_closed_port()}"
    env = {**os.environ, "OLLAMA_BASE_URL": url}
    code, err = run_cli(command, labelled, "--judges", "llm", "--judge", "ollama:qwen3", "--config", config,
                        env=env)
    assert_bad_input(code, err, url, "start the server")
