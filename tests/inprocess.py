"""``evaluations ARGS`` run in this process, with what a new process would get: its own working directory,
environment, standard streams, exit code and (for an uncaught exception) a traceback on stderr.

A new ``python -m evaluations`` pays 3-6 s of imports (torch, scipy, lancedb, pydantic-evals) before it does
anything; the suite started about 165 of them. Tests about the process itself keep a real one: signals (SIGINT,
SIGTERM, SIGKILL), the console entry point, the installed wheel, ``--help``'s imports, Ray's isolation.

What is put back after the call: the working directory, ``os.environ``, ``sys.argv``, ``sys.path`` and the modules
the command imported from outside the installed packages and ``evaluations`` (a user's ``my_rag.py`` in the working
directory: the next test's ``my_rag`` is another file).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import sysconfig
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["run_evaluations"]

_KEEP = tuple(str(Path(p).resolve()) for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                                               sysconfig.get_paths()["stdlib"]})
_PACKAGE = str(Path(__file__).resolve().parents[1] / "evaluations")


def _user_module(module) -> bool:
    """A module the command imported from a user's folder (not the standard library, site-packages or ours)."""
    path = getattr(module, "__file__", None)
    if not path:
        return False
    path = str(Path(path).resolve())
    return not path.startswith(_KEEP) and not path.startswith(_PACKAGE)


class _Stream(io.StringIO):
    """A captured standard stream: text, not a terminal, with the buffer a binary write may use."""

    def __init__(self) -> None:
        super().__init__()
        self._bytes = io.BytesIO()

    @property
    def buffer(self) -> io.BytesIO:
        return self._bytes

    def value(self) -> str:
        return self.getvalue() + self._bytes.getvalue().decode("utf-8", errors="replace")


def run_evaluations(args: Sequence[str | os.PathLike], *, cwd: str | os.PathLike | None = None,
                    env: Mapping[str, str] | None = None, input: str | bytes | None = None,  # noqa: A002
                    text: bool = False, check: bool = False, **_ignored) -> subprocess.CompletedProcess:
    """``subprocess.run([python, -m, evaluations, *args], capture_output=True, cwd=, env=, input=, text=)``, in
    this process. ``env`` replaces the environment as it would for a new process (None: this one's), and its
    ``PYTHONPATH`` goes in front of ``sys.path``; ``capture_output`` and ``timeout`` are accepted and ignored."""
    from evaluations.cli.root import main

    argv = [str(a) for a in args]
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_argv, saved_path, saved_modules = list(sys.argv), list(sys.path), set(sys.modules)
    out, err = _Stream(), _Stream()
    stdin = io.StringIO(input.decode() if isinstance(input, bytes) else (input or ""))
    code = 0
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = ["evaluations", *argv]
        extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [*extra, os.getcwd()]  # python -m puts the working directory first
        saved_stdin, sys.stdin = sys.stdin, stdin
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    main(argv)
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                    if isinstance(exc.code, str):
                        err.write(exc.code + "\n")
                except KeyboardInterrupt:
                    code = 130
                except BaseException:  # noqa: BLE001  (as a process would: a traceback and exit 1)
                    err.write(traceback.format_exc())
                    code = 1
        finally:
            sys.stdin = saved_stdin
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv, sys.path[:] = saved_argv, saved_path
        for name in set(sys.modules) - saved_modules:
            if _user_module(sys.modules[name]):
                del sys.modules[name]
    stdout, stderr = out.value(), err.value()
    if not text:
        stdout, stderr = stdout.encode(), stderr.encode()
    proc = subprocess.CompletedProcess([sys.executable, "-m", "evaluations", *argv], code, stdout, stderr)
    if check:
        proc.check_returncode()
    return proc
