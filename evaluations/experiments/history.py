"""The run history: one SQLite row per finished run, so trends and ``gate --baseline last`` need no bookkeeping.

Store: ``history.path`` in the config (default ``<data_dir>/history.sqlite``). Table ``runs``: time (UTC ISO),
run folder (absolute), run name, dataset name and fingerprint, config hash (sha256 of the run's config as
canonical JSON), git commit and dirty flag of the working directory's repository (NULL outside a repo), and
the run-level metric values (``measures.run_values``) as JSON. Table ``metrics`` holds the same values one
per row for trend queries.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.results.measures import canonical, run_values
from evaluations.results.rundata import RunData, load_run

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    recorded_at TEXT NOT NULL,
    run_dir TEXT NOT NULL,
    name TEXT,
    dataset TEXT,
    fingerprint TEXT,
    config_hash TEXT,
    git_commit TEXT,
    git_dirty INTEGER,
    metrics TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    metric TEXT NOT NULL,
    value REAL,
    PRIMARY KEY (run_id, metric)
);
CREATE INDEX IF NOT EXISTS runs_dataset ON runs (dataset, fingerprint);
"""


def history_path(config: Any = None) -> Path:
    """``config.history.path`` if set, else ``<data_dir>/history.sqlite`` (config None: the default config)."""
    if config is None:
        from evaluations.core.config import load_config

        config = load_config()
    configured = getattr(getattr(config, "history", None), "path", "")
    return Path(configured).expanduser() if configured else config.data_dir() / "history.sqlite"


def connect(path: Path) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path)
        db.executescript(SCHEMA)
    except (OSError, sqlite3.Error) as exc:
        damaged = isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc)
        raise EvaluationsError(
            f"cannot open the history store: {exc}", where=str(path),
            fix="the file is not a history store (damaged, or another file): move it aside to start a new history, "
                "or point history.path (--history) at another file" if damaged else
                "set history.path in the config (--history) to a writable file") from None
    db.row_factory = sqlite3.Row
    return db


def git_state(cwd: Path | None = None) -> tuple[str | None, bool | None]:
    """(HEAD commit, dirty) of the repository containing ``cwd``; (None, None) outside a repository."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return None, None
        status = subprocess.run(["git", "status", "--porcelain"], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit.stdout.strip(), bool(status.stdout.strip())


def config_hash(config: Any) -> str:
    """sha256 of the config as canonical JSON (sorted keys; secrets masked by ``public_dict`` when a Config)."""
    data = config.public_dict() if hasattr(config, "public_dict") else (config or {})
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def record_run(run: RunData | str | Path, config: Any = None, *, path: Path | None = None,
               cwd: Path | None = None) -> int:
    """Append ``run`` (a finished run, or its folder) to the history (``path`` default: ``history_path(config)``);
    returns its id. ``config``: the run's ``Config`` (or a dict); None hashes ``summary.json``'s ``config`` section.
    """
    run = run if isinstance(run, RunData) else load_run(run)
    commit, dirty = git_state(cwd)
    values = run_values(run)
    store = path or history_path(config if hasattr(config, "data_dir") else None)
    with connect(store) as db:
        cursor = db.execute(
            "INSERT INTO runs (recorded_at, run_dir, name, dataset, fingerprint, config_hash, git_commit, git_dirty,"
            " metrics) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (datetime.now(timezone.utc).isoformat(timespec="seconds"), str(run.path.resolve()), run.name,
             run.dataset.name, run.dataset.fingerprint,
             config_hash(config if config is not None else run.summary.config), commit,
             None if dirty is None else int(dirty), json.dumps(values)),
        )
        run_id = int(cursor.lastrowid)
        db.executemany("INSERT INTO metrics (run_id, metric, value) VALUES (?, ?, ?)",
                       [(run_id, k, v) for k, v in values.items()])
    return run_id


def _row(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    out["metrics"] = json.loads(out["metrics"])
    out["git_dirty"] = None if out["git_dirty"] is None else bool(out["git_dirty"])
    return out


def list_runs(path: Path, *, dataset: str | None = None, fingerprint: str | None = None) -> list[dict[str, Any]]:
    """History rows, oldest first, optionally of one dataset name and/or fingerprint."""
    query, params = "SELECT * FROM runs WHERE 1=1", []
    if dataset:
        query += " AND dataset = ?"
        params.append(dataset)
    if fingerprint:
        query += " AND fingerprint = ?"
        params.append(fingerprint)
    with connect(path) as db:
        return [_row(r) for r in db.execute(query + " ORDER BY id", params)]


def last_comparable(run: RunData, path: Path) -> Path:
    """The newest recorded run over the same dataset (same fingerprint, else same name) other than ``run``,
    whose folder still exists; EvaluationsError when there is none."""
    fingerprint, dataset = run.dataset.fingerprint, run.dataset.name
    rows = list_runs(path, dataset=dataset, fingerprint=fingerprint)
    here = run.path.resolve()
    for row in reversed(rows):
        folder = Path(row["run_dir"])
        if folder.resolve() != here and (folder / "summary.json").is_file():
            return folder
    raise EvaluationsError(
        f"no earlier run of dataset {dataset!r} (fingerprint {fingerprint}) in the history", where=str(path),
        fix="run the evaluation once on the baseline version first, or pass --baseline RUN_DIR")


def trend(rows: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """``metric`` (an alias resolved: ``measures.canonical``) over ``rows`` with the change from the previous row
    that has it; each row names the metric and the run's dataset, so the trend alone draws as a history report."""
    metric = canonical(metric)
    out, previous = [], None
    for row in rows:
        value = row["metrics"].get(metric)
        if value is None:
            continue
        out.append({"id": row["id"], "recorded_at": row["recorded_at"], "run_dir": row["run_dir"], "name": row["name"],
                    "dataset": row["dataset"], "git_commit": row["git_commit"], "git_dirty": row["git_dirty"],
                    "metric": metric, "value": value, "change": None if previous is None else value - previous})
        previous = value
    return out
