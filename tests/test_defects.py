"""Defects of issue 17 whose fix (commit fafa220) came without a test of its own: each test here failed on the
code before the fix (checked by running it against fafa220^).

- ``evaluations golden`` never wrote ``by_tag.json`` when the run exited 3 (more failed cases than
  ``--max-failures`` allows), and its per-tag means skipped the failed cases, unlike the summary, where a case
  whose retrieval failed counts as 0.

The golden run uses a user system (``--system``) that ranks the repository's spans by word overlap with the
query and fails on every third query; the oracle recomputes nDCG@10 / MRR@10 with pytrec_eval from the ranking
the system returned, with a failed case counted as 0.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import pytrec_eval

from evaluations.datasets.code import repo_spans
from evaluations.datasets.golden_schema import read_golden
from inprocess import run_evaluations

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "datasets" / "golden_code_queries.json"
LIMIT = 12  # queries

USER_SYSTEM = '''
import json, os

_RANKING = json.loads(open(os.environ["GOLDEN_RANKING"]).read())


def search(request):
    """Ranked spans from a precomputed word-overlap ranking; every third query's index is down."""
    ranked = _RANKING[request["query"]]
    if ranked is None:
        raise RuntimeError("the index is down for this query")
    return {"retrieved": [{"id": i, "score": s} for i, s in ranked[: request["k"]]]}
'''


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


@pytest.fixture(scope="module")
def golden_world(tmp_path_factory):
    """A copy of the repository's code; a golden file of the first LIMIT shipped queries, moved spans updated
    (``golden validate --update``), each keeping the expected spans the copy has by id (hashes from the copy, so
    the file is valid however the code moved); the ranking of the user system (None: it fails on that query)."""
    work = tmp_path_factory.mktemp("golden_defects")
    copy = work / "repo"
    shutil.copytree(REPO / "evaluations", copy / "evaluations", ignore=shutil.ignore_patterns("__pycache__"))
    shipped = work / "shipped.json"
    shutil.copy(GOLDEN, shipped)
    run_evaluations(["golden", "validate", str(shipped), "--repo", str(copy),
                    "--update"], capture_output=True, text=True, timeout=600)  # exit 1 while some spans need a person
    by_id = {s.id: s for s in repo_spans(copy)}
    rows = []
    for row in json.loads(shipped.read_text()):
        kept = [{**e, "span_hash": by_id[f"{e['path']}::{e['symbol']}"].hash} for e in row["expected_spans"]
                if f"{e['path']}::{e['symbol']}" in by_id]
        if kept:
            rows.append({**row, "expected_spans": kept})
    golden = work / "golden.json"
    golden.write_text(json.dumps(rows[:LIMIT]))
    spans = [(sid, _words(s.text)) for sid, s in by_id.items()]
    queries = read_golden(golden)
    ranking = {}
    for i, query in enumerate(queries):
        if i % 3 == 0:
            ranking[query.query] = None
            continue
        words = _words(query.query)
        scored = sorted(spans, key=lambda span: (-len(words & span[1]) / math.sqrt(len(span[1]) or 1), span[0]))
        # strictly decreasing scores: the system's order is the order every evaluator sees (no tie-breaking)
        ranking[query.query] = [(sid, float(100 - rank)) for rank, (sid, _) in enumerate(scored[:100])]
    (work / "ranking.json").write_text(json.dumps(ranking))
    (work / "user").mkdir()
    (work / "user" / "golden_system.py").write_text(USER_SYSTEM)
    return work, copy, queries, ranking


def _run_golden(world, out: str, *extra: str) -> subprocess.CompletedProcess:
    work, copy, _, _ = world
    env = {**os.environ, "GOLDEN_RANKING": str(work / "ranking.json"), "NO_COLOR": "1",
           "PYTHONPATH": os.pathsep.join([str(work / "user"), os.environ.get("PYTHONPATH", "")])}
    return run_evaluations(["golden", str(work / "golden.json"), "--repo", str(copy),
                           "--system", "golden_system:search", "--skip-qa",
                           "--out", str(work / out), "--no-progress", "--k", "1,5,10,100", *extra],
                          capture_output=True, text=True, cwd=work / "user", env=env, timeout=600)


def _expected_by_tag(world) -> dict[str, dict[str, float]]:
    """Per tag: cases, and the mean nDCG@10 and MRR@10 over its cases, a failed case counting as 0."""
    _, _, queries, ranking = world
    qrels = {str(q.query_id): q.relevance() for q in queries}
    run = {str(q.query_id): dict(ranking[q.query]) for q in queries if ranking[q.query] is not None}
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recip_rank"}).evaluate(run)
    per_tag: dict[str, list[tuple[float, float]]] = {}
    for q in queries:
        s = scores.get(str(q.query_id))
        # MRR@10: pytrec_eval's recip_rank is over the whole list; cut at 10 by hand
        ranked = [sid for sid, _ in (ranking[q.query] or [])][:10]
        rr = next((1 / (i + 1) for i, sid in enumerate(ranked) if qrels[str(q.query_id)].get(sid, 0) > 0), 0.0)
        for tag in [*q.tags, f"difficulty:{q.difficulty}"]:
            per_tag.setdefault(tag, []).append((s["ndcg_cut_10"], rr) if s else (0.0, 0.0))
    return {tag: {"cases": len(v), "ndcg@10": sum(a for a, _ in v) / len(v), "mrr@10": sum(b for _, b in v) / len(v)}
            for tag, v in per_tag.items()}


def _check_by_tag(out: Path, expected: dict[str, dict[str, float]]) -> None:
    by_tag = json.loads((out / "by_tag.json").read_text())
    assert set(by_tag) == set(expected)
    for tag, row in expected.items():
        assert by_tag[tag]["cases"] == row["cases"], tag
        assert by_tag[tag]["ndcg@10"] == pytest.approx(row["ndcg@10"], abs=1e-9), tag
        assert by_tag[tag]["mrr@10"] == pytest.approx(row["mrr@10"], abs=1e-9), tag


def test_golden_by_tag_counts_failed_cases_as_zero(golden_world):
    work, _, queries, ranking = golden_world
    proc = _run_golden(golden_world, "tolerant", "--max-failures", "100%")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in (work / "tolerant" / "cases.jsonl").read_text().splitlines()]
    failed = {r["name"] for r in records if r["status"] == "failed"}
    assert len(queries) == LIMIT and len(records) == LIMIT
    assert failed == {str(q.query_id) for q in queries if ranking[q.query] is None} and len(failed) == LIMIT // 3
    expected = _expected_by_tag(golden_world)
    assert any(0 < row["ndcg@10"] for row in expected.values())  # the ranking finds some spans
    _check_by_tag(work / "tolerant", expected)


def test_golden_writes_by_tag_when_the_run_exits_3(golden_world):
    work = golden_world[0]
    proc = _run_golden(golden_world, "strict")  # --max-failures 0 (the default): 4 failed cases are too many
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and (work / "strict" / "summary.json").is_file()
    _check_by_tag(work / "strict", _expected_by_tag(golden_world))
