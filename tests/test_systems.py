"""Systems under test: a user's Python callable and a local HTTP service, both wrapping a real BM25 search over a
SciFact subset, evaluated end to end (`evaluations beir … --system`); metrics checked against pytrec_eval on the
same search run directly; bad responses are per-case errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
import pytrec_eval

from conftest import write_scifact_subset
from evaluations.core.errors import EvaluationsError
from evaluations.systems import SystemRequest, build_system
from evaluations.systems.callable import CallableSystem, SystemResponseError
from evaluations.systems.http import HTTPSystem
from scifact_bm25 import BM25

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent

USER_MODULE = '''
import os, sys
sys.path.insert(0, os.environ["BM25_HELPER_DIR"])
from scifact_bm25 import BM25

_index = BM25(os.environ["SCIFACT_DIR"])


def search(request):
    """The user's retriever: the request dict in, the response dict out."""
    return {"retrieved": _index.search(request["query"], request["k"]), "model": "bm25", "tier": "cpu"}


async def search_async(request):
    return search(request)


def dupes(request):
    """Chunk-level results: the 10th document comes back a second time, last, with the best score of all."""
    response = search(request)
    hits = response["retrieved"]
    if len(hits) >= 10:
        hits.append({**hits[9], "score": hits[0]["score"] + 1.0})
    return response


def broken(request):
    """Answers every third query with an item that has no id (a bug in the user's system)."""
    response = search(request)
    if int(request["case_id"]) % 3 == 0:
        response["retrieved"][0] = {"text": "no id here"}
    return response
'''


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    work = tmp_path_factory.mktemp("systems")
    scifact = write_scifact_subset(work / "scifact", 20, 60)
    (work / "user").mkdir()
    (work / "user" / "my_rag.py").write_text(USER_MODULE)
    env = {**os.environ, "BM25_HELPER_DIR": str(TESTS), "SCIFACT_DIR": str(scifact), "NO_COLOR": "1"}
    (work / "quiet.yaml").write_text("cache: {enabled: false}\nrequests: {backoff: 0.0, max_backoff: 0.0, retries: 3}\n")
    return work, scifact, env, BM25(scifact)


def run_beir(world, system: str, out: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    work, scifact, env, _ = world
    proc = subprocess.run([sys.executable, "-m", "evaluations", "beir", str(scifact), "--system", system, "--skip-qa",
                           "--config", str(work / "quiet.yaml"), "--out", str(work / out), "--no-progress", "--json",
                           "--k", "1,5,10,100", "--max-failures", "100%"],
                          capture_output=True, text=True, cwd=work / "user", env=env, timeout=600)
    cases = work / out / "cases.jsonl"
    return proc, [json.loads(line) for line in cases.read_text().splitlines()] if cases.exists() else []


def oracle(bm25: BM25, scifact: Path) -> dict:
    qrels: dict[str, dict[str, int]] = {}
    for line in (scifact / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc_id, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    run = {qid: {h["id"]: h["score"] for h in bm25.search(bm25.queries[qid], 100)} for qid in qrels}
    return pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "P_5", "recall_100"}).evaluate(run)


class _Handler(BaseHTTPRequestHandler):
    bm25: BM25
    seen: Counter

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):  # noqa: N802 - http.server's name
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen[request["case_id"]] += 1
        if self.path == "/flaky" and self.seen[request["case_id"]] == 1:
            return self._send(503, b'{"error": "warming up"}')
        if self.path == "/not-json":
            return self._send(200, b"<html>oops</html>")
        if self.path == "/wrong-shape":
            return self._send(200, json.dumps({"results": []}).encode())
        body = {"retrieved": self.bm25.search(request["query"], request["k"]), "latency_ms": {"retrieve": 1.5}}
        self._send(200, json.dumps(body).encode())

    def _send(self, status: int, body: bytes):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server(world):
    handler = type("Handler", (_Handler,), {"bm25": world[3], "seen": Counter()})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler.seen
    httpd.shutdown()
    httpd.server_close()


def test_callable_system_end_to_end_equals_pytrec_eval(world):
    work, scifact, _, bm25 = world
    proc, records = run_beir(world, "my_rag:search", "callable")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    expected = oracle(bm25, scifact)
    assert len(records) == len(expected) == 20 and all(r["status"] == "ok" for r in records)
    for r in records:
        assert r["metrics"]["ndcg@10"] == pytest.approx(expected[r["name"]]["ndcg_cut_10"], abs=1e-9)
        assert r["metrics"]["p@5"] == pytest.approx(expected[r["name"]]["P_5"], abs=1e-9)
        assert r["tier"] == "cpu"
    assert summary["metrics"]["recall@100"] == pytest.approx(
        sum(v["recall_100"] for v in expected.values()) / len(expected))


def test_http_system_retries_and_equals_the_callable(world, server):
    url, seen = server
    proc, records = run_beir(world, f"{url}/flaky", "http")
    assert proc.returncode == 0, proc.stderr
    assert len(records) == 20 and all(r["status"] == "ok" for r in records)
    assert all(seen[r["name"]] == 2 for r in records)  # a 503 first, then the answer (retried by the transport)
    _, callable_records = run_beir(world, "my_rag:search_async", "callable_async")
    by_name = {r["name"]: r for r in callable_records}
    for r in records:
        assert r["retrieved"] == by_name[r["name"]]["retrieved"]
        assert r["metrics"] == by_name[r["name"]]["metrics"]
        assert r["latency_ms"]["retrieve"] == 1.5  # the stage latency the service reported


def test_bad_responses_are_per_case_errors(world, server):
    url, _ = server
    proc, records = run_beir(world, "my_rag:broken", "broken")
    failed = [r for r in records if r["status"] == "failed"]
    assert {r["name"] for r in failed} == {r["name"] for r in records if int(r["name"]) % 3 == 0} != set()
    assert all("retrieved.0.id" in r["error"] and f"case {r['name']}" in r["error"] for r in failed)
    assert all(r["status"] == "ok" for r in records if int(r["name"]) % 3)

    request = SystemRequest(query="vitamin D", k=5, case_id="q7")
    with pytest.raises(SystemResponseError, match=r"case q7.*not JSON"):
        anyio.run(HTTPSystem(f"{url}/not-json"), request)
    with pytest.raises(SystemResponseError, match=r"neither 'retrieved' nor 'answer'"):
        anyio.run(HTTPSystem(f"{url}/wrong-shape"), request)
    with pytest.raises(SystemResponseError, match=r"is a list"):
        anyio.run(CallableSystem(lambda r: [r["query"]], id="lambda"), request)
    ok = anyio.run(build_system(f"{url}/ok"), request)
    assert len(ok.retrieved) == 5 and ok.latency_ms == {"retrieve": 1.5}


def test_bad_system_specs_fail_before_any_work(world):
    with pytest.raises(EvaluationsError, match="cannot import module 'no_such_module_xyz'"):
        build_system("no_such_module_xyz:search")
    with pytest.raises(EvaluationsError, match="has no attribute 'nope'"):
        build_system("json:nope")
    with pytest.raises(EvaluationsError, match="not 'module:function'"):
        build_system("just-a-name")
    assert build_system("json:dumps").id == "json:dumps"


def test_http_system_replies_are_cached_like_model_calls(world, server, tmp_path):
    """With the cache on, a second identical run asks the endpoint nothing and scores the same rankings."""
    url, seen = server
    work, scifact, env, _ = world
    config = tmp_path / "cached.yaml"
    config.write_text(f"cache: {{enabled: true, path: {tmp_path / 'calls.sqlite'}}}\n")
    env = {**env, "EVALUATIONS_CACHE_PATH": str(tmp_path / "calls.sqlite")}

    def run(out: str) -> tuple[int, list[dict]]:
        before = sum(seen.values())
        proc = subprocess.run([sys.executable, "-m", "evaluations", "beir", str(scifact), "--system", f"{url}/cached",
                               "--skip-qa", "--config", str(config), "--out", str(tmp_path / out), "--no-progress"],
                              capture_output=True, text=True, cwd=work / "user", env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr
        records = [json.loads(line) for line in (tmp_path / out / "cases.jsonl").read_text().splitlines()]
        return sum(seen.values()) - before, records

    asked, cold = run("cold")
    assert asked == len(cold) == 20
    asked, warm = run("warm")
    assert asked == 0
    assert [(r["name"], r["retrieved"], r["metrics"]) for r in warm] == [(r["name"], r["retrieved"], r["metrics"])
                                                                          for r in cold]


def test_a_document_returned_twice_keeps_its_best_score(world):
    work, scifact, _, bm25 = world
    proc, records = run_beir(world, "my_rag:dupes", "dupes")
    assert proc.returncode == 0, proc.stderr
    qrels: dict[str, dict[str, int]] = {}
    for line in (scifact / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc_id, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    run = {}
    for qid in qrels:
        hits = bm25.search(bm25.queries[qid], 100)
        scores = {h["id"]: h["score"] for h in hits}
        if len(hits) >= 10:
            scores[hits[9]["id"]] = hits[0]["score"] + 1.0  # the oracle's rule: the best score of a document
        run[qid] = scores
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recip_rank"}).evaluate(run)
    for r in records:
        assert r["metrics"]["ndcg@10"] == pytest.approx(expected[r["name"]]["ndcg_cut_10"], abs=1e-9)
        assert len(r["retrieved"]) == len(set(r["retrieved"]))
        top = max(run[r["name"]], key=lambda d: (run[r["name"]][d], d))
        assert r["retrieved"][0] == top


def test_an_http_system_that_is_down_is_one_error_before_any_work(world):
    """A --system endpoint nobody listens on (a closed local port, an unresolvable host): exit 2 with one error
    naming the URL, and no run folder, instead of a failed case per question."""
    from fake_llm_server import closed_port_url

    work = world[0]
    for url in (closed_port_url() + "/search", "http://no-such-host.invalid:8000/search"):
        proc, records = run_beir(world, url, "down")
        assert proc.returncode == 2, proc.stderr
        assert f"--system {url}: cannot reach the system" in proc.stderr and "Traceback" not in proc.stderr
        assert records == [] and not (work / "down").exists()
