"""The run history: one SQLite row per finished run, so trends and ``gate --baseline last`` need no bookkeeping.

Store: ``history.path`` in the config (default ``<data_dir>/history.sqlite``). Table ``runs``: time (UTC ISO),
run folder (absolute), run name, dataset name and fingerprint, config hash (sha256 of the run's config as
canonical JSON), git commit and dirty flag of the working directory's repository (NULL outside a repo), and
the run-level metric values (``measures.run_values``) as JSON, and who judged the values a model judged
(``judges``: metric -> ``measures.judged_by``, JSON; a column added to stores made before it). Table ``metrics``
holds the same values one per row for trend queries. A trend does not count a change across a change of judge (an
embedded judge's faithfulness, then a served one's): the row says the judge changed, not by how much the system did.

Only a run records (``record_run``: the store and its folder are created when missing). The store holds one row
per run folder: recording a folder again (a ``--resume`` that finished it anew, an ``--overwrite`` that replaced
its run) replaces its earlier row. The readers
(``list_runs``, ``last_comparable``: ``history``, ``gate --baseline last``) open the store read-only and create
or change nothing: a missing store, another program's SQLite file (``check_schema``), a damaged file or a row
whose metrics are not JSON is one EvaluationsError naming the file (and row).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.results.measures import MODEL_JUDGED, canonical, judged_by, run_values
from evaluations.results.rundata import RunData, load_run
from evaluations.review.corrected import corrected_values

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
    metrics TEXT NOT NULL,
    judges TEXT
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


#: the columns of ``runs`` every reader and writer uses: a table ``runs`` without them is another program's
RUNS_COLUMNS = ("id", "recorded_at", "run_dir", "name", "dataset", "fingerprint", "config_hash", "git_commit",
                "git_dirty", "metrics")
METRICS_COLUMNS = ("run_id", "metric", "value")
#: SQLite's names of a file that is not a database, or one whose pages are damaged (truncated, overwritten)
_DAMAGED = frozenset({"SQLITE_NOTADB", "SQLITE_CORRUPT"})
_MOVE_ASIDE = "move it aside to start a new history, or point history.path (--history) at another file"


def _not_a_store(path: Path, why: str) -> EvaluationsError:
    return EvaluationsError(f"not a history store: {why}; the file is left as it is", where=str(path),
                            fix=f"the file is another program's database: {_MOVE_ASIDE}")


def _sqlite_error(path: Path, exc: sqlite3.Error | OSError, *, writing: bool) -> EvaluationsError:
    """The user's error for ``exc`` raised opening or reading the store at ``path``."""
    if isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorname", "") in _DAMAGED:
        return EvaluationsError(f"cannot open the history store: {exc}: the file is damaged (corrupt or truncated) "
                                "or is not a history store", where=str(path),
                                fix=f"the file is not a history store (damaged, or another file): {_MOVE_ASIDE}")
    verb = "open" if writing else "read"
    return EvaluationsError(f"cannot {verb} the history store: {exc}", where=str(path),
                            fix="set history.path in the config (--history) to a writable file" if writing else
                            f"check that the file is readable and is a history store; else {_MOVE_ASIDE}")


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def check_schema(db: sqlite3.Connection, path: Path) -> bool:
    """Whether ``db`` holds a history (its ``runs`` table with the columns of ``SCHEMA``): False when it holds no
    table at all (a new, empty file); EvaluationsError naming ``path`` when it holds other tables (another
    program's database: nothing is added to it). Reads only."""
    tables = {str(name) for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables.discard("sqlite_sequence")  # SQLite's own (AUTOINCREMENT)
    if not tables:
        return False
    if "runs" not in tables:
        raise _not_a_store(path, "it has no 'runs' table (its tables: " + ", ".join(sorted(tables)) + ")")
    for table, wanted in (("runs", RUNS_COLUMNS), ("metrics", METRICS_COLUMNS)):
        have = _columns(db, table) if table in tables else set(wanted)
        missing = [c for c in wanted if c not in have]
        if missing:
            raise _not_a_store(path, f"its '{table}' table lacks the column(s) " + ", ".join(missing))
    return True


def connect(path: Path) -> sqlite3.Connection:
    """The store at ``path`` opened for writing (recording a run): created, with its tables, when missing or empty;
    a file that is another program's database or a damaged one is refused untouched."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path)
    except (OSError, sqlite3.Error) as exc:
        raise _sqlite_error(path, exc, writing=True) from None
    try:
        check_schema(db, path)  # before any table is added: another program's database is left as it is
        db.executescript(SCHEMA)
        if "judges" not in _columns(db, "runs"):  # a store made before runs recorded their judges
            db.execute("ALTER TABLE runs ADD COLUMN judges TEXT")
    except sqlite3.Error as exc:
        db.close()
        raise _sqlite_error(path, exc, writing=True) from None
    except EvaluationsError:
        db.close()
        raise
    db.row_factory = sqlite3.Row
    return db


def store_not_found(path: Path, why: str = "") -> EvaluationsError:
    """The error of a reading command given a store that does not exist (reading never creates one)."""
    return EvaluationsError(f"history store not found{why}", where=str(path),
                            fix="a finished run records itself in the store at history.path (default "
                                "<data_dir>/history.sqlite): point --history (or history.path in --config) at the "
                                "store your runs were recorded in, or finish a run first")


def open_read_only(path: Path) -> sqlite3.Connection:
    """The store at ``path`` opened read-only: nothing is created or changed (no folder, file or table); a missing
    store is EvaluationsError ``store_not_found``. Close it when done (``contextlib.closing``)."""
    if not path.exists():
        raise store_not_found(path)
    if path.is_dir():
        raise EvaluationsError("the history store is a folder, not a file", where=str(path),
                               fix="point --history (history.path) at the store's .sqlite file")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise _sqlite_error(path, exc, writing=False) from None
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
    """Append ``run`` (a finished run, or its folder) to the history (``path`` default: ``history_path(config)``),
    replacing the row an earlier recording of the same folder left (one row per run folder); returns its id.
    ``config``: the run's ``Config`` (or a dict); None hashes ``summary.json``'s ``config`` section.
    """
    run = run if isinstance(run, RunData) else load_run(run)
    commit, dirty = git_state(cwd)
    values = {**run_values(run), **corrected_values(run)}  # the judged figures and those a person's labels corrected
    judges = {name: judge for name in MODEL_JUDGED if name in values and (judge := judged_by(name, run))}
    store = path or history_path(config if hasattr(config, "data_dir") else None)
    run_dir = str(run.path.resolve())
    with connect(store) as db:  # one transaction: the earlier row goes only with the new one in
        earlier = [row[0] for row in db.execute("SELECT id FROM runs WHERE run_dir = ?", (run_dir,))]
        db.executemany("DELETE FROM metrics WHERE run_id = ?", [(i,) for i in earlier])
        db.executemany("DELETE FROM runs WHERE id = ?", [(i,) for i in earlier])
        cursor = db.execute(
            "INSERT INTO runs (recorded_at, run_dir, name, dataset, fingerprint, config_hash, git_commit, git_dirty,"
            " metrics, judges) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (datetime.now(timezone.utc).isoformat(timespec="seconds"), run_dir, run.name,
             run.dataset.name, run.dataset.fingerprint,
             config_hash(config if config is not None else run.summary.config), commit,
             None if dirty is None else int(dirty), json.dumps(values), json.dumps(judges)),
        )
        run_id = int(cursor.lastrowid)
        db.executemany("INSERT INTO metrics (run_id, metric, value) VALUES (?, ?, ?)",
                       [(run_id, k, v) for k, v in values.items()])
    return run_id


def _row(row: sqlite3.Row, path: Path) -> dict[str, Any]:
    out = dict(row)
    out["metrics"] = _metrics(out["metrics"], path, out["id"])
    out["git_dirty"] = None if out["git_dirty"] is None else bool(out["git_dirty"])
    out["judges"] = _judges(out.get("judges"))
    return out


def _judges(text: Any) -> dict[str, str]:
    """A row's ``judges`` JSON (metric -> judge); {} when the row has none (recorded before judges were) or it
    cannot be read: who judged is then unknown, which a trend treats as no change of judge."""
    try:
        judges = json.loads(text) if isinstance(text, str | bytes) else None
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in judges.items() if v} if isinstance(judges, dict) else {}


def _metrics(text: Any, path: Path, run_id: Any) -> dict[str, float | None]:
    """A row's ``metrics`` JSON: an object of numbers (or null); EvaluationsError naming the store and row."""
    try:
        values = json.loads(text) if isinstance(text, str | bytes) else None
    except ValueError as exc:
        values, why = None, f"is not valid JSON ({exc})"
    else:
        why = f"is not a JSON object of metric values (got {str(text)[:60]!r})"
    if isinstance(values, dict) and all(v is None or (isinstance(v, int | float) and not isinstance(v, bool))
                                        for v in values.values()):
        return values
    raise EvaluationsError(f"row id {run_id} of table runs: its metrics {why}", where=str(path),
                           fix=f"the row is damaged: delete it (sqlite3 {path} 'DELETE FROM metrics WHERE run_id = "
                               f"{run_id}; DELETE FROM runs WHERE id = {run_id}'), or move the file aside to start a "
                               "new history")


def list_runs(path: Path, *, dataset: str | None = None, fingerprint: str | None = None) -> list[dict[str, Any]]:
    """History rows, oldest first, optionally of one dataset name and/or fingerprint. Reads only: a missing store
    is EvaluationsError (``store_not_found``), another program's database or a damaged one is refused."""
    query, params = "SELECT * FROM runs WHERE 1=1", []
    if dataset:
        query += " AND dataset = ?"
        params.append(dataset)
    if fingerprint:
        query += " AND fingerprint = ?"
        params.append(fingerprint)
    with closing(open_read_only(path)) as db:
        try:
            rows = db.execute(query + " ORDER BY id", params).fetchall() if check_schema(db, path) else []
        except sqlite3.Error as exc:
            raise _sqlite_error(path, exc, writing=False) from None
    return [_row(r, path) for r in rows]


def last_comparable(run: RunData, path: Path) -> Path:
    """The newest recorded run over the same dataset (same fingerprint, else same name) other than ``run``,
    whose folder still exists; EvaluationsError when there is none."""
    fingerprint, dataset = run.dataset.fingerprint, run.dataset.name
    if not path.exists():
        raise store_not_found(path, ", so there is no earlier run of dataset "
                                    f"{dataset!r} to use as the baseline (or pass --baseline RUN_DIR)")
    rows = list_runs(path, dataset=dataset, fingerprint=fingerprint)
    here = run.path.resolve()
    gone = []
    for row in reversed(rows):
        folder = Path(row["run_dir"])
        if folder.resolve() != here:
            if (folder / "summary.json").is_file():
                return folder
            gone.append(folder)
    if gone:  # recorded, then moved or deleted: not "no earlier run"
        raise EvaluationsError(
            f"the history has {len(gone)} earlier run(s) of dataset {dataset!r}, but no folder of them is left with "
            f"its summary.json (the newest: {gone[0]})", where=str(path),
            fix="pass --baseline RUN_DIR naming where the baseline run is now, or run the baseline again")
    raise EvaluationsError(
        f"no earlier run of dataset {dataset!r} (fingerprint {fingerprint}) in the history", where=str(path),
        fix="run the evaluation once on the baseline version first, or pass --baseline RUN_DIR")


def trend(rows: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """``metric`` (an alias resolved: ``measures.canonical``) over ``rows`` with the change from the previous row
    that has it; each row names the metric and the run's dataset, so the trend alone draws as a history report.
    ``judge``: who judged the value (None: no model judged it, or the row does not say); where it differs from the
    previous row's, ``judge_changed`` is True and ``change`` None (the judges differ, not only the systems)."""
    metric = canonical(metric)
    out, previous, previous_judge = [], None, None
    for row in rows:
        value = row["metrics"].get(metric)
        if value is None:
            continue
        judge = (row.get("judges") or {}).get(metric)
        changed = bool(judge and previous_judge and judge != previous_judge)
        out.append({"id": row["id"], "recorded_at": row["recorded_at"], "run_dir": row["run_dir"], "name": row["name"],
                    "dataset": row["dataset"], "git_commit": row["git_commit"], "git_dirty": row["git_dirty"],
                    "metric": metric, "value": value, "judge": judge, "judge_changed": changed,
                    "change": None if previous is None or changed else value - previous})
        previous, previous_judge = value, judge or previous_judge
    return out
