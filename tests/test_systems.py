"""Systems under test: a user's Python callable and a local HTTP service, both wrapping a real BM25 search over a
SciFact subset, evaluated end to end (`evaluations beir … --system`); metrics checked against pytrec_eval on the
same search run directly; bad responses are per-case errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
import pytrec_eval

from conftest import sigint_default, write_scifact_subset
from evaluations.core.config import Requests
from evaluations.core.errors import EvaluationsError
from evaluations.systems import SystemRequest, SystemResponse, build_system
from evaluations.systems.callable import CallableSystem, SystemResponseError
from evaluations.systems.http import HTTPSystem
from scifact_bm25 import BM25
from inprocess import run_evaluations

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


def prefixed(request):
    """A system whose id scheme is not the corpus's: every id comes back as "doc:<id>", without text."""
    response = search(request)
    response["retrieved"] = [{"id": "doc:" + h["id"], "score": h["score"]} for h in response["retrieved"]]
    return response


def half_prefixed(request):
    """Every second item (ranks 2, 4, ...) comes back under an id the corpus does not hold."""
    response = search(request)
    for rank, hit in enumerate(response["retrieved"]):
        if rank % 2:
            hit["id"] = "doc:" + hit["id"]
    return response


def distances(request):
    """The same ranking, scored by distance (lower is better: the scores rise along the list); and without any
    score."""
    response = search(request)
    response["retrieved"] = [{**hit, "score": float(rank)} for rank, hit in enumerate(response["retrieved"])]
    return response


def unscored(request):
    response = search(request)
    response["retrieved"] = [{"id": hit["id"], "text": hit["text"]} for hit in response["retrieved"]]
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
    # $COLUMNS 40 for every run: piped, a run's output must not follow it (the table-width test reads the tables of
    # the module's runs)
    env = {**os.environ, "BM25_HELPER_DIR": str(TESTS), "SCIFACT_DIR": str(scifact), "NO_COLOR": "1",
           "COLUMNS": "40"}
    (work / "quiet.yaml").write_text("cache: {enabled: false}\nrequests: {backoff: 0.0, max_backoff: 0.0, retries: 3}\n")
    return work, scifact, env, BM25(scifact)


def run_beir(world, system: str, out: str, *, progress: bool = False,
             reports: bool = False) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``evaluations beir SCIFACT --system SYSTEM --json``; without ``--no-progress`` when ``progress``; the
    report pages after the run when ``reports``."""
    work, scifact, env, _ = world
    env = {**env, "EVALUATIONS_REPORTS": "all" if reports else "none"}
    proc = run_evaluations(["beir", str(scifact), "--system", system, "--skip-qa",
                           "--config", str(work / "quiet.yaml"), "--out", str(work / out), "--json",
                           "--k", "1,5,10,100", "--max-failures", "100%", *([] if progress else ["--no-progress"])],
                          capture_output=True, text=True, cwd=work / "user", env=env, timeout=600)
    cases = work / out / "cases.jsonl"
    return proc, [json.loads(line) for line in cases.read_text().splitlines()] if cases.exists() else []


@pytest.fixture(scope="module")
def search_run(world) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """One run of the user's plain callable (``my_rag:search``), read by every test about that run: its metrics,
    its (absent) unknown ids, its tables, its progress bar and the files it wrote (``--json`` without
    ``--no-progress``)."""
    return run_beir(world, "my_rag:search", "callable", progress=True, reports=True)


@pytest.fixture(scope="module")
def half_prefixed_run(world) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """One run of ``my_rag:half_prefixed`` (every second id not the corpus's), read by the unknown-ids test and the
    table-width test."""
    return run_beir(world, "my_rag:half_prefixed", "half_prefixed")


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
    redeployed = False

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
        if self.path == "/slow":
            time.sleep(1.5)
        hits = self.bm25.search(request["query"], request["k"])
        if self.redeployed:  # another system at the same URL: it misses the 10 best documents
            hits = hits[10:]
        body = {"retrieved": hits, "latency_ms": {"retrieve": 1.5}}
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
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler.seen, handler
    httpd.shutdown()
    httpd.server_close()


def test_callable_system_end_to_end_equals_pytrec_eval(world, search_run):
    work, scifact, _, bm25 = world
    proc, records = search_run
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
    url, seen, _ = server
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
    url, _, _ = server
    proc, records = run_beir(world, "my_rag:broken", "broken")
    failed = [r for r in records if r["status"] == "failed"]
    assert {r["name"] for r in failed} == {r["name"] for r in records if int(r["name"]) % 3 == 0} != set()
    assert all("retrieved.0.id" in r["error"] and f"case {r['name']}" in r["error"] for r in failed)
    assert all(r["status"] == "ok" for r in records if int(r["name"]) % 3)

    request = SystemRequest(query="vitamin D", k=5, case_id="q7")
    no_waits = Requests(backoff=0.0, max_backoff=0.0)  # a 200 that is not JSON is retried: without waiting here
    with pytest.raises(SystemResponseError, match=r"case q7.*not JSON"):
        anyio.run(HTTPSystem(f"{url}/not-json", requests=no_waits), request)
    with pytest.raises(SystemResponseError, match=r"has 'results' but no 'retrieved'"):
        anyio.run(HTTPSystem(f"{url}/wrong-shape"), request)
    with pytest.raises(SystemResponseError, match=r"neither 'retrieved' nor 'answer'"):
        anyio.run(CallableSystem(lambda r: {"status": "ok"}, id="lambda"), request)
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


def test_every_run_calls_the_system_and_only_a_resumed_run_reuses_its_replies(world, server, tmp_path):
    """With the model-call cache on, a second run still asks the endpoint every case: a system redeployed at the
    same URL is scored as it is now. A run resumed after a crash asks nothing it already asked."""
    url, seen, handler = server
    work, scifact, env, bm25 = world
    config = tmp_path / "cached.yaml"
    config.write_text(f"cache: {{enabled: true, path: {tmp_path / 'calls.sqlite'}}}\n")

    def run(*args: str) -> tuple[int, list[dict]]:
        before = sum(seen.values())
        proc = run_evaluations(["beir", str(scifact), "--system", f"{url}/cached",
                               "--skip-qa", "--config", str(config), "--no-progress", *args],
                              capture_output=True, text=True, cwd=work / "user", env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr
        folder = Path(args[-1])
        return sum(seen.values()) - before, [json.loads(line) for line in (folder / "cases.jsonl").open()]

    best_first = {qid: [h["id"] for h in bm25.search(q, 100)] for qid, q in bm25.queries.items()}
    asked, first = run("--out", str(tmp_path / "first"))
    assert asked == len(first) == 20 and all(set(r["retrieved"]) == set(best_first[r["name"]]) for r in first)
    handler.redeployed = True
    try:
        asked, second = run("--out", str(tmp_path / "second"))
        assert asked == 20
        assert all(set(r["retrieved"]) == set(best_first[r["name"]][10:]) for r in second)  # the new system's

        # the second run crashed after 3 cases (its in-flight state rebuilt as in test_run_survives)
        from evaluations.results.folder import RunFolder
        from evaluations.results.outputs import load_report

        out = tmp_path / "second"
        report = load_report(out / "report.json")
        for name in ("summary.json", "report.json", "cases.jsonl"):
            (out / name).unlink()
        folder = RunFolder(out, json.loads((out / "run.json").read_text()), [])
        for case in report.cases[:3]:
            folder.add(case)
        folder.close()
        asked, resumed = run("--resume", str(out))
        assert asked == 0  # the 17 unfinished cases had been asked in this run already
        assert [(r["name"], r["retrieved"]) for r in resumed] == [(r["name"], r["retrieved"]) for r in second]
    finally:
        handler.redeployed = False


def test_a_callable_keeps_replies_for_its_run_only(world, tmp_path):
    """In process: a system reuses a reply only under the run id it was asked in; without a run id (or with the
    cache off) it is always called."""
    from evaluations.core.config import load_config

    work, scifact, _, bm25 = world
    calls = Counter()

    def search(request):
        calls[request["case_id"]] += 1
        return {"retrieved": bm25.search(request["query"], request["k"])}

    config = load_config(None, {"cache.enabled": True, "cache.path": str(tmp_path / "calls.sqlite")})
    qid, query = next(iter(bm25.queries.items()))
    request = SystemRequest(query=query, k=10, case_id=qid)
    from evaluations.systems.factory import for_run

    def ask(run_id: str | None, cfg=config):
        return anyio.run(for_run(CallableSystem(search, id="bm25"), cfg, run_id), request)

    first = ask("run-a")
    assert ask("run-a") == first and calls[qid] == 1
    assert [i.id for i in ask("run-b").retrieved] == [h["id"] for h in bm25.search(query, 10)] and calls[qid] == 2
    ask(None)
    ask("run-a", load_config(None, {"cache.enabled": False}))
    assert calls[qid] == 4


def test_json_stdout_is_only_the_json_and_progress_goes_to_stderr(world, search_run):
    """`--json` without `--no-progress`: stdout is exactly summary.json, the progress bar is on stderr."""
    work, scifact, env, _ = world
    proc, _ = search_run
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["counts"]["cases"] == 20
    assert "Evaluating 20 cases" in proc.stderr and "Evaluating" not in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    written = sorted(p.name for p in (work / "callable").iterdir() if p.name != "run.json")
    pngs = [n for n in written if n.endswith(".png")]
    assert "report.html" in written and pngs  # what the run leaves, and the last line says all of it
    assert last == (f"wrote {work / 'callable'}/ (report.json, summary.json, cases.jsonl, report.html, report.md, "
                     f"{len(pngs)} PNG chart{'s' if len(pngs) > 1 else ''})")


def test_ids_the_corpus_does_not_hold_are_counted_and_warned(world, search_run, half_prefixed_run):
    """A system whose ids are not the corpus's: every one counted per case and in the summary, a warning on the
    console, exit 3 when none is in the corpus; half of them: counted and warned, exit 0."""
    work, scifact, _, bm25 = world
    returned = {qid: [h["id"] for h in bm25.search(q, 100)] for qid, q in bm25.queries.items()}
    total = sum(len(ids) for ids in returned.values())
    proc, records = run_beir(world, "my_rag:prefixed", "prefixed")
    assert proc.returncode == 3, proc.stderr
    summary = json.loads(proc.stdout)["unknown_ids"]
    assert (summary["count"], summary["retrieved"], summary["cases"]) == (total, total, 20)
    assert {r["name"]: r["unknown_ids"] for r in records} == {q: ["doc:" + i for i in ids]
                                                              for q, ids in returned.items()}
    assert f"warning: {total} of {total} retrieved ids are not in the corpus (20 of 20 cases" in proc.stderr
    assert f"exit 3: none of the {total} retrieved ids is in the corpus" in proc.stderr

    proc, records = half_prefixed_run
    assert proc.returncode == 0, proc.stderr
    half = sum(len(ids) // 2 for ids in returned.values())
    summary = json.loads(proc.stdout)["unknown_ids"]
    assert (summary["count"], summary["retrieved"]) == (half, total)
    assert f"warning: {half} of {total} retrieved ids are not in the corpus" in proc.stderr

    proc, records = search_run  # every id in the corpus
    assert json.loads(proc.stdout)["unknown_ids"]["count"] == 0 and "not in the corpus" not in proc.stderr
    assert all(r["unknown_ids"] == [] for r in records)


def test_a_document_returned_twice_keeps_its_first_rank(world):
    """The list is the ranking: a document returned again further down (a second chunk of it) stays at its first
    rank, whatever score the second item carries."""
    work, scifact, _, bm25 = world
    proc, records = run_beir(world, "my_rag:dupes", "dupes")
    assert proc.returncode == 0, proc.stderr
    expected = oracle(bm25, scifact)  # the plain search: appending a duplicate changes no rank
    for r in records:
        assert r["metrics"]["ndcg@10"] == pytest.approx(expected[r["name"]]["ndcg_cut_10"], abs=1e-9)
        assert len(r["retrieved"]) == len(set(r["retrieved"]))
        assert r["retrieved"] == [h["id"] for h in bm25.search(bm25.queries[r["name"]], 100)]
    # the record keeps each document once, at its first rank with that item's score: those do not rise
    assert any(len(r["retrieved"]) >= 10 for r in records) and not json.loads(proc.stdout).get("warnings")


def test_the_lists_order_is_the_ranking_and_scores_are_recorded_as_returned(world):
    """Scores that are distances (rising along the list) or absent do not reorder the list: the metrics equal
    pytrec_eval's on the system's ranking, the records keep the scores as returned (None when none was given,
    never a made-up one), and rising scores are one warning with the count of cases."""
    work, scifact, _, bm25 = world
    expected = oracle(bm25, scifact)
    proc, records = run_beir(world, "my_rag:distances", "distances")
    assert proc.returncode == 0, proc.stderr
    for r in records:
        assert r["metrics"]["ndcg@10"] == pytest.approx(expected[r["name"]]["ndcg_cut_10"], abs=1e-9)
        assert r["metrics"]["p@5"] == pytest.approx(expected[r["name"]]["P_5"], abs=1e-9)
        assert r["scores"] == [float(i) for i in range(len(r["retrieved"]))]
        assert set(r["latency_ms"]) == {"retrieve", "total"}  # stages it did not report are unknown, not 0 ms
    summary = json.loads(proc.stdout)
    assert summary["latency_ms"]["by_stage"]["embed"]["n"] == 0 and summary["latency_ms"]["by_stage"]["retrieve"]["n"]
    assert not re.search(r"│ (embed|rerank|llm) ", proc.stderr)
    (warning,) = summary["warnings"]
    assert warning["cases"] == sum(len(r["retrieved"]) > 1 for r in records) == 20
    assert "rise along its ranked list in 20 of 20 cases" in proc.stderr.replace("\n", " ")
    proc, records = run_beir(world, "my_rag:unscored", "unscored")
    assert proc.returncode == 0, proc.stderr
    for r in records:
        assert r["metrics"]["ndcg@10"] == pytest.approx(expected[r["name"]]["ndcg_cut_10"], abs=1e-9)
        assert r["scores"] == [None] * len(r["retrieved"])
    assert not json.loads(proc.stdout).get("warnings")


def test_other_tools_reply_shapes_are_errors_naming_the_rename(server):
    """A reply in another tool's shape (RAGAS's contexts, LangChain's documents, an id under another name, usage
    with no counts) fails its case with the field and the rename, never scores as nothing retrieved or 0 tokens;
    OpenAI's usage names are read; an HTTP timeout says so."""
    from evaluations.core.config import Requests

    request = SystemRequest(query="vitamin D", k=5, case_id="q7")

    def reply(body):
        return anyio.run(CallableSystem(lambda r: body, id="shape"), request)

    with pytest.raises(SystemResponseError, match=r"(?s)has 'contexts' but no 'retrieved'.*rename 'contexts' to "
                                                  r"'retrieved'"):
        reply({"answer": "yes", "contexts": ["Vitamin D is made in the skin."]})
    with pytest.raises(SystemResponseError, match=r"has 'source_documents' but no 'retrieved'"):
        reply({"answer": "yes", "source_documents": [{"page_content": "x", "metadata": {"id": "1"}}]})
    with pytest.raises(SystemResponseError, match=r"(?s)retrieved\.1\.id' is missing.*LangChain"):
        reply({"retrieved": [{"id": "a"}, {"page_content": "x", "metadata": {"id": "1"}}]})
    with pytest.raises(SystemResponseError, match=r"rename 'doc_id' to 'id'"):
        reply({"retrieved": [{"doc_id": "a", "score": 1.0}]})
    with pytest.raises(SystemResponseError, match=r"usage has no token counts"):
        reply({"answer": "yes", "usage": {"total_tokens": 15}})
    usage = reply({"answer": "yes", "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).usage
    assert (usage.input_tokens, usage.output_tokens) == (10, 5)
    url, _, _ = server
    with pytest.raises(EvaluationsError, match=r"no answer within 0\.5 s \(requests\.timeout\) in 1 attempt"):
        anyio.run(HTTPSystem(f"{url}/slow", requests=Requests(timeout=0.5, retries=0)), request)


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


def test_piped_tables_are_as_wide_as_usage_md_says(world, search_run, half_prefixed_run):
    """docs/usage.md: piped, a run's tables are at most 120 columns wide, compare's at most 160, whatever
    $COLUMNS says (40 in ``world``'s environment: the module's runs were made with it)."""
    work, scifact, env, _ = world
    assert env["COLUMNS"] == "40"
    tables = []
    for proc, _ in (search_run, half_prefixed_run):
        assert proc.returncode == 0, proc.stderr
        tables += [line for line in proc.stderr.splitlines() if line[:1] in "┏┃┡│└╭╰"]
    assert tables and max(map(len, tables)) <= 120
    proc = run_evaluations(["compare", str(work / "callable"), str(work / "half_prefixed")],
                          capture_output=True, text=True, cwd=work / "user", env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert 120 < max(map(len, proc.stdout.splitlines())) <= 160


# -- a system that hangs, or returns text that is not Unicode -----------------------------------------------------

SMALL_SYSTEM = '''
import time

DOCS = {"d1": "The Eiffel Tower in Paris was completed in 1889.", "d2": "Tokyo is the capital of Japan.",
        "d3": "Hamlet was written by William Shakespeare."}


def _reply(request):
    doc = {"q1": "d1", "q2": "d2", "q3": "d3"}[request["case_id"]]
    return {"retrieved": [{"id": doc, "text": DOCS[doc]}], "answer": DOCS[doc]}


def hangs_on_q3(request):
    """Never answers q3 (a deadlock in the user's system): only a timeout or Ctrl-C gets past it. (The last case:
    a run whose answers are judged may call the system one case at a time.)"""
    if request["case_id"] == "q3":
        time.sleep(3600)
    return _reply(request)


def undecodable_q2(request):
    """q2's answer holds a byte that was not UTF-8, decoded the way Python decodes file names (surrogateescape)."""
    reply = _reply(request)
    if request["case_id"] == "q2":
        reply["answer"] = b"Tokyo, caf\\xe9 capital".decode("utf-8", errors="surrogateescape")
    return reply
'''


@pytest.fixture
def small(tmp_path):
    """Three questions over three documents, a user module beside them, and a config with no judges and no cache
    (what is measured here is the system call)."""
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "query": q}) + "\n" for i, q in enumerate(
        ["When was the Eiffel Tower completed?", "What is the capital of Japan?", "Who wrote Hamlet?"], 1)))
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in [
        ("d1", "The Eiffel Tower in Paris was completed in 1889."), ("d2", "Tokyo is the capital of Japan."),
        ("d3", "Hamlet was written by William Shakespeare.")]))
    (tmp_path / "small_rag.py").write_text(SMALL_SYSTEM)
    (tmp_path / "c.yaml").write_text("cache: {enabled: false}\njudge: {reference_free: []}\nrequests: {timeout: 2}\n")
    env = {**os.environ, "NO_COLOR": "1", "EVALUATIONS_LLM_THREADS": "1"}
    return tmp_path, env


def _small_run(small, system: str, *extra: str) -> list[str]:
    work, _ = small
    return [sys.executable, "-m", "evaluations", "run", str(work / "q.jsonl"), "--corpus", str(work / "corpus.jsonl"),
            "--system", system, "--config", str(work / "c.yaml"), "--out", str(work / "out"), "--no-progress", *extra]


def _cases(folder: Path) -> dict[str, dict]:
    return {r["name"]: r for r in map(json.loads, (folder / "cases.jsonl").read_text().splitlines())}


def test_a_callable_that_hangs_fails_its_case_at_the_timeout(small):
    """requests.timeout (2 s here) bounds a callable's call as it bounds an HTTP request: the hung case is counted
    as failed, the others are scored, and the run ends (exit 3) instead of waiting for the thread."""
    work, env = small
    proc = subprocess.run(_small_run(small, "small_rag:hangs_on_q3", "--max-failures", "0"), capture_output=True,
                          text=True, cwd=work, env=env, timeout=120)
    assert proc.returncode == 3, proc.stderr
    cases = _cases(work / "out")
    assert cases["q1"]["status"] == cases["q2"]["status"] == "ok"
    assert cases["q3"]["status"] == "failed"
    assert "system small_rag:hangs_on_q3, case q3: no answer within 2 s (requests.timeout)" in cases["q3"]["error"]
    assert json.loads((work / "out" / "summary.json").read_text())["counts"]["failed"] == 1

    async def slow_async(request):
        await anyio.sleep(30)

    request = SystemRequest(query="q", k=5, case_id="c7")
    started = time.perf_counter()
    with pytest.raises(EvaluationsError, match=r"case c7: no answer within 0.3 s"):
        anyio.run(CallableSystem(slow_async, id="slow", timeout=0.3), request)
    assert time.perf_counter() - started < 5


def test_ctrl_c_ends_a_run_stuck_in_a_callable_at_once(small):
    """The first Ctrl-C stops the run within seconds (exit 130) although q3's call never returns: the finished
    cases are kept for --resume, and the process does not wait for the hung thread."""
    work, env = small
    (work / "c.yaml").write_text("cache: {enabled: false}\njudge: {reference_free: []}\n")  # timeout 120 s
    proc = subprocess.Popen(_small_run(small, "small_rag:hangs_on_q3"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=work, env=env, preexec_fn=sigint_default)
    try:
        partial = work / "out" / "partial.jsonl"
        deadline = time.monotonic() + 120
        while not (partial.exists() and len(partial.read_text().splitlines()) == 2):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        time.sleep(0.5)
        interrupted = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert time.monotonic() - interrupted < 20
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert f"interrupted: 2 finished case(s) are kept in {work / 'out'}" in err and "Traceback" not in err
    assert set(_cases(work / "out")) == {"q1", "q2"}


def test_text_that_is_not_unicode_fails_its_case(small):
    """A lone surrogate (an undecodable byte) in a system's reply is that case's failure, named with the field:
    the run finishes, every file is whole and UTF-8, and the other cases are scored."""
    work, env = small
    proc = run_evaluations(_small_run(small, "small_rag:undecodable_q2", "--max-failures", "1")[3:], text=True,
                           cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    cases = _cases(work / "out")
    assert cases["q1"]["status"] == cases["q3"]["status"] == "ok"
    assert cases["q2"]["status"] == "failed"
    assert "case q2: field 'answer' is not valid Unicode text: a lone surrogate '\\udce9' at index 10" in \
        cases["q2"]["error"]
    assert not (work / "out" / "partial.jsonl").exists()
    for name in ("cases.jsonl", "summary.json", "report.json"):
        (work / "out" / name).read_bytes().decode("utf-8")  # strict: raises on anything half-written or not UTF-8
    assert json.loads((work / "out" / "summary.json").read_text())["counts"]["failed"] == 1

    class Reply(SystemResponse):
        pass

    with pytest.raises(SystemResponseError, match=r"field 'retrieved.0.text' is not valid Unicode"):
        anyio.run(CallableSystem(lambda r: Reply(retrieved=[{"id": "d1", "text": "x\udcff"}]), id="m"),
                  SystemRequest(query="q", k=1, case_id="c1"))


# -- token usage a system reports, or does not ----------------------------------------------------------------------

USAGE_SYSTEM = '''
DOCS = {"q1": "The Eiffel Tower in Paris was completed in 1889.", "q2": "Tokyo is the capital of Japan.",
        "q3": "Hamlet was written by William Shakespeare."}
SOME = {"q1": {"input_tokens": 30, "output_tokens": 5}, "q3": {"input_tokens": 10, "output_tokens": 3}}


def no_usage(request):
    case = request["case_id"]
    return {"retrieved": [{"id": "d" + case[1:], "text": DOCS[case]}], "answer": DOCS[case]}


def zero_usage(request):
    return {**no_usage(request), "usage": {"input_tokens": 0, "output_tokens": 0}}


def some_usage(request):
    reply = no_usage(request)
    if request["case_id"] in SOME:
        reply["usage"] = SOME[request["case_id"]]
    return reply


def priced_usage(request):  # q1 names its model, q3 only its tier; both are priced in the config
    reply = some_usage(request)
    reply.update({"q1": {"model": "openai:gpt-test"}, "q3": {"tier": "small"}}.get(request["case_id"], {}))
    return reply
'''


def test_tokens_a_system_does_not_report_are_not_reported_and_a_reported_zero_is_zero(small, cli, monkeypatch,
                                                                                      run_reports):
    """A system that answers without "usage" has tokens per query null in summary.json and "not reported" in the
    report, no tokens in history, and a gate rule or compare on them is bad input naming why; one that reports 0
    tokens has 0; one that reports usage for some cases has the mean over those cases."""
    work, _ = small
    (work / "usage_rag.py").write_text(USAGE_SYSTEM)
    history = work / "history.sqlite"
    (work / "c.yaml").write_text(f"cache: {{enabled: false}}\njudge: {{reference_free: []}}\n"
                                 f"history: {{path: '{history}'}}\n"
                                 "prices: {'openai:gpt-test': {input: 2.5, output: 10}, small: {input: 1, output: 2}}\n")
    (work / "rules.yaml").write_text("rules:\n  - {metric: tokens_per_query, max: 100}\n")
    monkeypatch.chdir(work)
    summaries, costs, unpriced = {}, {}, {}
    for system in ("no_usage", "zero_usage", "some_usage", "priced_usage"):
        out = work / system
        code, _, err = cli(["run", str(work / "q.jsonl"), "--corpus", str(work / "corpus.jsonl"), "--system",
                            f"usage_rag:{system}", "--config", str(work / "c.yaml"), "--out", str(out),
                            "--no-progress"])
        assert code == 0, err
        summaries[system] = json.loads((out / "summary.json").read_text())["answers"]["tokens"]
        costs[system] = json.loads((out / "summary.json").read_text())["answers"]["cost_usd"]["per_query"]
        unpriced[system] = json.loads((out / "summary.json").read_text())["answers"]["cost_usd"].get("unpriced", 0)
        assert summaries[system]["per_correct_answer"] is None  # no gold answers: nothing is correct
        # the system answered every case, so the configured QA model never ran and is not named
        assert json.loads((out / "summary.json").read_text())["run"]["qa_model"] == "none (the system's own answers)"

    assert summaries["no_usage"]["per_query"] is None
    # unknown is never 0 USD: no tokens (no_usage), or tokens of a model the replies do not name and the config
    # does not price (zero_usage, some_usage: counted as unpriced); by hand, q1 at 2.5 / 10 USD per 1M tokens
    # (its model), q3 at 1 / 2 (its tier)
    assert costs["no_usage"] is None and costs["zero_usage"] is None and costs["some_usage"] is None
    assert (unpriced["no_usage"], unpriced["zero_usage"], unpriced["some_usage"], unpriced["priced_usage"]) == (
        0, 3, 2, 0)
    assert costs["priced_usage"] == pytest.approx(((30 * 2.5 + 5 * 10) + (10 * 1 + 3 * 2)) / 1e6 / 2)
    assert {r["usage"]["input_tokens"] if r["usage"] else None for r in _cases(work / "no_usage").values()} == {None}
    report = (work / "no_usage" / "report.md").read_text()
    assert "| Tokens per query | not reported |" in report and "| Cost per query (USD) | not reported |" in report
    some_report = (work / "some_usage" / "report.md").read_text()
    assert "| Cost per query (USD), 2 cases unpriced and left out | unpriced |" in some_report, some_report
    totals = {system: json.loads((work / system / "summary.json").read_text())["answers"]["cost_usd"]["total"]
              for system in ("no_usage", "zero_usage", "some_usage", "priced_usage")}
    assert totals["no_usage"] is None and totals["zero_usage"] is None and totals["some_usage"] is None  # never 0 USD
    assert totals["priced_usage"] == pytest.approx(((30 * 2.5 + 5 * 10) + (10 * 1 + 3 * 2)) / 1e6)
    assert summaries["zero_usage"]["per_query"] == 0.0
    assert "| Tokens per query | 0.0 |" in (work / "zero_usage" / "report.md").read_text()
    some = (30 + 5 + 10 + 3) / 2  # by hand: q1 and q3 reported usage, q2 did not
    assert summaries["some_usage"]["per_query"] == some
    assert summaries["some_usage"]["input"]["n"] == 2

    code, out, _ = cli(["history", "--history", str(history), "--json"])
    assert code == 0
    recorded = {Path(row["run_dir"]).name: row["metrics"] for row in json.loads(out)}
    assert "tokens_per_query" not in recorded["no_usage"] and "cost_per_query" not in recorded["no_usage"]
    assert (recorded["zero_usage"]["tokens_per_query"], recorded["some_usage"]["tokens_per_query"]) == (0.0, some)
    assert "cost_per_query" not in recorded["some_usage"]
    assert recorded["priced_usage"]["cost_per_query"] == pytest.approx(costs["priced_usage"])
    (work / "cost.yaml").write_text("rules:\n  - {metric: cost_per_query, max: 0.001}\n")
    code, out, err = cli(["gate", str(work / "some_usage"), "--rules", str(work / "cost.yaml"), "--json"])
    assert code == 2 and "Traceback" not in err, err
    assert "no price is known" in err and "prices:" in err, err
    code, out, err = cli(["gate", str(work / "priced_usage"), "--rules", str(work / "cost.yaml"), "--json"])
    assert code == 0 and json.loads(out)["checks"][0]["value"] == pytest.approx(costs["priced_usage"]), err

    code, out, err = cli(["gate", str(work / "no_usage"), "--rules", str(work / "rules.yaml"), "--json"])
    assert code == 2 and "Traceback" not in err, err
    assert "without reporting token usage" in err and "fix: have the system return \"usage\"" in err, err
    for system, value in (("zero_usage", 0.0), ("some_usage", some)):
        code, out, err = cli(["gate", str(work / system), "--rules", str(work / "rules.yaml"), "--json"])
        assert code == 0, err
        assert json.loads(out)["checks"][0]["value"] == value
    code, _, err = cli(["compare", str(work / "zero_usage"), str(work / "no_usage"), "--json"])
    assert code == 0, err  # the default measures leave out what one run does not have
    code, _, err = cli(["compare", str(work / "zero_usage"), str(work / "no_usage"), "--json", "--metrics",
                        "tokens_per_query"])
    assert code == 2 and "without reporting token usage" in err, err


def test_the_qa_agents_price_is_the_configs_and_unknown_for_an_unpriced_served_model(tmp_path):
    """The built-in pipeline's answers cost the config's price of its QA model; an embedded model, or an Ollama
    model served from the user's machine or network, costs 0 unless priced; a remote Ollama, an Ollama cloud model
    or a served OpenAI-compatible model without a price is unknown (None: its cost is not reported), never 0 USD."""
    from evaluations.core.config import load_config
    from evaluations.pipeline.plan import build_qa_plan

    def price(text: str):
        (tmp_path / "c.yaml").write_text(text)
        return build_qa_plan(load_config(str(tmp_path / "c.yaml"))).price

    served = "qa: {model: {provider: openai, name: gpt-test, base_url: 'http://127.0.0.1:9/v1'}}\n"
    assert price(served) is None
    assert price(served + "prices: {'openai:gpt-test': {input: 2.5, output: 10}}\n") == (2.5, 10.0)
    assert price("qa: {model: {provider: ollama, name: qwen2.5:0.5b}}\n") == (0.0, 0.0)
    assert price("qa: {model: {provider: embedded}}\n") == (0.0, 0.0)
    for url, free in [("http://192.168.1.20:11434", True), ("http://ollama:11434", True),
                      ("http://gpu-box.lan:11434", True), ("http://[::1]:11434", True),
                      ("https://ollama.com", False), ("http://34.120.7.9:11434", False)]:
        ollama = f"qa: {{model: {{provider: ollama, name: qwen3}}}}\nproviders: {{ollama: {{base_url: '{url}'}}}}\n"
        assert price(ollama) == ((0.0, 0.0) if free else None), url
        assert price(ollama + "prices: {'ollama:qwen3': {input: 1, output: 2}}\n") == (1.0, 2.0), url
    # a cloud model runs at ollama.com through the local server: not free because the server is local
    assert price("qa: {model: {provider: ollama, name: 'gpt-oss:120b-cloud'}}\n") is None


def test_answers_no_judge_read_are_one_line_not_an_empty_table(small, cli, monkeypatch):
    """--skip-qa with a system that answers: the answers are counted in one line, and no empty Answers table is
    printed."""
    work, _ = small
    (work / "usage_rag.py").write_text(USAGE_SYSTEM)
    (work / "skip.yaml").write_text("cache: {enabled: false}\njudge: {reference_free: []}\n")
    monkeypatch.chdir(work)
    code, _, err = cli(["run", str(work / "q.jsonl"), "--corpus", str(work / "corpus.jsonl"), "--system",
                        "usage_rag:zero_usage", "--config", str(work / "skip.yaml"), "--out", str(work / "skipped"),
                        "--no-progress", "--skip-qa"])
    assert code == 0, err
    cases = len((work / "q.jsonl").read_text().splitlines())
    assert f"answers: {cases} of {cases} cases answered, not judged" in " ".join(err.split()), err
    assert "judge / metric" not in err
