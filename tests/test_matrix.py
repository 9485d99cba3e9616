"""``evaluations matrix``: a real 2 × 2 grid on the RepliQA sample with offline models, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPLIQA_20
from test_cli_retrieval import run_cli

from evaluations.experiments.matrix import Grid, pareto, quality_name
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)

pytestmark = pytest.mark.usefixtures("shared_minilm")

ROOT = Path(__file__).resolve().parents[1]


def test_two_by_two_grid_end_to_end_and_resumes(tmp_path):
    # a short context (300 characters): the grid's mechanics with real models, not long prompts
    (tmp_path / "short.yaml").write_text("qa:\n  max_context_chars: 300\n")
    grid = {
        "dataset": "repliqa", "source": str(REPLIQA_20), "limit": 1, "k": [1, 5, 10],
        "config": str(tmp_path / "short.yaml"),
        "axes": {"search_mode": ["fts", "hybrid"], "qa_model": ["embedded:smollm2-135m", "embedded:qwen2.5-coder-0.5b"]},
    }
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump(grid))
    out = tmp_path / "matrix"
    proc = run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress", env={"EVALUATIONS_LLM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "matrix.json").read_text())
    cells = result["cells"]
    assert [c["params"] for c in cells] == [
        {"search_mode": m, "qa_model": q} for m in ("fts", "hybrid")
        for q in ("embedded:smollm2-135m", "embedded:qwen2.5-coder-0.5b")]
    assert result["quality"] == "offline_correct"  # the primary judge when answers are judged
    for cell in cells:
        summary = json.loads((Path(cell["run_dir"]) / "summary.json").read_text())
        assert summary["counts"]["cases"] == 1  # one question per cell: the grid's mechanics, with real models
        assert cell["metrics"]["ndcg@10"] == summary["metrics"]["ndcg@10"]
        # quality = the primary judge's accuracy over every case (a failed or unjudged answer counts as wrong)
        recs = [json.loads(line) for line in (Path(cell["run_dir"]) / "cases.jsonl").read_text().splitlines()]
        assert all(r["gold_answers"] and r["answerable"] for r in recs)
        assert cell["quality"] == sum(r["judges"].get("offline_correct") is True for r in recs) / len(recs)
        assert summary["run"]["qa_model"]["name"] in cell["params"]["qa_model"]
        assert set(cell["pareto"]) == {"cost", "latency"}
    # the two search modes give different retrieval; the QA model does not change retrieval
    assert cells[0]["metrics"]["ndcg@10"] == cells[1]["metrics"]["ndcg@10"]
    # the latency front by its definition: no other cell at least as good on both with one strict
    points = [(c["quality"], c["latency_ms"]["p95"]) for c in cells]
    for cell, (q, lat) in zip(cells, points):
        dominated = any(q2 >= q and l2 <= lat and (q2 > q or l2 < lat) for q2, l2 in points if (q2, l2) != (q, lat))
        assert cell["pareto"]["latency"] == (not dominated)
    assert result["comparisons"] and all(c["a"] != c["b"] for c in result["comparisons"])
    assert (out / "report.html").stat().st_size > 0 and (out / "report.md").is_file()
    # a second run skips every finished cell
    again = run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress")
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("skipped (finished)") == 4


def test_pareto_front_on_ties_and_missing_values():
    points = [(0.5, 1.0), (0.5, 1.0), (0.6, 2.0), (0.4, 0.5), (0.4, 3.0), (None, 0.1)]
    assert pareto(points) == [True, True, True, True, False, False]


def test_the_default_quality_of_a_grid_without_gold_answers_is_faithfulness():
    """Cells of questions-only runs have no primary judge and no nDCG: the fronts rank them by faithfulness, not by
    a correctness judge that read no answer; a primary judge or nDCG still come first, and ``quality`` wins."""
    from evaluations.results.rundata import AnswersSummary, RunSummary

    no_gold = [RunSummary(metrics={"faithfulness": 0.8, "answer_relevance": 1.0, "context_relevance": 0.3})] * 2
    grid = Grid(dataset="run", axes={"judge": ["none"]})
    assert quality_name(grid, no_gold) == "faithfulness"
    assert quality_name(grid, [RunSummary(metrics={"context_relevance": 0.3})]) == "context_relevance"
    assert quality_name(grid, [RunSummary(metrics={"ndcg@10": 0.5, "faithfulness": 0.8})]) == "ndcg@10"
    judged = RunSummary(metrics={"faithfulness": 0.8}, answers=AnswersSummary(primary_judge="offline_correct"))
    assert quality_name(grid, [judged]) == "offline_correct"
    chosen = Grid(dataset="run", axes={"judge": ["none"]}, quality="answer_relevance")
    assert quality_name(chosen, no_gold) == "answer_relevance"


def test_multilingual_e5_embedder_offline():
    from evaluations.core.config import load_config
    from evaluations.models.embedders import build_embedder

    embedder = build_embedder(load_config(None, {"embeddings.model.name": "multilingual-e5-small"}))
    docs = embedder.embed(["The cat sat on the mat.", "Quarterly revenue grew by ten percent."])
    query = embedder.embed(["where did the cat sit"], kind="query")
    assert docs.shape == (2, 384) and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    scores = docs @ query[0]
    assert scores[0] > scores[1]


def test_a_cell_whose_answers_fail_exits_3_is_never_best_and_runs_again(tmp_path):
    """Two QA models behind a real HTTP server: one answers, one fails every request. The matrix exits 3 naming the
    failing cell, picks the working cell as best, and a re-run runs the failing cell again instead of skipping it."""
    import gzip
    import re

    from fake_llm_server import FakeLLMServer, tool_call

    with gzip.open(REPLIQA_20, "rt") as handle:
        gold = {row["question"]: row["answer"] for row in map(json.loads, handle)}

    def responder(request):
        if request["model"].startswith("broken"):
            raise RuntimeError("this model always fails")
        tool = request["tools"][0]["function"]
        text = " ".join(str(m.get("content")) for m in request["messages"] if m.get("role") == "user")
        question = text.rsplit("Question: ", 1)[1].strip()
        ids = re.findall(r"^\[([^\]]+)\]", text, flags=re.M)
        return tool_call(tool["name"], {"answer": gold[question], "cited_ids": ids[:1], "confidence": 0.9})

    (tmp_path / "quiet.yaml").write_text("cache: {enabled: false}\n"
                                         "requests: {retries: 0, backoff: 0.0, max_backoff: 0.0}\n")
    grid = {"dataset": "repliqa", "source": str(REPLIQA_20), "limit": 2, "k": [1, 10], "config": "quiet.yaml",
            "axes": {"search_mode": ["fts"], "qa_model": ["ollama:good", "ollama:broken"]}}
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump(grid))
    out = tmp_path / "matrix"
    with FakeLLMServer(models=("good", "broken"), responder=responder) as server:
        env = {"OLLAMA_BASE_URL": server.url}
        proc = run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress", env=env)
        assert proc.returncode == 3, proc.stderr
        result = json.loads((out / "matrix.json").read_text())
        good, broken = result["cells"]
        assert broken["counts"]["incomplete"] == broken["counts"]["cases"] > 0 and not broken["within_max_failures"]
        assert good["counts"]["incomplete"] == 0 and good["within_max_failures"]
        assert result["best"] == good["params"] and broken["quality"] == 0.0
        assert "fts__ollama-broken" in proc.stderr and "Traceback" not in proc.stderr
        again = run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress", env=env)
        assert again.returncode == 3
        assert again.stderr.count("skipped (finished)") == 1 and "ran again" in again.stderr


def _cell(source: Path, out: Path, latency_scale: float) -> Path:
    """A copy of a real run folder (SciFact, fts) whose cases' latencies are scaled (what a faster cell records)."""
    import shutil

    shutil.copytree(source, out)
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    for r in records:
        r["latency_ms"] = {k: v * latency_scale for k, v in r["latency_ms"].items()}
    (out / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


def test_best_cell_and_fronts_follow_the_quality_measure_direction(tmp_path):
    """A lower-is-better quality (latency, context waste, cost) picks the smallest cell as best and orients the
    Pareto fronts; a quality no cell has is one clear error. Expected values are the cells' own case latencies."""
    from evaluations.core.errors import EvaluationsError
    from evaluations.experiments.matrix import Axes, Grid, summarize_matrix

    source = Path(__file__).parent / "data" / "runs_751b299" / "retrieval"
    slow, fast = _cell(source, tmp_path / "slow", 1.0), _cell(source, tmp_path / "fast", 0.5)
    done = [({"cell": "slow"}, slow), ({"cell": "fast"}, fast)]
    grid = Grid(dataset="beir", quality="latency_ms", axes=Axes(search_mode=["fts"]))
    result = summarize_matrix(grid, done)
    mean_latency = {name: np.mean([json.loads(line)["latency_ms"]["total"]
                                   for line in (folder / "cases.jsonl").read_text().splitlines()])
                    for name, folder in (("slow", slow), ("fast", fast))}
    assert mean_latency["fast"] < mean_latency["slow"]
    assert result["best"] == {"cell": "fast"} and result["quality_higher_is_better"] is False
    cells = {c["params"]["cell"]: c for c in result["cells"]}
    for name in ("slow", "fast"):
        assert cells[name]["quality"] == pytest.approx(mean_latency[name])
    # same cost (none) for both: only the faster cell is on the quality/latency front
    assert (cells["fast"]["pareto"]["latency"], cells["slow"]["pareto"]["latency"]) == (True, False)
    with pytest.raises(EvaluationsError, match="no cell has a value"):
        summarize_matrix(Grid(dataset="beir", quality="no_such_judge", axes=Axes(search_mode=["fts"])), done)


def test_a_finished_cell_of_another_grid_is_not_reused(tmp_path):
    """A grid changed after its cells finished (here limit 3 where the cell ran every case) is refused: the cell's
    run was reported as this grid's, 'skipped (finished)'. The same grid again still skips it."""
    from conftest import write_scifact_subset

    source = write_scifact_subset(tmp_path / "beir", 6, 20)
    grid = {"dataset": "beir", "source": str(source), "skip_qa": True, "axes": {"search_mode": ["fts"]}}
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump(grid))
    out = tmp_path / "matrix"
    assert run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress").returncode == 0
    assert "skipped (finished)" in run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress").stderr
    grid_file.write_text(yaml.safe_dump({**grid, "limit": 3}))
    proc = run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{out / 'fts'}: the finished run in this cell is not this grid's (limit: cell None, grid 3)" in \
        proc.stderr, proc.stderr


def test_a_bad_value_in_a_later_cell_is_refused_before_any_cell_runs(tmp_path):
    """Every cell's config and servers are checked first: the second cell's bad search mode, or its unreachable
    server, was found only after the first cell had run (and the grid's max_failures only when a cell ended)."""
    from conftest import assert_one_error, write_scifact_subset

    source = write_scifact_subset(tmp_path / "beir", 6, 20)
    grid = {"dataset": "beir", "source": str(source), "skip_qa": True, "axes": {"search_mode": ["fts", "bogus"]}}
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump(grid))
    out = tmp_path / "matrix"
    proc = run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress")
    assert_one_error(proc.returncode, proc.stderr, f"{grid_file}: cell search_mode=bogus: invalid configuration")
    assert "'search.mode'" in proc.stderr and not out.exists()

    grid_file.write_text(yaml.safe_dump({**grid, "max_failures": "lots", "axes": {"search_mode": ["fts"]}}))
    proc = run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress")
    assert_one_error(proc.returncode, proc.stderr,
                     "invalid grid: max_failures: 'lots' is not a count or a percentage")
    assert not out.exists()

    (tmp_path / "closed.yaml").write_text("providers: {ollama: {base_url: 'http://127.0.0.1:9'}}\n")
    grid_file.write_text(yaml.safe_dump({
        "dataset": "repliqa", "source": str(REPLIQA_20), "limit": 1, "config": "closed.yaml",
        "axes": {"search_mode": ["fts"], "qa_model": ["embedded:smollm2-135m", "ollama:qwen3"]}}))
    proc = run_cli("matrix", str(grid_file), "--out", str(out), "--no-progress")
    assert_one_error(proc.returncode, proc.stderr, f"{grid_file} (providers.ollama.base_url): cell search_mode=fts, "
                     "qa_model=ollama:qwen3: cannot reach the model server")
    assert "http://127.0.0.1:9" in proc.stderr and not out.exists()


def test_a_grid_over_a_questions_only_file_of_your_own(tmp_path):
    """``dataset: run`` with ``source`` (rows of id and query only) and ``corpus``: each cell is the run
    ``evaluations run SOURCE --corpus CORPUS`` makes, the built-in model answers, and the cells are ranked by
    faithfulness (no gold, no qrels); a grid naming run without its corpus is one error before any cell."""
    import gzip

    squad = ROOT.parent / "shared" / "data" / "squad2_dev_cs224n"
    rows = [json.loads(line) for line in gzip.open(squad / "questions.jsonl.gz", "rt")]
    asked = [r for r in rows if not r["is_impossible"]][:1]  # one answerable question
    paragraphs = [json.loads(line) for line in gzip.open(squad / "paragraphs.jsonl.gz", "rt")][:30]
    wanted = {r["paragraph_id"] for r in asked}
    corpus = [p for p in paragraphs if p["_id"] not in wanted] + [
        p for p in (json.loads(line) for line in gzip.open(squad / "paragraphs.jsonl.gz", "rt")) if p["_id"] in wanted]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps({"id": r["id"], "query": r["question"]}) + "\n"
                                                      for r in asked))
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"id": p["_id"], "text": p["text"]}) + "\n"
                                                 for p in corpus))
    # a short prompt (400 characters: about one passage), for the answer and for the three judges that read it;
    # one retrieved chunk (search.limit 1): the passage the answer reads is the one context relevance judges (with
    # the default 5, the checker read 4 more passages per cell that no answer saw); the judges' checker is the 0.5B
    # embedded model (the grid's mechanics are under test here, not the judges' accuracy: its verdicts come 2-3x
    # sooner than the default 1.5B's)
    (tmp_path / "short.yaml").write_text("qa:\n  max_context_chars: 400\nsearch:\n  limit: 1\n"
                                         "judge:\n  model: {provider: embedded, name: qwen2.5-coder-0.5b}\n")
    grid = {"dataset": "run", "source": "questions.jsonl", "corpus": "docs.jsonl", "k": [2], "config": "short.yaml",
            "axes": {"search_mode": ["fts", "hybrid"]}}
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump({k: v for k, v in grid.items() if k != "corpus"}))
    proc = run_cli("matrix", str(grid_file), "--out", str(tmp_path / "m"), "--no-progress")
    assert proc.returncode == 2 and "dataset run needs corpus" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "m").exists()
    grid_file.write_text(yaml.safe_dump(grid))
    judges = "faithfulness,answer_relevance,context_relevance"  # the tests' default is answer relevance alone
    proc = run_cli("matrix", str(grid_file), "--out", str(tmp_path / "m"), "--no-progress",
                   env={"EVALUATIONS_REFERENCE_FREE": judges})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "m" / "matrix.json").read_text())
    assert result["quality"] == "faithfulness"
    assert [c["params"] for c in result["cells"]] == [{"search_mode": "fts"}, {"search_mode": "hybrid"}]
    for cell in result["cells"]:
        summary = json.loads((Path(cell["run_dir"]) / "summary.json").read_text())
        assert summary["counts"]["cases"] == 1 and "ndcg@10" not in summary["metrics"]
        records = [json.loads(line) for line in (Path(cell["run_dir"]) / "cases.jsonl").read_text().splitlines()]
        scores = [r["judges"]["faithfulness"] for r in records if "faithfulness" in r["judges"]]
        assert cell["quality"] == (np.mean(scores) if scores else None)
        # context relevance judged the one retrieved chunk, the passage the answer read
        assert all([c["id"] for c in r["chunk_relevance"]] == r["context"] for r in records)
        assert {"answer_relevance", "context_relevance"} <= set(cell["metrics"])
