"""Durable, all-or-nothing file writes whose failures are one clear EvaluationsError.

- ``atomic_write_bytes/text(path, data)``: a temporary file in the same folder, written, fsynced, then
  ``os.replace``d over ``path`` (and the folder fsynced): readers see the old file or the new one,
  never half of one. On any failure the temporary file is removed and ``path`` is untouched.
- ``atomic_write_files(folder, files)``: several files at once: every one written to a temporary file first,
  renamed only when all are written, so a failure (a full disk) leaves none of them new.
- ``append_line_durable(path, line)`` / ``DurableAppender``: append one line, flush, fsync — a line
  that was appended survives a crash (``cases.jsonl``, one record per finished case). With ``sync_every``
  seconds the fsync is paced: every line is written to the file at once (a killed process loses none), and
  the data reaches the disk at most ``sync_every`` seconds later and on ``close`` (a power loss loses at most
  that window's lines, whole; a run's ``--resume`` runs those cases again).
- ``check_writable_dir(path)``: create the folder if needed and prove a small file can be written and
  fsynced there, before any work; a folder it created is removed again when the check fails.
- ``os_error(exc, path)``: OSError -> EvaluationsError naming the path, what is wrong and the fix
  (no space, permission, read-only file system, a file in the way, ...).

Writes go through ``os.write``/``os.fsync`` on raw descriptors, so a test can simulate a full disk by
making either raise ``OSError(errno.ENOSPC)``.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError

__all__ = ["DurableAppender", "append_line_durable", "atomic_write_bytes", "atomic_write_files", "atomic_write_json",
           "atomic_write_text", "check_writable_dir", "os_error"]

#: errno -> (what is wrong, how to fix it)
_REASONS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space left on the device", "free some space or choose a folder on another disk"),
    errno.EDQUOT: ("disk quota exceeded", "free some space or choose a folder on another disk"),
    errno.EFBIG: ("file too large for this file system or limit", "choose a folder on another file system"),
    errno.EACCES: ("permission denied", "choose a folder you can write to, or fix its permissions"),
    errno.EPERM: ("operation not permitted", "choose a folder you can write to, or fix its permissions"),
    errno.EROFS: ("read-only file system", "choose a folder on a writable file system"),
    errno.ENOTDIR: ("a part of the path is a file, not a folder", "choose another path or move that file"),
    errno.EEXIST: ("a file is in the way", "choose another path or move that file"),
    errno.EISDIR: ("is a folder, expected a file", "choose another path"),
    errno.ENAMETOOLONG: ("the path is too long", "choose a shorter path"),
}


def os_error(exc: OSError, path: str | os.PathLike[str], *, action: str = "cannot write",
             fix: str | None = None) -> EvaluationsError:
    """One EvaluationsError for an OSError while writing ``path``: ``<path>: <action>: <reason>``."""
    reason, default_fix = _REASONS.get(exc.errno or 0, (exc.strerror or type(exc).__name__, "check the path"))
    return EvaluationsError(f"{action}: {reason}", where=str(path), fix=fix or default_fix)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some file systems do not open folders; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF):  # folder fsync unsupported: not a failure
            raise
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, fix: str | None = None) -> None:
    """Write ``data`` to ``path`` all or nothing (temporary file in the same folder, fsync, rename)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(exc, path, fix=fix) from None
    atomic_write_files(path.parent, {path.name: data}, fix=fix)


def atomic_write_files(folder: str | os.PathLike[str], files: dict[str, bytes], *, fix: str | None = None) -> None:
    """Write ``files`` (name -> data) into the existing ``folder`` together: each to a temporary file there,
    written and fsynced, then all renamed into place; on a failure before the renames every temporary file is
    removed and no file of ``files`` is touched."""
    folder = Path(folder)
    staged: list[tuple[str, Path]] = []
    current = folder
    try:
        for name, data in files.items():
            current = folder / name
            mode = current.stat().st_mode & 0o777 if current.exists() else 0o644  # mkstemp's 0600 would hide outputs
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
            staged.append((tmp, current))
            try:
                os.fchmod(fd, mode)
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        for tmp, path in staged:
            current = path
            os.replace(tmp, path)
        staged = []
        _fsync_dir(folder)
    except OSError as exc:
        raise os_error(exc, current, fix=fix) from None
    finally:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def atomic_write_text(path: str | os.PathLike[str], text: str, *, fix: str | None = None) -> None:
    """``atomic_write_bytes`` of ``text`` encoded as UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"), fix=fix)


def atomic_write_json(path: str | os.PathLike[str], data: Any, *, indent: int | None = 2,
                      fix: str | None = None) -> None:
    """``data`` as JSON (UTF-8, non-ASCII kept, ``default=str``), written atomically."""
    atomic_write_text(path, json.dumps(data, indent=indent, ensure_ascii=False, default=str) + "\n", fix=fix)


class DurableAppender:
    """Append lines to one file, each flushed and fsynced before ``append`` returns (``sync_every`` None), or
    fsynced at most ``sync_every`` seconds after it was written and on ``close`` (module docstring).

    ``append`` writes the whole line in one ``os.write`` loop; if the disk fills mid-line, the partial
    tail is truncated away again, so the file always ends with a complete line. A paced fsync that fails takes
    back every line since the last one that succeeded: the file ends with lines that reached the disk.
    """

    def __init__(self, path: str | os.PathLike[str], *, fix: str | None = None, sync_every: float | None = None):
        self.path = Path(path)
        self.fix = fix
        self.sync_every = sync_every
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._synced = os.lseek(self._fd, 0, os.SEEK_END)  # the file's length when it last reached the disk
        except OSError as exc:
            raise os_error(exc, self.path, fix=fix) from None
        self._last_sync = time.monotonic()

    def append(self, line: str) -> None:
        data = (line if line.endswith("\n") else line + "\n").encode("utf-8")
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            _write_all(self._fd, data)
        except OSError as exc:
            self._take_back(start)
            raise os_error(exc, self.path, fix=self.fix) from None
        if self.sync_every is None or time.monotonic() - self._last_sync >= self.sync_every:
            self.sync()

    def sync(self) -> None:
        """fsync what was appended; on a failure the lines since the last fsync are taken back."""
        if self._fd < 0:
            return
        end = os.lseek(self._fd, 0, os.SEEK_END)
        if end == self._synced:
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._take_back(self._synced)
            raise os_error(exc, self.path, fix=self.fix) from None
        self._synced, self._last_sync = end, time.monotonic()

    def _take_back(self, length: int) -> None:
        try:
            os.ftruncate(self._fd, length)
        except OSError:
            pass

    def append_json(self, record: Any) -> None:
        self.append(json.dumps(record, ensure_ascii=False, default=str))

    def close(self) -> None:
        """fsync what is pending (an error is raised after the file is closed), then close."""
        if self._fd >= 0:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> DurableAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_line_durable(path: str | os.PathLike[str], line: str, *, fix: str | None = None) -> None:
    """Append one line to ``path`` (created if needed), flushed and fsynced (one open per call)."""
    with DurableAppender(path, fix=fix) as appender:
        appender.append(line)


def check_writable_dir(path: str | os.PathLike[str], *, fix: str | None = None) -> Path:
    """Make sure ``path`` is a folder we can write and fsync a file in; EvaluationsError naming it if not.

    Folders this call created are removed again when the check fails, so a refused run leaves nothing.
    """
    path = Path(path)
    created: list[Path] = []
    try:
        missing = [p for p in (path, *path.parents) if not p.exists()]
        for folder in reversed(missing):
            folder.mkdir()
            created.append(folder)
        if not path.is_dir():
            raise OSError(errno.ENOTDIR, "not a folder")
        atomic_write_bytes(path / ".write-check", b"ok\n", fix=fix)
        os.unlink(path / ".write-check")
    except (OSError, EvaluationsError) as exc:
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                pass
        if isinstance(exc, EvaluationsError):
            raise EvaluationsError(exc.message, where=str(path), fix=exc.fix) from None
        raise os_error(exc, path, fix=fix) from None
    return path
