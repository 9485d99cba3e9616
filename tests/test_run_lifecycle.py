"""A run's life across sessions, through the real CLI on a tiny user system (a process of its own where a signal
is sent to it, in this process otherwise): an --overwrite keeps the run it replaces until the new one is finished,
SIGTERM interrupts like Ctrl-C, and --resume runs again the cases whose judge failed, reports the run's first start
and total time, and leaves one history row per run folder.

The served judge is the protocol-level test server (tests/fake_llm_server.py), used for what it is for: an outage
(HTTP 500 on every question), then a server that answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from conftest import sigint_default
from fake_llm_server import Fault, FakeLLMServer
from inprocess import run_evaluations

ROOT = Path(__file__).resolve().parents[1]

#: q3 hangs while the file HANG names exists (a system stuck on one case); every case answers at once otherwise
SYSTEM = '''
import os
import time
from pathlib import Path

DOCS = {"q1": "d1", "q2": "d2", "q3": "d3"}


def search(request):
    while request["case_id"] == "q3" and Path(os.environ["HANG"]).exists():
        time.sleep(0.05)
    doc = DOCS[request["case_id"]]
    return {"retrieved": [{"id": doc}, {"id": "d4"}]}


def search_stuck(request):
    """Every case hangs while the file HANG names exists (a system stuck from its first case)."""
    while Path(os.environ["HANG"]).exists():
        time.sleep(0.05)
    return {"retrieved": [{"id": DOCS[request["case_id"]]}]}


def answer(request):
    """Takes 50 ms, and counts its calls in the file CALLS names."""
    with open(os.environ["CALLS"], "a") as calls:
        calls.write(request["case_id"] + "\\n")
    time.sleep(0.05)
    return {"retrieved": [{"id": "d1"}, {"id": "d2"}], "answer": "The tower opened in 1889."}
'''
DOCS = {"d1": "The Eiffel Tower in Paris was completed in 1889.", "d2": "Tokyo is the capital of Japan.",
        "d3": "Hamlet was written by William Shakespeare.", "d4": "The river floods in spring."}
QUESTIONS = {"q1": "When was the Eiffel Tower completed?", "q2": "What is the capital of Japan?",
             "q3": "Who wrote Hamlet?"}


def _work(tmp_path: Path, config: str) -> dict[str, str]:
    (tmp_path / "q.jsonl").write_text("".join(
        json.dumps({"id": q, "query": text, "relevant_doc_ids": [f"d{q[1]}"]}) + "\n" for q, text in QUESTIONS.items()))
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in DOCS.items()))
    (tmp_path / "lifecycle_sys.py").write_text(SYSTEM)
    (tmp_path / "c.yaml").write_text(config)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]), "NO_COLOR": "1",
            "HF_HUB_OFFLINE": "1", "HANG": str(tmp_path / "hang"), "EVALUATIONS_CACHE_DIR": str(tmp_path / "cache"),
            "CALLS": str(tmp_path / "calls.txt")}


def _command(tmp_path: Path, system: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "evaluations", "run", str(tmp_path / "q.jsonl"), "--corpus",
            str(tmp_path / "corpus.jsonl"), "--system", system, "--config", str(tmp_path / "c.yaml"),
            "--no-progress", *extra]


def _run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """``command`` (``python -m evaluations ARGS``) in this process: the runs no signal is sent to."""
    assert command[:3] == [sys.executable, "-m", "evaluations"], command
    return run_evaluations(command[3:], text=True, env=env, cwd=cwd)


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


def _finished_run(tmp_path: Path) -> tuple[dict[str, str], Path, dict[str, str]]:
    """A finished run of the tiny system in ``tmp_path/out``: the environment, the folder and its files' hashes."""
    env = _work(tmp_path, "cache: {enabled: false}\njudge: {reference_free: []}\nrequests: {timeout: 600}\n")
    out = tmp_path / "out"
    first = _run(_command(tmp_path, "lifecycle_sys:search", "--out", str(out)), env, tmp_path)
    assert first.returncode == 0, first.stderr
    return env, out, _hashes(out)


def _interrupt_when(command: list[str], ready: Callable[[], bool], env: dict[str, str], tmp_path: Path, sig: int,
                    linger: float = 0.0) -> tuple[int, str]:
    """Run ``command`` with the system hanging (until the command has ended), send ``sig`` ``linger`` seconds after
    ``ready()`` holds; its exit code and stderr."""
    (tmp_path / "hang").touch()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                            preexec_fn=sigint_default)
    try:
        deadline = time.monotonic() + 120
        while not ready():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        time.sleep(linger)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        (tmp_path / "hang").unlink()
    return proc.returncode, err


def _interrupt_after_two_cases(command: list[str], out: Path, env: dict[str, str], tmp_path: Path,
                               sig: int, linger: float = 0.0) -> tuple[int, str]:
    """``_interrupt_when`` two cases are written (q3 hangs)."""
    partial = out / "partial.jsonl"
    return _interrupt_when(command, lambda: partial.exists() and len(partial.read_text().splitlines()) == 2, env,
                           tmp_path, sig, linger)


def test_an_interrupted_overwrite_keeps_the_old_run_and_sigterm_is_an_interruption(tmp_path, run_reports):
    """--overwrite of a finished run, stopped by SIGTERM (as `kill`, `timeout` or a cancelled CI job stop it) once
    two of three cases are done: exit 130 with the Ctrl-C message, the two cases kept for --resume, and the old run's
    files untouched in .previous-run, named on the console. The resume finishes the new run, removes the old one,
    and reports the run's first start and the time of both sessions."""
    env, out, old = _finished_run(tmp_path)
    assert {"summary.json", "report.json", "cases.jsonl", "report.html"} <= set(old)

    launched = time.time()
    code, err = _interrupt_after_two_cases(
        _command(tmp_path, "lifecycle_sys:search", "--out", str(out), "--overwrite", "--concurrency", "1"), out, env,
        tmp_path, signal.SIGTERM, linger=2.0)  # the first session lasts at least 2 s
    assert code == 130, err
    assert f"interrupted: 2 finished case(s) are kept in {out}; finish the run with the same command and " \
           f"--resume {out}" in err, err
    assert f"kept in {out / '.previous-run'} until this one finishes" in err and "aborted" in err
    assert "Traceback" not in err
    assert _hashes(out / ".previous-run") == old  # the old run, byte for byte
    assert [json.loads(line)["name"] for line in (out / "cases.jsonl").read_text().splitlines()] == ["q1", "q2"]
    assert not (out / "summary.json").exists()

    resume_launched = time.time()
    resumed = _run(_command(tmp_path, "lifecycle_sys:search", "--resume", str(out)), env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "2 finished, 1 to run" in resumed.stderr
    assert not (out / ".previous-run").exists()  # the new run is finished: the old one is replaced for good
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["cases"] == 3 and summary["counts"]["complete"] == 3
    # the run began with the interrupted session and lasted at least its 2 s, not the resume's fraction of it
    assert launched <= datetime.fromisoformat(summary["run"]["started"]).timestamp() < resume_launched
    assert summary["run"]["seconds"] >= 2.0 and summary["run"]["resumed"] is True


def test_an_overwrite_that_fails_before_its_first_case_gives_the_old_run_back(tmp_path):
    """Ctrl-C during an --overwrite keeps the old run in .previous-run; another --overwrite that fails before its
    first case (--skip-db without an index: bad input found once the folder is open) removes the unfinished run and
    leaves the folder as the old run left it, byte for byte."""
    env, out, old = _finished_run(tmp_path)
    code, err = _interrupt_after_two_cases(
        _command(tmp_path, "lifecycle_sys:search", "--out", str(out), "--overwrite", "--concurrency", "1"), out, env,
        tmp_path, signal.SIGINT)
    assert code == 130 and f"kept in {out / '.previous-run'} until this one finishes" in err, err
    assert _hashes(out / ".previous-run") == old and (out / "partial.jsonl").is_file()

    failing = [sys.executable, "-m", "evaluations", "run", str(tmp_path / "q.jsonl"), "--corpus",
               str(tmp_path / "corpus.jsonl"), "--search-mode", "fts", "--skip-qa", "--db", str(tmp_path / "nodb"),
               "--skip-db", "--config", str(tmp_path / "c.yaml"), "--out", str(out), "--overwrite", "--no-progress"]
    proc = _run(failing, env, tmp_path)
    assert proc.returncode == 2 and "--skip-db" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(old) and _hashes(out) == old


def test_an_overwrite_interrupted_before_its_first_case_gives_the_old_run_back(tmp_path):
    """Ctrl-C during an --overwrite whose system has not finished a case: nothing of the new run is kept, the old
    run is back in the folder byte for byte (no .previous-run left), and the message says so instead of offering a
    --resume of nothing."""
    env, out, old = _finished_run(tmp_path)
    command = _command(tmp_path, "lifecycle_sys:search_stuck", "--out", str(out), "--overwrite")
    # the cases are under way (a second after the old run was set aside), none finished
    code, err = _interrupt_when(command, lambda: (out / ".previous-run").is_dir() and (out / "run.json").is_file(),
                                env, tmp_path, signal.SIGINT, linger=1.0)
    assert code == 130, err
    assert "interrupted before any case finished: nothing was kept" in err and "back in place" in err, err
    assert "--resume" not in err and "Traceback" not in err, err
    assert not (out / ".previous-run").exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(old) and _hashes(out) == old


def test_resume_runs_the_cases_whose_judge_failed_again(tmp_path):
    """A judge outage fails the context-relevance judge on every case (exit 3); once the server answers,
    --resume asks it again for those cases, replacing their records (no case twice), and exits 0; the history
    holds one row for the folder, the resumed run's. The system's replies are this run's own, reused: not called
    again, their latency the system's 50 ms, not the cache lookup's."""
    state = {"down": True}

    def respond(body):
        return Fault("500") if state["down"] else "yes"

    with FakeLLMServer(models=("judge",), responder=respond) as server:
        env = _work(tmp_path, "judge:\n  retries: 0\n  reference_free: [context_relevance]\n"
                              f"  model:\n    provider: openai\n    name: judge\n    base_url: {server.openai_url}\n"
                              f"cache:\n  path: {tmp_path / 'calls.sqlite'}\nrequests:\n  retries: 0\n"
                              f"history:\n  path: {tmp_path / 'history.sqlite'}\n")
        env["OPENAI_API_KEY"] = "x"
        out = tmp_path / "run"
        failed = _run(_command(tmp_path, "lifecycle_sys:answer", "--out", str(out)), env, tmp_path)
        assert failed.returncode == 3, failed.stderr
        assert f"once their cause is fixed, the same command with --resume {out} runs them again" in failed.stderr
        assert json.loads((out / "summary.json").read_text())["counts"]["judge_failed"] == 3
        state["down"] = False
        asked_before = len(server.calls("/v1/chat/completions"))
        resumed = _run(_command(tmp_path, "lifecycle_sys:answer", "--resume", str(out)), env, tmp_path)
        asked = len(server.calls("/v1/chat/completions")) - asked_before
    assert resumed.returncode == 0, resumed.stderr
    assert "0 finished, 3 to run" in resumed.stderr and "Traceback" not in resumed.stderr
    assert asked == 6  # two chunks per case, each asked once
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert [r["name"] for r in records] == ["q1", "q2", "q3"]
    assert all(not r["judge_errors"] and r["judges"]["context_relevance"] == 1.0 for r in records)
    assert sorted((tmp_path / "calls.txt").read_text().split()) == ["q1", "q2", "q3"]  # each called once
    assert all(r["latency_ms"]["retrieve"] >= 50 and r["latency_ms"]["total"] >= 50 for r in records), records
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["judge_failed"] == 0 and summary["counts"]["complete"] == 3

    from evaluations.experiments.history import list_runs

    rows = list_runs(tmp_path / "history.sqlite")
    assert [Path(r["run_dir"]) for r in rows] == [out.resolve()]
    assert rows[0]["metrics"]["context_relevance"] == 1.0
