"""The retrieval CLI end to end on real SciFact data: outputs, metrics vs trec_eval, warm re-run, errors."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import pytrec_eval

from evaluations.results.outputs import load_report
from inprocess import run_evaluations
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)

pytestmark = pytest.mark.usefixtures("shared_minilm")

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_evaluations([*args], capture_output=True, text=True,
                          cwd=cwd or REPO, env={**os.environ, **(env or {})}, timeout=900)


@pytest.fixture(scope="module")
def beir_run(scifact_small, tmp_path_factory):
    work = tmp_path_factory.mktemp("cli")
    db, out = work / "db", work / "out"
    proc = run_cli("beir", str(scifact_small), "--db", str(db), "--out", str(out), "--no-progress", "--json",
                   "--k", "1,5,10,100", env={"EVALUATIONS_REPORTS": "all"})  # test_outputs_exist_and_reload reads them
    assert proc.returncode == 0, proc.stderr
    return scifact_small, db, out, proc


def test_outputs_exist_and_reload(beir_run):
    _, _, out, proc = beir_run
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads(proc.stdout) == summary  # --json prints the same summary
    assert set(summary) >= {"metrics", "latency_ms", "counts", "config", "index", "dataset"}
    assert set(summary["metrics"]) >= {"ndcg@10", "mrr@10", "recall@100", "map@10", "p@5", "hit@1"}
    assert set(summary["latency_ms"]) >= {"p50", "p95", "p99"}
    assert summary["counts"]["cases"] == 20 and summary["counts"]["failed"] == 0
    assert summary["config"]["search"]["mode"] == "hybrid"
    report = load_report(out / "report.json")
    assert len(report.cases) == 20 and {"ndcg@10", "mrr@10"} <= set(report.cases[0].scores)
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert len(records) == 20
    first = records[0]
    assert set(first) >= {"name", "query", "retrieved", "scores", "relevant", "metrics", "latency_ms"}
    assert len(first["retrieved"]) == len(first["scores"]) <= 100
    # the stages that ran: no reranker and no QA agent, so no rerank or llm time (not 0 ms)
    assert set(first["latency_ms"]) == {"embed", "retrieve", "total"}
    assert (out / "report.md").read_text().startswith("# ") and not (out / "summary.md").exists()
    assert "Retrieval metrics" in proc.stderr and "p95" in proc.stderr


def test_metrics_equal_trec_eval_on_the_written_run(beir_run):
    _, _, out, _ = beir_run
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    qrels = {r["name"]: r["relevant"] for r in records}
    run = {r["name"]: dict(zip(r["retrieved"], r["scores"])) for r in records}
    measures = {"ndcg_cut_10", "P_5", "recall_100", "map_cut_10", "success_1"}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    names = {"ndcg_cut_10": "ndcg@10", "P_5": "p@5", "recall_100": "recall@100", "map_cut_10": "map@10",
             "success_1": "hit@1"}
    for record in records:
        for measure, ours in names.items():
            assert record["metrics"][ours] == pytest.approx(oracle[record["name"]][measure], abs=1e-9)
    summary = json.loads((out / "summary.json").read_text())
    for measure, ours in names.items():
        mean = sum(oracle[q][measure] for q in oracle) / len(oracle)
        assert summary["metrics"][ours] == pytest.approx(mean, abs=1e-9)


def test_warm_rerun_embeds_nothing_and_skip_db(beir_run, tmp_path):
    folder, db, out, _ = beir_run
    warm = run_cli("beir", str(folder), "--db", str(db), "--out", str(tmp_path / "warm"), "--no-progress",
                   "--k", "1,5,10,100")
    assert warm.returncode == 0, warm.stderr
    summary = json.loads((tmp_path / "warm" / "summary.json").read_text())
    assert summary["index"]["embedded_chunks"] == 0
    first = json.loads((out / "summary.json").read_text())
    assert summary["metrics"] == pytest.approx(first["metrics"])
    skip = run_cli("beir", str(folder), "--db", str(db), "--skip-db", "--search-mode", "fts",
                   "--out", str(tmp_path / "fts"), "--no-progress", "--limit", "5")
    assert skip.returncode == 0, skip.stderr
    fts = json.loads((tmp_path / "fts" / "summary.json").read_text())
    assert fts["counts"]["cases"] == 5 and fts["config"]["search"]["mode"] == "fts"
    unscored = run_cli("beir", str(folder), "--db", str(db), "--skip-db", "--skip-retrieval",
                       "--out", str(tmp_path / "unscored"), "--no-progress", "--limit", "3")
    assert unscored.returncode == 0, unscored.stderr
    records = [json.loads(line) for line in (tmp_path / "unscored" / "cases.jsonl").read_text().splitlines()]
    assert len(records) == 3 and all(r["retrieved"] and r["metrics"] == {} for r in records)
    assert json.loads((tmp_path / "unscored" / "summary.json").read_text())["metrics"] == {}


def _records(out: Path) -> dict[str, dict]:
    return {r["case"]: r for r in map(json.loads, (out / "cases.jsonl").read_text().splitlines())}


_PROBE = ("import json, sys\nfrom evaluations.cli.root import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:"
          "\n    code = e.code\nprint(json.dumps('lancedb' in sys.modules), file=sys.stderr)")


def test_a_warm_rerun_takes_the_rankings_kept_beside_the_index_and_opens_no_lancedb(beir_run, tmp_path):
    """A re-run of the same search over the same index (a new process) answers every query from the rankings kept
    beside the index (``index/rankings.py``): case by case the documents, scores and context of the run that searched,
    and LanceDB is never imported. A changed corpus, another search mode and ``--no-cache`` search the index."""
    import shutil
    import sys

    folder, db, out, _ = beir_run
    args = ["beir", str(folder), "--db", str(db), "--no-progress", "--k", "1,5,10,100"]
    warm = subprocess.run([sys.executable, "-c", _PROBE, *args, "--out", str(tmp_path / "warm")], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr
    assert warm.stderr.strip().splitlines()[-1] == "false"  # lancedb was not imported
    index = json.loads((tmp_path / "warm" / "summary.json").read_text())["index"]
    assert index["rankings_cached"] is True and index["embedded_chunks"] == 0 and index["path"] == str(db)
    first, again = _records(out), _records(tmp_path / "warm")
    assert len(again) == len(first) == 20
    for case, record in first.items():
        for key in ("retrieved", "scores", "metrics", "context"):
            assert again[case][key] == record[key], (case, key)
    # another search mode, and --no-cache: the index is searched
    for extra, name in ((["--search-mode", "fts"], "fts"), (["--no-cache"], "nocache")):
        proc = run_cli(*args, *extra, "--out", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
        assert "rankings_cached" not in json.loads((tmp_path / name / "summary.json").read_text())["index"]
    # a changed document: re-indexed and searched (the kept rankings were of the old index), on a copy of the index
    changed, db2 = tmp_path / "changed", tmp_path / "db2"
    shutil.copytree(folder, changed)
    shutil.copytree(db, db2)
    lines = (changed / "corpus.jsonl").read_text().splitlines()
    doc = json.loads(lines[0])
    lines[0] = json.dumps({**doc, "text": doc["text"] + " An added sentence about nothing."})
    (changed / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    proc = run_cli("beir", str(changed), "--db", str(db2), "--no-progress", "--k", "1,5,10,100",
                   "--out", str(tmp_path / "after_change"))
    assert proc.returncode == 0, proc.stderr
    index = json.loads((tmp_path / "after_change" / "summary.json").read_text())["index"]
    assert "rankings_cached" not in index and index["chunked_documents"] == 1
    # and the old corpus over the changed index: its state differs, so it is searched again, not read back
    proc = run_cli("beir", str(folder), "--db", str(db2), "--no-progress", "--k", "1,5,10,100",
                   "--out", str(tmp_path / "back"))
    assert proc.returncode == 0, proc.stderr
    assert "rankings_cached" not in json.loads((tmp_path / "back" / "summary.json").read_text())["index"]
    back = _records(tmp_path / "back")
    assert all(back[c]["retrieved"] == r["retrieved"] for c, r in first.items())


def test_skip_db_without_index_and_bad_input_are_one_clear_error(scifact_small, tmp_path):
    proc = run_cli("beir", str(scifact_small), "--db", str(tmp_path / "empty"), "--skip-db", "--no-progress")
    assert proc.returncode == 2
    assert "--skip-db given but there is no index yet" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("beir", str(tmp_path / "missing"), "--no-progress")
    assert proc.returncode == 2 and "not a folder" in proc.stderr and "Traceback" not in proc.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("search:\n  mode: dense\n")
    proc = run_cli("beir", str(scifact_small), "--config", str(bad), "--no-progress")
    assert proc.returncode == 2 and "search.mode" in proc.stderr and str(bad) in proc.stderr
    proc = run_cli("beir", str(scifact_small), "--k", "0,5", "--no-progress")
    assert proc.returncode == 2 and "--k" in proc.stderr


def test_ollama_embedder_through_the_cli(scifact_small, tmp_path):
    from fake_llm_server import FakeLLMServer, closed_port_url

    with FakeLLMServer(models=("nomic-embed-text",), dim=96) as server:
        out = tmp_path / "out"
        proc = run_cli("beir", str(scifact_small), "--embedder", "ollama:nomic-embed-text", "--search-mode",
                       "vector", "--db", str(tmp_path / "db"), "--out", str(out), "--no-progress",
                       env={"OLLAMA_BASE_URL": server.url})
        assert proc.returncode == 0, proc.stderr
        embeds = server.calls("/api/embed")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["embedder"] == "ollama:nomic-embed-text"
    assert summary["index"]["embedded_chunks"] > 0
    embedded_texts = sum(len(c.body["input"]) for c in embeds if isinstance(c.body["input"], list))
    assert embedded_texts >= summary["index"]["embedded_chunks"] + summary["counts"]["cases"]
    # hashed bag-of-words vectors still find the gold abstracts for most SciFact claims
    assert summary["metrics"]["recall@100"] > 0.5

    url = closed_port_url()
    proc = run_cli("beir", str(scifact_small), "--embedder", "ollama:nomic-embed-text", "--db",
                   str(tmp_path / "db2"), "--no-progress", env={"OLLAMA_BASE_URL": url})
    assert proc.returncode == 2 and url in proc.stderr and "embedded" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "db2").exists()
