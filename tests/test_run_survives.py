"""Runs that survive: a failed answer never changes retrieval, every case is streamed to disk as it finishes,
and a run killed with SIGKILL resumes to exactly the straight run's result.

The QA model is the protocol-level test server (tests/fake_llm_server.py) driven by the real pydantic-ai
client inside the ``evaluations`` process: it is used here for what it is for, scripted failures and timing.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPLIQA_20
from fake_llm_server import FakeLLMServer, tool_call
from test_cli_retrieval import REPO, run_cli

from evaluations.core.errors import EvaluationsError
from evaluations.results import RunFolder
from evaluations.results.folder import PARTIAL_FILE
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)

pytestmark = pytest.mark.usefixtures("shared_minilm")

ANSWERABLE = 18  # RepliQA sample20: 20 rows, 2 unanswerable are skipped
#: the runs with answers read the first 10 of them (``--limit``; rows 0-9: the unanswerable ones are rows 12 and 17):
#: every third answer broken leaves 4 failed and 6 answered cases, and a run killed after 5 cases has 5 left to run
CASES = 10


def _gold() -> dict[str, str]:
    with gzip.open(REPLIQA_20, "rt") as handle:
        return {row["question"]: row["answer"] for row in map(json.loads, handle)}


def _question(request: dict) -> str:
    """The case's question; pydantic-ai's retry prompt after an empty text reply (``… <system>Please return
    text.</system>``) is cut off, so a retried request is answered like the first one (not with HTTP 500s and
    backoff)."""
    text = " ".join(str(m.get("content")) for m in request["messages"] if m.get("role") == "user")
    return re.sub(r"\s*<system>.*?</system>\s*$", "", text.rsplit("Question: ", 1)[1], flags=re.S).strip()


def _responder(gold: dict[str, str], broken: set[str]):
    """Tool-mode requests get a tool call (broken JSON for the ``broken`` questions); every other output mode
    gets nothing usable for the broken ones, so their answer stage fails with the model's text on record."""

    def respond(request: dict):
        question = _question(request)
        tools = request.get("tools") or []
        if question in broken:
            return tool_call(tools[0]["function"]["name"], '{"answer": "Paris", oops') if tools else ""
        if tools:
            return tool_call(tools[0]["function"]["name"], {"answer": gold[question], "cited_ids": [],
                                                              "confidence": 0.9})
        return gold[question]

    return respond


def _read(out: Path) -> tuple[dict, dict[str, dict]]:
    summary = json.loads((out / "summary.json").read_text())
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    return summary, {r["name"]: r for r in records}


def _cli(db: Path, *extra: str) -> list[str]:
    """The answering run over the first ``CASES`` answerable questions."""
    return ["repliqa", "--source", str(REPLIQA_20), "--limit", str(CASES), "--search-mode", "fts",
            "--qa-model", "ollama:qa-llm", "--db", str(db), "--no-progress", *extra]


def _env(server: FakeLLMServer, data: Path) -> dict[str, str]:
    """The server, and a model-call cache of this ``data`` folder's own (runs sharing it share cached replies)."""
    return {"OLLAMA_BASE_URL": server.url, "EVALUATIONS_CACHE_PATH": str(data / "model_calls.sqlite")}


@pytest.fixture(scope="module")
def fts_db(tmp_path_factory) -> Path:
    """One ``--db`` folder for the module's answering runs (RepliQA, BM25): the first run indexes the 20 documents,
    the others find them there. Not what these tests are about (a killed run only reads it)."""
    return tmp_path_factory.mktemp("fts_db") / "db"


@pytest.fixture(scope="module")
def qa_runs(tmp_path_factory, fts_db):
    """The same ``CASES`` cases with answers (every third answer stage broken) and with --skip-qa."""
    work = tmp_path_factory.mktemp("isolation")
    gold = _gold()
    broken = {q for i, q in enumerate(gold) if i % 3 == 0}
    with FakeLLMServer(models=("qa-llm",), responder=_responder(gold, broken)) as server:
        env = _env(server, work / "data")
        with_qa = run_cli(*_cli(fts_db, "--out", str(work / "qa")), env=env)
        # resuming re-runs the cases that did not complete (the broken answers fail again, the fake server being the
        # same); with a tolerance for them the exit code says 0
        tolerated = run_cli(*_cli(fts_db, "--resume", str(work / "qa"), "--max-failures", "50%"), env=env)
        skip = run_cli(*_cli(fts_db, "--out", str(work / "skip"), "--skip-qa"), env=env)
    return work, broken, with_qa, tolerated, skip


def test_answer_failures_never_touch_retrieval(qa_runs):
    work, broken, with_qa, _, skip = qa_runs
    assert skip.returncode == 0, skip.stderr
    summary, records = _read(work / "qa")
    skip_summary, skip_records = _read(work / "skip")
    failed = {name for name, r in records.items() if r["qa"]["status"] == "failed"}
    assert {records[n]["query"] for n in failed} == {r["query"] for r in records.values() if r["query"] in broken}
    assert len(records) == len(skip_records) == CASES and 0 < len(failed) < CASES
    # the retrieval of every case, failed answer or not, is the --skip-qa run's, and so are the means
    for name, record in records.items():
        assert record["status"] == "ok" and record["retrieved"] == skip_records[name]["retrieved"]
        assert record["metrics"] == skip_records[name]["metrics"] and record["metrics"]["ndcg@10"] >= 0
    # (the answering run's metrics also hold its reference-free means, e.g. answer_relevance: not retrieval's)
    retrieval = {k: summary["metrics"][k] for k in skip_summary["metrics"]}
    assert retrieval == skip_summary["metrics"] and summary["metrics"]["ndcg@10"] > 0
    # the failure is recorded by stage, with what the model said
    for name in failed:
        qa = records[name]["qa"]
        assert records[name]["answer"] is None and "oops" in qa["raw_text"] and qa["error"]
        assert records[name]["usage"]["requests"] >= 2
    assert summary["counts"]["qa_failed"] == len(failed) and summary["counts"]["failed"] == 0
    assert summary["counts"]["incomplete"] == len(failed)
    assert summary["answers"]["attempted"] == CASES and summary["answers"]["answered"] == CASES - len(failed)
    # judges judge only real answers: no verdict for a failed answer stage, never a silent 0
    assert summary["answers"]["judges"]["exact_match"]["n"] == CASES - len(failed)
    assert summary["answers"]["judges"]["exact_match"]["mean"] == 1.0
    # ... but accuracy counts every case to answer: a failed answer stage is an incorrect answer
    exact = summary["answers"]["judges"]["exact_match"]
    assert (exact["correct"], exact["n_cases"]) == (CASES - len(failed), CASES)
    assert exact["accuracy"] == pytest.approx((CASES - len(failed)) / CASES)
    assert summary["answers"]["answered_rate"] == pytest.approx((CASES - len(failed)) / CASES)
    assert f"answered {CASES - len(failed)}/{CASES}" in with_qa.stderr


def test_exit_code_says_cases_failed_and_max_failures_tolerates(qa_runs):
    work, _, with_qa, tolerated, _ = qa_runs
    assert with_qa.returncode == 3, with_qa.stderr
    assert "did not complete" in with_qa.stderr and "answer failed" in with_qa.stderr
    assert "Traceback" not in with_qa.stderr
    assert tolerated.returncode == 0, tolerated.stderr
    assert (work / "qa" / "summary.json").is_file()  # a run with failures still writes everything


def kill_after_cases(cli_args: list[str], env: dict[str, str], out: Path, cases: int) -> int:
    """Start ``evaluations *cli_args`` writing to ``out``, SIGKILL it once ``cases`` cases are on disk; the
    number of cases it kept."""
    args = [sys.executable, "-m", "evaluations", *cli_args]
    proc = subprocess.Popen(args, cwd=REPO, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    written = out / "cases.jsonl"
    while time.monotonic() < deadline and proc.poll() is None:
        if written.is_file() and len(written.read_text().splitlines()) >= cases:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return len(written.read_text().splitlines())


def test_kill_and_resume_equals_a_straight_run(tmp_path, fts_db):
    gold = _gold()
    # each answer takes 0.15 s: the killed run (one case at a time) is still running when its 5th case of 10 is on
    # disk (polled every 0.05 s); the straight run answers 4 at a time (its cases.jsonl is written in dataset order)
    with FakeLLMServer(models=("qa-llm",), responder=_responder(gold, set()), latency=0.15) as server:
        straight = run_cli(*_cli(fts_db, "--concurrency", "4", "--out", str(tmp_path / "straight")),
                           env=_env(server, tmp_path / "data-a"))
        assert straight.returncode == 0, straight.stderr

        out = tmp_path / "killed"
        kept = kill_after_cases(_cli(fts_db, "--concurrency", "1", "--out", str(out)),
                                _env(server, tmp_path / "data-b"), out, 5)
        assert 5 <= kept < CASES and not (out / "summary.json").exists()
        assert (out / PARTIAL_FILE).is_file()

        requests_before = len(server.calls("/v1/chat/completions"))
        resumed = run_cli(*_cli(fts_db, "--concurrency", "1", "--resume", str(out)),
                          env=_env(server, tmp_path / "data-b"))
        assert resumed.returncode == 0, resumed.stderr
        assert f"{kept} finished, {CASES - kept} to run" in resumed.stderr
        # only the unfinished cases were asked again (at most the one in flight at the kill is repeated)
        asked = len(server.calls("/v1/chat/completions")) - requests_before
        assert CASES - kept <= asked <= CASES - kept + 1

    a_summary, a_records = _read(tmp_path / "straight")
    b_summary, b_records = _read(out)
    # same cases, same (dataset) order, none duplicated
    assert len(a_records) == CASES and list(a_records) == list(b_records)
    for name, record in a_records.items():
        other = b_records[name]
        for key in ("retrieved", "scores", "metrics", "answer", "judges", "qa", "context", "context_text"):
            assert record[key] == other[key], (name, key)
    assert a_summary["metrics"] == b_summary["metrics"]
    assert a_summary["counts"] == b_summary["counts"]
    assert a_summary["answers"]["judges"] == b_summary["answers"]["judges"]
    assert a_summary["analyses"] == b_summary["analyses"]
    assert b_summary["run"]["resumed"] is True and not (out / PARTIAL_FILE).exists()


def test_a_line_cut_by_a_crash_is_dropped_on_resume(tmp_path, scifact_small):
    out = tmp_path / "run"
    proc = run_cli("beir", str(scifact_small), "--search-mode", "fts", "--db", str(tmp_path / "db"),
                   "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    from evaluations.results.outputs import load_report

    report = load_report(out / "report.json")
    # rebuild the in-flight state of a run that crashed after 3 cases, in the middle of writing the 4th
    for name in ("summary.json", "report.json", "cases.jsonl"):
        (out / name).unlink()
    identity = json.loads((out / "run.json").read_text())
    folder = RunFolder(out, identity, [])
    for case in report.cases[:3]:
        folder.add(case)
    folder.close()
    with (out / PARTIAL_FILE).open("a") as handle:
        handle.write('{"kind": "case", "name": "cut-in-ha')
    with (out / "cases.jsonl").open("a") as handle:
        handle.write('{"name": "cut')
    resumed = RunFolder.open(out=None, resume=out, overwrite=False, name="x", identity=identity)
    assert sorted(c.name for c in resumed.done) == sorted(c.name for c in report.cases[:3])
    lines = (out / "cases.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["status"] == "ok" for line in lines)
    resumed.close()


def test_out_folder_rules(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    identity = {"dataset": "beir"}
    first = RunFolder.open(out=None, resume=None, overwrite=False, name="same", identity=identity)
    second = RunFolder.open(out=None, resume=None, overwrite=False, name="same", identity=identity)
    assert first.path != second.path and first.path.parent == second.path.parent == Path("runs")
    first.close(), second.close()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(EvaluationsError, match="not empty"):
        RunFolder.open(out=busy, resume=None, overwrite=False, name="x", identity=identity)
    with pytest.raises(EvaluationsError, match="other files"):  # --overwrite never deletes a user's files
        RunFolder.open(out=busy, resume=None, overwrite=True, name="x", identity=identity)
    assert (busy / "notes.txt").read_text() == "mine"
    with pytest.raises(EvaluationsError, match="no run.json"):
        RunFolder.open(out=None, resume=busy, overwrite=False, name="x", identity=identity)


def test_resuming_a_run_of_an_earlier_version_names_the_new_setting(tmp_path):
    """A run folder written before a setting existed cannot be resumed; the error says why instead of asking for
    the original command again (which would not help)."""
    old = {"dataset": "beir", "config": {"judge": {"model": "embedded"}}}
    folder = RunFolder.open(out=tmp_path / "old", resume=None, overwrite=False, name="x", identity=old)
    folder.close()
    now = {"dataset": "beir", "config": {"judge": {"model": "embedded", "reference_free": "auto"}}}
    with pytest.raises(EvaluationsError) as raised:
        RunFolder.open(out=None, resume=tmp_path / "old", overwrite=False, name="x", identity=now)
    assert "config.judge.reference_free: run None, now 'auto'" in str(raised.value)
    assert "earlier version" in raised.value.fix and "config.judge.reference_free" in raised.value.fix
    changed = {"dataset": "beir", "config": {"judge": {"model": "ollama:qwen"}}}
    with pytest.raises(EvaluationsError) as raised:
        RunFolder.open(out=None, resume=tmp_path / "old", overwrite=False, name="x", identity=changed)
    assert "repeat the original command" in raised.value.fix


def test_repeat_and_tags_segments(tmp_path, fts_db):
    out = tmp_path / "rep"
    proc = run_cli("repliqa", "--source", str(REPLIQA_20), "--search-mode", "fts", "--skip-qa", "--repeat", "2",
                   "--tags", "answerable", "--db", str(fts_db), "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    summary, records = _read(out)
    cases = {r["case"] for r in records.values()}
    assert len(records) == 2 * len(cases) == 2 * ANSWERABLE  # the 2 unanswerable rows are not selected
    assert sorted(r["repeat"] for r in records.values()) == [0] * ANSWERABLE + [1] * ANSWERABLE
    assert all("answerable" in r["tags"] for r in records.values())
    # BM25 is deterministic: the run-to-run spread is reported as none, not pretended
    spread = summary["repeats"]["metrics"]["ndcg@10"]
    assert summary["repeats"]["n"] == 2 and spread["identical"] and spread["sd"] == 0.0
    segment = summary["segments"]["answerable"]
    assert segment["cases"] == 2 * ANSWERABLE
    assert segment["metrics"]["ndcg@10"] == pytest.approx(summary["metrics"]["ndcg@10"])


def test_ids_that_never_match_are_said_loudly(tmp_path, scifact_small):
    """A user's system whose document ids differ from the dataset's (here: prefixed) scores 0 everywhere; the
    run says why instead of printing zeros silently, and exits 3: no id it returned is in the corpus."""
    (tmp_path / "prefixed_system.py").write_text(
        "import json\n"
        "from pathlib import Path\n"
        f"DOCS = [json.loads(l)['_id'] for l in Path({str(scifact_small / 'corpus.jsonl')!r}).read_text().splitlines()]\n"
        "def search(request):\n"
        "    return {'retrieved': [{'id': 'doc-' + d, 'score': 1.0 / (i + 1)} for i, d in enumerate(DOCS[:10])]}\n")
    out = tmp_path / "run"
    proc = run_cli("beir", str(scifact_small), "--system", "prefixed_system:search", "--out", str(out),
                   "--no-progress", env={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 3, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    n = 10 * summary["counts"]["cases"]
    assert summary["unknown_ids"]["count"] == summary["unknown_ids"]["retrieved"] == n
    assert f"exit 3: none of the {n} retrieved ids is in the corpus" in proc.stderr
    (warning,) = summary["warnings"]
    assert "ids" in warning["message"] and all(d.startswith("doc-") for d in warning["retrieved_examples"])
    assert "warning: no retrieved id" in proc.stderr and "'doc-" in proc.stderr
    assert summary["metrics"]["ndcg@10"] == 0.0 and summary["run"]["system"]


def test_limit_counts_the_tagged_queries_and_an_unknown_tag_names_the_tags(tmp_path):
    """``--tags T --limit N`` is the first N queries with T (the limit was applied first: the first query, not
    tagged, left nothing to run); a tag no query has names the tags there are; ``--limit 0`` is refused."""
    from conftest import assert_one_error

    docs = ["The Eiffel Tower is in Paris.", "Mount Fuji is the highest mountain in Japan.",
            "The Amazon river flows through Brazil."]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                                                   for i, t in enumerate(docs)))
    rows = [{"id": "q0", "query": "Where is the Eiffel Tower?", "relevant_doc_ids": ["d0"]},
            {"id": "q1", "query": "Which mountain is the highest in Japan?", "relevant_doc_ids": ["d1"],
             "tags": ["geography"]},
            {"id": "q2", "query": "Where does the Amazon flow?", "relevant_doc_ids": ["d2"], "tags": ["geography"]}]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    common = (str(tmp_path / "questions.jsonl"), "--corpus", str(tmp_path / "corpus.jsonl"), "--search-mode",
              "fts", "--skip-qa", "--no-reference-free", "--db", str(tmp_path / "db"), "--no-progress")
    out = tmp_path / "tagged"
    proc = run_cli("run", *common, "--tags", "geography", "--limit", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    _, records = _read(out)
    assert [r["case"] for r in records.values()] == ["q1"]
    proc = run_cli("run", *common, "--tags", "nosuch", "--out", str(tmp_path / "none"))
    assert_one_error(proc.returncode, proc.stderr, "--tags: no query has the tag 'nosuch'",
                     "fix: use tags the queries have: geography")
    proc = run_cli("run", *common, "--limit", "0", "--out", str(tmp_path / "zero"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--limit" in proc.stderr
    assert not (tmp_path / "none").exists() and not (tmp_path / "zero").exists()
