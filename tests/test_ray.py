"""``--executor ray`` on a real local Ray cluster (``ray.init(num_cpus=2)`` in this process, no mock): the same
cases, rankings, metrics and answers as ``--executor local``; a killed worker loses and duplicates no case; a
cached re-run makes no model call; a bad executor is one error (exit 2). The runs are the CLI's, in-process, so
they join the fixture's cluster; what must not join one (a local run, an unreachable address) runs in a
subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPLIQA_20, SCIFACT, write_scifact_subset
from fake_llm_server import FakeLLMServer, tool_call
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)
from test_cli_retrieval import REPO

pytestmark = pytest.mark.usefixtures("shared_minilm")  # in this process; Ray's workers embed for themselves
ray = pytest.importorskip("ray")  # the ray extra (scripts/setup.sh installs it): missing means a broken test install


@pytest.fixture(scope="module")
def cluster():
    """One local cluster for the module (the only one of the session)."""
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


#: the SciFact queries of ``scifact_local`` (the killed-worker run runs them all)
SCIFACT_QUERIES = 80


@pytest.fixture(scope="module")
def scifact_local(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A real SciFact subset (80 test queries, their relevant abstracts and 120 other abstracts; the whole corpus
    of 5,183 cost seconds to index, and every run read all of it) indexed once for BM25 (the tests' runs find it up
    to date), and the local run of its 80 queries over it: (the dataset folder, the index folder, the run folder)."""
    from evaluations.cli.root import main

    work = tmp_path_factory.mktemp("scifact_fts")
    data = write_scifact_subset(work / "data", SCIFACT_QUERIES, 120)
    main(["beir", str(data), "--limit", str(SCIFACT_QUERIES), "--search-mode", "fts", "--skip-qa", "--no-progress",
          "--db", str(work / "db"), "--out", str(work / "local")])
    return data, work / "db", work / "local"


def _records(out: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert len(rows) == len({r["case"] for r in rows}), "a case was recorded twice"
    return {r["case"]: r for r in rows}


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _same_results(local: Path, remote: Path, *, answers: bool = False) -> None:
    """Every case's ranking, scores, metrics (and answer) equal; the summary's metrics equal."""
    a, b = _records(local), _records(remote)
    assert a.keys() == b.keys()
    for case, row in a.items():
        other = b[case]
        assert (other["status"], other["retrieved"], other["metrics"]) == (row["status"], row["retrieved"],
                                                                           row["metrics"]), case
        assert other["scores"] == pytest.approx(row["scores"], abs=1e-6), case
        if answers:
            assert (other["answer"], other["qa"]["status"], other["usage"]) == (row["answer"], row["qa"]["status"],
                                                                               row["usage"]), case
    assert _summary(remote)["metrics"] == pytest.approx(_summary(local)["metrics"], abs=1e-9)


def test_scifact_fts_on_ray_equals_local(cluster, cli, tmp_path, scifact_local):
    """30 SciFact queries over BM25 on Ray: the local run's records and metrics; the summary names the executor
    (the cluster's address and its 2 CPUs) and a local run says it ran locally. One case worker: a pool of two,
    one of them killed mid-run, is test_a_killed_worker_loses_and_duplicates_no_case's."""
    data, db, _ = scifact_local
    args = ["beir", str(data), "--limit", "30", "--search-mode", "fts", "--skip-qa", "--no-progress", "--db",
            str(db)]
    assert cli([*args, "--out", str(tmp_path / "local")])[0] == 0
    code, _, err = cli([*args, "--out", str(tmp_path / "ray"), "--executor", "ray", "--concurrency", "1"])
    assert code == 0, err
    _same_results(tmp_path / "local", tmp_path / "ray")
    assert len(_records(tmp_path / "ray")) == 30
    executor = _summary(tmp_path / "ray")["run"]["executor"]
    assert executor["kind"] == "ray" and executor["workers"] == 2 and re.fullmatch(r"[\d.]+:\d+", executor["address"])
    assert _summary(tmp_path / "local")["run"]["executor"] == {"kind": "local"}


def _gold() -> dict[str, str]:
    import gzip

    with gzip.open(REPLIQA_20, "rt") as handle:
        return {row["question"]: row["answer"] for row in map(json.loads, handle)}


def test_repliqa_answers_on_ray_equal_local_and_a_cached_rerun_calls_no_model(cluster, cli, tmp_path, monkeypatch):
    """The QA answers of the workers (two, sharing the model-call cache) equal a local run's; a re-run on Ray (one
    worker) finds every answer in that cache. (The reference-free judge runs on the driver whatever the executor,
    and nothing here reads its verdicts: off.)"""
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "none")
    gold = _gold()

    def responder(request):  # the QA model: the gold answer for every other question, "I don't know" otherwise
        tool = request["tools"][0]["function"]
        text = " ".join(str(m.get("content")) for m in request["messages"] if m.get("role") == "user")
        question = text.rsplit("Question: ", 1)[1].strip()
        answer = gold[question] if list(gold).index(question) % 2 == 0 else "I don't know"
        return tool_call(tool["name"], {"answer": answer, "cited_ids": [], "confidence": 0.7})

    with FakeLLMServer(models=("qa-llm",), responder=responder) as server:
        args = ["repliqa", "--source", str(REPLIQA_20), "--limit", "6", "--search-mode", "fts", "--qa-model",
                "openai:qa-llm", "--db", str(tmp_path / "db"), "--no-progress"]
        config = tmp_path / "c.yaml"
        config.write_text(f"qa: {{model: {{provider: openai, name: qa-llm, base_url: '{server.openai_url}'}}}}\n")
        args += ["--config", str(config)]
        code, _, err = cli([*args, "--out", str(tmp_path / "ray"), "--executor", "ray"])
        assert code == 0, err
        sent = len(server.calls("/v1/chat/completions"))
        assert sent == 6  # one QA call per case, made by the workers
        assert _summary(tmp_path / "ray")["model_calls"]["chat"] == {"calls": 6, "cached": 0, "live": 6, "failed": 0}
        code, _, err = cli([*args, "--out", str(tmp_path / "local"), "--no-cache"])
        assert code == 0, err
        _same_results(tmp_path / "local", tmp_path / "ray", answers=True)
        answered = [r["answer"]["answer"] for r in _records(tmp_path / "ray").values()]
        assert sorted(answered) == sorted(gold[q] if i % 2 == 0 else "I don't know"
                                          for i, q in enumerate(gold) if q in {r["query"] for r in
                                                                                _records(tmp_path / "ray").values()})
        before = len(server.calls("/v1/chat/completions"))
        code, _, err = cli([*args, "--out", str(tmp_path / "again"), "--executor", "ray", "--concurrency", "1"])
        assert code == 0, err
        assert len(server.calls("/v1/chat/completions")) == before  # the server saw no request
    assert _summary(tmp_path / "again")["model_calls"]["chat"] == {"calls": 6, "cached": 6, "live": 0, "failed": 0}
    _same_results(tmp_path / "ray", tmp_path / "again", answers=True)


def test_a_killed_worker_loses_and_duplicates_no_case(cluster, cli, tmp_path, scifact_local):
    data, db, local = scifact_local
    args = ["beir", str(data), "--limit", str(SCIFACT_QUERIES), "--search-mode", "fts", "--skip-qa",
            "--no-progress", "--db", str(db)]
    out = tmp_path / "killrun"
    killed: list[str] = []

    def kill_a_worker():
        cases = out / "cases.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if cases.is_file() and len(cases.read_text().splitlines()) >= 10:
                name = next(n for n in ray.util.list_named_actors() if n.startswith("cases:killrun:"))
                actor = ray.get_actor(name)
                ray.kill(actor, no_restart=False)  # Ray restarts it; its case is retried
                killed.append(f"after {len(cases.read_text().splitlines())} cases")
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    code, _, err = cli([*args, "--out", str(out), "--executor", "ray", "--concurrency", "2"])
    killer.join()
    assert code == 0, err
    assert killed, "the run ended before a worker could be killed"
    done = len(_records(out))
    assert done == SCIFACT_QUERIES and int(killed[0].split()[1]) < SCIFACT_QUERIES, killed  # the kill landed mid-run
    _same_results(local, out)


def test_bad_executor_is_one_error(cli, tmp_path):
    code, _, err = cli(["beir", str(SCIFACT), "--limit", "3", "--executor", "spark", "--out", str(tmp_path / "o")])
    assert code == 2 and "unknown executor 'spark'" in err and "Traceback" not in err
    config = tmp_path / "c.yaml"
    config.write_text("executor: rai\n")
    code, _, err = cli(["beir", str(SCIFACT), "--limit", "3", "--config", str(config), "--out", str(tmp_path / "o")])
    assert code == 2 and "executor" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_unreachable_cluster_is_one_error_and_a_local_run_imports_no_ray(tmp_path, scifact_local):
    """In a fresh process (this one runs a cluster): the default run never imports ray; then an address nobody
    listens on fails fast, exit 2. (One process for both: the local run leaves ray unimported, so the second run
    meets Ray as a new process does.)"""
    import socket

    data, db, _ = scifact_local
    with socket.socket() as sock:  # a free port, closed again: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = ["beir", str(data), "--limit", "3", "--search-mode", "fts", "--skip-qa", "--no-progress", "--db",
            str(db)]
    runs = [[*args, "--out", str(tmp_path / "local")],
            [*args, "--out", str(tmp_path / "o"), "--executor", f"ray:127.0.0.1:{port}"]]
    script = ("import json, sys\nfrom evaluations.cli.root import main\nlocal, remote = json.loads(sys.argv[1])\n"
              "try:\n    main(local)\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
              "print('ray' in sys.modules, flush=True)\nprint('-- unreachable --', file=sys.stderr, flush=True)\n"
              "main(remote)\n")
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(runs)], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert proc.stdout.strip().splitlines()[-1] == "False", proc.stderr
    assert json.loads((tmp_path / "local" / "summary.json").read_text())["run"]["executor"] == {"kind": "local"}
    unreachable = proc.stderr.split("-- unreachable --\n", 1)[1]
    assert proc.returncode == 2, proc.stderr
    assert f"cannot reach the Ray cluster at 127.0.0.1:{port}" in unreachable and "Traceback" not in unreachable
    assert not (tmp_path / "o").exists()


def test_matrix_cells_as_ray_tasks_equal_local_and_share_one_index(cluster, cli, tmp_path):
    """The first cell (vector search: it embeds the corpus on Ray Data actors) builds the index here, with the
    vectors, corpus fingerprint and rankings of a local run; the other (full-text search over the same index) runs as
    a Ray task (one case worker) and finds it up to date: it embeds nothing (the content-hash rule holds on Ray)."""
    import yaml

    subset = write_scifact_subset(tmp_path / "data", 6, 10)
    (tmp_path / "base.yaml").write_text(f"storage: {{data_dir: {tmp_path / 'home'}}}\n"
                                        f"history: {{path: {tmp_path / 'history.sqlite'}}}\n")
    grid = {"dataset": "beir", "source": str(subset), "skip_qa": True, "k": [1, 5, 10], "config": "base.yaml",
            "concurrency": 1,
            "axes": {"embedder": ["embedded:all-MiniLM-L6-v2"], "search_mode": ["vector", "fts"]}}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    code, _, err = cli(["matrix", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "ray"), "--no-progress",
                        "--executor", "ray"])
    assert code == 0, err
    assert "1 more cell(s) as Ray tasks" in err
    ray_cells = json.loads((tmp_path / "ray" / "matrix.json").read_text())["cells"]
    summaries = [_summary(Path(c["run_dir"])) for c in ray_cells]
    assert all(s["run"]["executor"]["kind"] == "ray" for s in summaries)
    # one index (the default folder per dataset and embedder): its chunks were embedded once, by one cell
    assert len({s["index"]["path"] for s in summaries}) == 1
    assert sum(s["index"]["embedded_chunks"] for s in summaries) == summaries[0]["index"]["embedded_chunks"] \
        == summaries[0]["index"]["chunks"] > 0
    (tmp_path / "base.yaml").write_text(f"storage: {{data_dir: {tmp_path / 'home-local'}}}\n")
    code, _, err = cli(["matrix", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "local"), "--no-progress"])
    assert code == 0, err
    local_cells = json.loads((tmp_path / "local" / "matrix.json").read_text())["cells"]
    assert [c["params"] for c in local_cells] == [c["params"] for c in ray_cells]
    for local, remote in zip(local_cells, ray_cells):
        _same_results(Path(local["run_dir"]), Path(remote["run_dir"]))
    local_index, ray_index = _summary(Path(local_cells[0]["run_dir"]))["index"], summaries[0]["index"]
    assert ray_index["fingerprint"] == local_index["fingerprint"]
    assert ray_index["embedded_chunks"] == local_index["embedded_chunks"] == local_index["chunks"] > 0
    assert ray_index["vectors"] == local_index["vectors"]


def test_an_ids_only_system_on_ray_gives_the_qa_agent_the_corpus_text_as_locally(cluster, cli, tmp_path,
                                                                                monkeypatch):
    """A ``--system`` endpoint that returns document ids without text: on Ray as in-process, the QA agent's prompt
    holds each id's corpus text (the worker gets it with its setup), and the records are the same. (One case
    worker; the reference-free judge, on the driver whatever the executor, is off: nothing here reads it.)"""
    import gzip
    import hashlib
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "none")
    with gzip.open(REPLIQA_20, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    # RepliQA's document id when a row has none: "doc-" + sha1 of the text (datasets/repliqa.py, written out here)
    doc_of = {r["question"]: "doc-" + hashlib.sha1(r["document_extracted"].encode()).hexdigest()[:12] for r in rows}
    opening = {r["question"]: " ".join(r["document_extracted"].split())[:200] for r in rows}

    class IdsOnly(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps({"retrieved": [{"id": doc_of[request["query"]]}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    def responder(request):  # the QA model says whether the prompt holds the question's document
        tool = request["tools"][0]["function"]
        text = " ".join(str(m.get("content")) for m in request["messages"] if m.get("role") == "user")
        question = text.rsplit("Question: ", 1)[1].strip()
        answer = "has the document" if opening[question] in " ".join(text.split()) else "no document"
        return tool_call(tool["name"], {"answer": answer, "cited_ids": [], "confidence": 0.7})

    system = ThreadingHTTPServer(("127.0.0.1", 0), IdsOnly)
    threading.Thread(target=system.serve_forever, daemon=True).start()
    try:
        with FakeLLMServer(models=("qa-llm",), responder=responder) as server:
            config = tmp_path / "c.yaml"
            config.write_text(f"qa: {{model: {{provider: openai, name: qa-llm, base_url: '{server.openai_url}'}}}}\n")
            args = ["repliqa", "--source", str(REPLIQA_20), "--limit", "4", "--system",
                    f"http://127.0.0.1:{system.server_address[1]}/search", "--qa-model", "openai:qa-llm",
                    "--config", str(config), "--no-cache", "--no-progress"]
            code, _, err = cli([*args, "--out", str(tmp_path / "ray"), "--executor", "ray", "--concurrency", "1"])
            assert code == 0, err
            code, _, err = cli([*args, "--out", str(tmp_path / "local")])
            assert code == 0, err
    finally:
        system.shutdown()
    answers = [r["answer"]["answer"] for r in _records(tmp_path / "ray").values()]
    assert answers and set(answers) == {"has the document"}, answers
    _same_results(tmp_path / "local", tmp_path / "ray", answers=True)
