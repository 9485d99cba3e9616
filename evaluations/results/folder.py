"""The run folder: created safely, filled case by case, resumable after a crash, finished atomically.

Layout while a run is going on:

- ``run.json``: what the run is (dataset, source, limit, cut-offs, config hash, ...) — ``--resume`` refuses a
  folder whose identity differs from the command's — its ``run_id`` (random, made when the run starts, kept by
  ``--resume``; the key of the system replies only this run reuses, ``systems.replies``) and its ``sessions``
  (start and seconds of each session that worked on it: the first and any ``--resume``), from which a resumed run
  reports its first start and its total time;
- ``cases.jsonl``: one ``CaseRecord`` per finished case, appended as each case finishes (written at once, fsynced
  at most ``SYNC_EVERY`` seconds later: one fsync per case cost a warm 300-case re-run 0.76 s);
- ``partial.jsonl``: the same cases as pydantic-evals ``ReportCase``/``ReportCaseFailure`` JSON (durable too),
  from which ``--resume`` rebuilds the full report; removed once the run is finished.

Finishing writes ``report.json``, ``summary.json`` and a ``cases.jsonl`` in dataset order, each
atomically (temporary file, then rename). A crash or SIGKILL at any point loses at most the case that was being
written (a power loss: the cases of the last ``SYNC_EVERY`` seconds); a line cut in half by the crash is dropped on
resume, and a case that is not in the file is run again. ``--resume`` also runs again the cases that did
not complete (retrieval, answer or judge stage failed: ``retry_incomplete``), replacing their records.

``--overwrite`` never loses the run it replaces before the new one is finished: the old run's files are moved
into the folder's hidden ``.previous-run/`` (``PREVIOUS_DIR``), deleted once the new run has written its final
files, and put back when the new run fails or is interrupted before its first case. A new run interrupted or
crashed later leaves both: the new run's finished cases (``--resume`` finishes it) and the old run in
``.previous-run/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic_evals.reporting import ReportCase, ReportCaseAdapter, ReportCaseFailure, ReportCaseFailureAdapter

from evaluations.core.errors import EvaluationsError
from evaluations.core.fsutil import DurableAppender, atomic_write_json, atomic_write_text, check_writable_dir, os_error
from evaluations.results.records import CaseRecord, record_from_case
from evaluations.results.rundata import RunData, RunSummary

RUN_FILE = "run.json"
RUN_ID = "run_id"  # run.json's key of the run's random id (not part of the identity --resume compares)
SESSIONS = "sessions"  # run.json's [[start (UTC ISO), seconds or None], ...] (not part of the identity either)
BOOKKEEPING = (RUN_ID, SESSIONS)
CASES_FILE = "cases.jsonl"
PARTIAL_FILE = "partial.jsonl"
SYNC_EVERY = 0.5  # seconds: a finished case reaches the disk at most this long after it was written
FINAL_FILES = ("report.json", "summary.json", "summary.md", CASES_FILE, RUN_FILE, PARTIAL_FILE,
               "report.html", "report.md")
#: the run an --overwrite replaces, kept in the folder until the new run has written its final files
PREVIOUS_DIR = ".previous-run"
_MOVING_DIR = ".previous-run.moving"  # the old run's files while they are being moved (a crash there is undone)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"


def _appenders(path: Path) -> tuple[DurableAppender, DurableAppender]:
    """The appenders of a run's ``cases.jsonl`` and ``partial.jsonl`` (fsync paced: ``SYNC_EVERY``)."""
    return (DurableAppender(path / CASES_FILE, sync_every=SYNC_EVERY),
            DurableAppender(path / PARTIAL_FILE, sync_every=SYNC_EVERY))


def _unique_dir(parent: Path, stem: str) -> Path:
    """``parent/stem``, or ``stem-2``, ``stem-3``…: created with an exclusive mkdir, so two runs started in the
    same second never share a folder."""
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(exc, parent, action="cannot create the runs folder", fix="use --out DIR") from None
    for n in range(1, 10_000):
        candidate = parent / (stem if n == 1 else f"{stem}-{n}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
        except OSError as exc:
            raise os_error(exc, candidate, action="cannot create the run folder", fix="use --out DIR") from None
    raise EvaluationsError("no free run folder name", where=str(parent), fix="use --out DIR")


def _is_empty(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}, so a mismatch names the exact key."""
    if not isinstance(data, dict):
        return {prefix: data}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _finished(path: Path) -> bool:
    """The run in ``path`` wrote its final files (summary.json, and partial.jsonl is gone)."""
    return (path / "summary.json").is_file() and not (path / PARTIAL_FILE).exists()


def _move_files(source: Path, target: Path) -> None:
    """Move every file of ``source`` into ``target``, replacing files of the same name there."""
    for p in list(source.iterdir()):
        os.replace(p, target / p.name)


def _sessions(stored: Any, path: Path) -> list[list[Any]]:
    """run.json's sessions as [[start, seconds], ...]; a session killed before it could record its time (SIGKILL)
    is counted until the last case it wrote (the mtime of partial.jsonl, else cases.jsonl)."""
    if not isinstance(stored, list):
        return []
    sessions = [list(s) for s in stored if isinstance(s, list) and len(s) == 2 and isinstance(s[0], str)]
    if sessions and sessions[-1][1] is None:
        try:
            begun = datetime.fromisoformat(sessions[-1][0]).timestamp()
            written = max((p.stat().st_mtime for p in (path / PARTIAL_FILE, path / CASES_FILE) if p.is_file()),
                          default=begun)
            sessions[-1][1] = round(max(0.0, written - begun), 3)
        except (ValueError, OSError):
            sessions[-1][1] = 0.0
    return sessions


def _case_line(case: ReportCase | ReportCaseFailure) -> str:
    """``case`` as its partial.jsonl line."""
    if isinstance(case, ReportCaseFailure):
        raw = {"kind": "failure", **ReportCaseFailureAdapter.dump_python(case, mode="json")}
    else:
        raw = {"kind": "case", **ReportCaseAdapter.dump_python(case, mode="json")}
    return json.dumps(raw, ensure_ascii=False, default=str) + "\n"


def _load_case(line: str) -> ReportCase | ReportCaseFailure:
    data = json.loads(line)
    kind = data.pop("kind")
    adapter = ReportCaseFailureAdapter if kind == "failure" else ReportCaseAdapter
    return adapter.validate_python(data)


class RunFolder:
    """One run's folder. ``open`` creates or resumes it; ``add`` streams a finished case; ``finish`` writes the
    final files."""

    def __init__(self, path: Path, identity: dict[str, Any], done: list[ReportCase | ReportCaseFailure],
                 run_id: str | None = None, sessions: list[list[Any]] | None = None):
        self.path = path
        self.identity = {k: v for k, v in identity.items() if k not in BOOKKEEPING}
        self.run_id = run_id or identity.get(RUN_ID)  # None: a folder made before run ids
        self.done = done
        #: [start, seconds] of every session of the run, this one last (its seconds None until it ends)
        self.sessions: list[list[Any]] = sessions if sessions is not None else []
        self._lock = threading.Lock()
        self._cases, self._partial = _appenders(path)

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def open(cls, *, out: Path | None, resume: Path | None, overwrite: bool, name: str,
             identity: dict[str, Any], started: datetime | None = None) -> RunFolder:
        """The folder of a new run (``out``; None: a new ``runs/<name>-<time>``), or the run in ``resume`` to
        finish. ``started``: when this session began (default now), recorded in run.json's ``sessions``."""
        session = [(started or datetime.now(timezone.utc)).isoformat(), None]
        if resume is not None:
            folder = cls._resume(resume, identity)
            folder.sessions.append(session)
            folder._write_run_file()
            return folder
        created = out is None or not Path(out).exists()
        if out is None:
            stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
            path = _unique_dir(Path("runs"), f"{slug(name)}-{stamp}")
        else:
            path = Path(out)
            if not _is_empty(path):
                if not path.is_dir():
                    raise EvaluationsError("--out is a file, not a folder", where=str(path),
                                           fix="choose a folder path for --out")
                if not overwrite:
                    raise EvaluationsError(
                        "the output folder is not empty", where=str(path),
                        fix=f"use --resume {path} to finish that run, --overwrite to replace it, "
                            "or another --out")
                cls._set_aside(path)
            check_writable_dir(path, fix="choose a writable --out folder")
        folder = cls(path, identity, [], run_id=uuid.uuid4().hex, sessions=[session])
        folder._write_run_file()
        (path / CASES_FILE).touch()
        folder.fresh, folder.created = True, created
        return folder

    def _write_run_file(self) -> None:
        atomic_write_json(self.path / RUN_FILE, {**self.identity, RUN_ID: self.run_id, SESSIONS: self.sessions})

    @staticmethod
    def _set_aside(path: Path) -> None:
        """--overwrite: move the files a run writes into ``path/.previous-run`` (nothing else in the folder is
        touched, and a folder holding other files is refused). A ``.previous-run`` already there (an earlier
        --overwrite whose run did not finish) is kept, and the unfinished run beside it removed; unless that run
        did finish, then it is the one set aside. A move cut short by a crash is undone first."""
        moving, previous = path / _MOVING_DIR, path / PREVIOUS_DIR
        try:
            if moving.is_dir():  # a crash while the old run's files were being moved: put them back
                _move_files(moving, path)
                moving.rmdir()
        except OSError as exc:
            raise os_error(exc, moving, action="cannot restore the previous run's files") from None
        own = set(FINAL_FILES) | {PREVIOUS_DIR}
        others = [p.name for p in path.iterdir() if p.name not in own and not p.name.endswith(".png")]
        if others:
            raise EvaluationsError(
                "--overwrite only replaces a run folder, and this one holds other files "
                f"({', '.join(sorted(others)[:5])})",
                where=str(path), fix="choose another --out, or empty the folder yourself")
        files = [p for p in path.iterdir() if p.name != PREVIOUS_DIR]
        try:
            if previous.is_dir() and not _finished(path):
                for p in files:  # the unfinished run of the earlier --overwrite: the one set aside stays
                    p.unlink()
                return
            if previous.is_dir():
                shutil.rmtree(previous)
            moving.mkdir()
            for p in files:
                os.replace(p, moving / p.name)
            os.replace(moving, previous)
        except OSError as exc:
            raise os_error(exc, path, action="cannot set the previous run aside") from None

    @property
    def previous_run(self) -> Path | None:
        """The run an --overwrite replaced, while it is kept (until this run has written its final files)."""
        previous = self.path / PREVIOUS_DIR
        return previous if previous.is_dir() else None

    @classmethod
    def _resume(cls, path: Path, identity: dict[str, Any]) -> RunFolder:
        path = Path(path)
        run_file = path / RUN_FILE
        if not run_file.is_file():
            raise EvaluationsError("not a run folder (no run.json)", where=str(path),
                                   fix="give --resume the --out folder of an earlier run of this tool")
        try:
            stored = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EvaluationsError(f"cannot read run.json ({exc})", where=str(run_file),
                                   fix="the folder is damaged: start a new run with --out") from None
        run_id = stored.pop(RUN_ID, None) if isinstance(stored, dict) else None
        sessions = _sessions(stored.pop(SESSIONS, None) if isinstance(stored, dict) else None, path)
        identity = {k: v for k, v in identity.items() if k not in BOOKKEEPING}
        old, new = _flatten(stored), _flatten(json.loads(json.dumps(identity, default=str)))
        differs = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        if differs:
            detail = "; ".join(f"{k}: run {old.get(k)!r}, now {new.get(k)!r}" for k in differs[:6])
            if newer := [k for k in differs if k not in old]:
                fix = (f"the run was made by an earlier version of evaluations, without {', '.join(newer[:3])}; "
                       "it cannot be finished by this one: start a new run with --out")
            else:
                fix = "repeat the original command (same dataset, source, flags and config) with --resume"
            raise EvaluationsError(f"--resume: this command is not the run in the folder ({detail})",
                                   where=str(path), fix=fix)
        done = cls._load_done(path)
        return cls(path, stored, done, run_id=run_id, sessions=sessions)

    @staticmethod
    def _load_done(path: Path) -> list[ReportCase | ReportCaseFailure]:
        """Finished cases: from partial.jsonl (a line cut by a crash is dropped), or report.json when finished."""
        partial = path / PARTIAL_FILE
        done: dict[str, ReportCase | ReportCaseFailure] = {}
        if partial.is_file():
            try:
                lines = partial.read_text(encoding="utf-8").splitlines(keepends=True)
            except UnicodeDecodeError as exc:
                line = partial.read_bytes()[: exc.start].count(b"\n") + 1
                raise EvaluationsError("a finished case is not valid UTF-8", where=f"{partial}:{line}",
                                       fix="the folder is damaged: start a new run with --out") from None
            good: list[str] = []
            for number, line in enumerate(lines, 1):
                try:
                    case = _load_case(line)
                except (ValueError, KeyError):
                    if number == len(lines):  # the last line, cut by the crash
                        break
                    raise EvaluationsError("a finished case cannot be read", where=f"{partial}:{number}",
                                           fix="the folder is damaged: start a new run with --out") from None
                done[case.name] = case
                good.append(line if line.endswith("\n") else line + "\n")
            atomic_write_text(partial, "".join(good))
        elif (path / "report.json").is_file():
            from evaluations.results.outputs import load_report

            report = load_report(path / "report.json")
            done = {c.name: c for c in [*report.cases, *report.failures]}
        # cases.jsonl may hold a line the crash cut, or miss one: rewrite it from the finished cases
        atomic_write_text(path / CASES_FILE, "".join(record_from_case(c).dump_line() for c in done.values()))
        return list(done.values())

    def retry_incomplete(self) -> list[str]:
        """``--resume``: the finished cases that did not complete (their retrieval, answer or judge stage failed,
        ``CaseRecord.failed_stages``: e.g. the judge's server was down) are dropped, to be run again; with
        ``--repeat``, every repeat of such a case. partial.jsonl and cases.jsonl are rewritten without them, and
        summary.json removed: the folder is an unfinished run until this session finishes it (an interruption is
        resumed as any other). Returns the dropped cases' names."""
        def source(case: ReportCase | ReportCaseFailure) -> str:
            return case.source_case_name or case.name

        again = {source(c) for c in self.done if record_from_case(c).failed_stages}
        if not again:
            return []
        self.close()
        self.done[:] = [c for c in self.done if source(c) not in again]
        atomic_write_text(self.path / PARTIAL_FILE, "".join(_case_line(c) for c in self.done))
        atomic_write_text(self.path / CASES_FILE, "".join(record_from_case(c).dump_line() for c in self.done))
        (self.path / "summary.json").unlink(missing_ok=True)
        # the files were replaced (written anew, renamed): append to the new ones
        self._cases, self._partial = _appenders(self.path)
        return sorted(again)

    # -- time ----------------------------------------------------------------------------------
    @property
    def started(self) -> str | None:
        """When the run's first session began (UTC ISO), None for a folder made before sessions were kept."""
        return self.sessions[0][0] if self.sessions else None

    def seconds(self, session: float) -> float:
        """The run's time: the earlier sessions' seconds plus ``session``, this one's."""
        return sum(s[1] or 0.0 for s in self.sessions[:-1]) + session

    def end_session(self, seconds: float) -> None:
        """Record this session's ``seconds`` in run.json (unless the run's files were discarded)."""
        if not self.sessions or not (self.path / RUN_FILE).is_file():
            return
        self.sessions[-1][1] = round(seconds, 3)
        try:
            self._write_run_file()
        except EvaluationsError:  # e.g. a full disk: the time is lost, never the run
            pass

    # -- streaming ---------------------------------------------------------------------------
    @property
    def done_names(self) -> set[str]:
        return {c.name for c in self.done}

    def add(self, case: ReportCase | ReportCaseFailure) -> CaseRecord:
        """A case finished: append its record to cases.jsonl and its report case to partial.jsonl, durably."""
        record = record_from_case(case)
        line = _case_line(case)
        with self._lock:
            self._partial.append(line)
            self._cases.append(record.dump_line())
            self.done.append(case)
        return record

    def close(self) -> None:
        self._cases.close()
        self._partial.close()

    fresh = False  # opened for a new run (not --resume)
    created = False  # the folder itself was made by this run

    def discard_if_unused(self) -> None:
        """A new run that failed before any case finished leaves nothing half-written: its files go, the run an
        --overwrite set aside comes back, and the folder goes too when this run created it (a resumed folder is
        never touched)."""
        if not self.fresh or self.done:
            return
        self.close()
        self.sessions = []  # nothing of this run is left to record its time in
        for name in (RUN_FILE, CASES_FILE, PARTIAL_FILE):
            (self.path / name).unlink(missing_ok=True)
        if (previous := self.previous_run) is not None:
            try:
                _move_files(previous, self.path)
                previous.rmdir()
            except OSError:  # left where the failure message's reader can still find it
                pass
        if self.created:
            try:
                self.path.rmdir()
            except OSError:  # something else was put there meanwhile: leave it
                pass

    # -- finishing ---------------------------------------------------------------------------
    def finish(self, *, report_json: bytes, summary: RunSummary, records: list[CaseRecord]) -> RunData:
        """Write the finished run (report.json, cases.jsonl, summary.json) and return it as ``RunData``, so what
        runs after it (reports, history, OTel) never reads the folder back."""
        from evaluations.core.fsutil import atomic_write_bytes

        self.close()
        atomic_write_bytes(self.path / "report.json", report_json)
        atomic_write_text(self.path / CASES_FILE, "".join(r.dump_line() for r in records))
        atomic_write_json(self.path / "summary.json", summary.to_dict())
        (self.path / "summary.md").unlink(missing_ok=True)  # written by versions before report.md had it all
        try:
            (self.path / PARTIAL_FILE).unlink(missing_ok=True)
        except OSError:
            pass
        if (previous := self.previous_run) is not None:  # the run --overwrite replaced: now replaced for good
            shutil.rmtree(previous, ignore_errors=True)
        return RunData(path=self.path, summary=summary, records=records)
