"""Golden code-span queries: the shipped file, span extraction (vs ast + hashlib), validate/--update on a modified
copy of this repository, and `evaluations golden` end to end with graded metrics checked against pytrec_eval."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import pytrec_eval

from evaluations.datasets.code import python_spans, repo_spans
from evaluations.datasets.golden_schema import read_golden
from inprocess import run_evaluations

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "datasets" / "golden_code_queries.json"


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return run_evaluations([*args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}, timeout=600)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_golden_file_shape():
    queries = read_golden(GOLDEN)
    assert len(queries) >= 50
    assert len({q.query_id for q in queries}) == len(queries)
    kinds = Counter(t for q in queries for t in q.tags if t in ("definition", "how-to", "troubleshooting", "multi-file"))
    assert all(kinds[k] >= 5 for k in ("definition", "how-to", "troubleshooting", "multi-file")), kinds
    assert set(Counter(q.difficulty for q in queries)) == {"easy", "medium", "hard"}
    assert all(max(s.relevance_score for s in q.expected_spans) == 3 for q in queries)
    multi = [q for q in queries if "multi-file" in q.tags]
    assert all(len({s.path for s in q.expected_spans}) >= 2 for q in multi)


def test_a_query_key_given_twice_is_refused_naming_its_line(tmp_path):
    """json.loads keeps the last of two equal keys: a golden query whose spans are given twice must not lose the
    first list silently."""
    from evaluations.core.errors import EvaluationsError

    first, second = json.loads(GOLDEN.read_text(encoding="utf-8"))[:2]
    body = json.dumps(second, indent=2)
    twice = body[:-2] + f',\n  "expected_spans": {json.dumps(first["expected_spans"])}\n}}'
    path = tmp_path / "golden.json"
    path.write_text("[\n" + json.dumps(first) + ",\n" + twice + "\n]\n", encoding="utf-8")
    with pytest.raises(EvaluationsError) as info:
        read_golden(path)
    assert "'expected_spans' is given twice" in str(info.value) and info.value.where == f"{path}:3"
    path.write_text("[\n" + json.dumps(first) + ",\n" + body + "\n]\n", encoding="utf-8")
    assert [str(q.query_id) for q in read_golden(path)] == [first["query_id"], second["query_id"]]


def test_golden_file_matches_this_repository():
    proc = cli("golden", "validate", "--repo", str(REPO), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, "stale golden spans; run `evaluations golden validate --update`:\n" + \
        "\n".join(f"{s['path']}::{s['symbol']}: {s['status']} ({s['fix']})" for s in report["stale"])


def test_spans_equal_ast_source_segments():
    path = REPO / "evaluations" / "results" / "retrieval_metrics.py"
    source = path.read_text()
    spans = {s.symbol: s for s in python_spans("evaluations/results/retrieval_metrics.py", source)}
    tree = ast.parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.decorator_list]
    assert len(functions) >= 8
    lines = source.splitlines()
    for node in functions:  # whole source lines, def to last line, docstring included
        assert spans[node.name].hash == sha("\n".join(lines[node.lineno - 1:node.end_lineno])), node.name
        assert spans[node.name].text.startswith(ast.get_source_segment(source, node).splitlines()[0])
        assert ast.get_docstring(node) is None or ast.get_docstring(node).splitlines()[0] in spans[node.name].text
    code = (REPO / "evaluations" / "datasets" / "golden_validate.py").read_text()
    finding = {s.symbol: s for s in python_spans("x.py", code)}
    assert "def fix(self)" not in finding["Finding"].text and "status: str" in finding["Finding"].text
    assert finding["Finding.fix"].kind == "method" and finding["Finding.fix"].text.lstrip().startswith("def fix")
    assert "from evaluations.datasets.code import" in finding["<module>"].text and "def validate" not in finding["<module>"].text


@pytest.fixture()
def repo_copy(tmp_path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "evaluations", copy / "evaluations", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "datasets").mkdir()
    shutil.copy(GOLDEN, copy / "datasets" / "golden_code_queries.json")
    return copy


def test_validate_lists_stale_spans_and_update_fixes_them(repo_copy):
    ev = repo_copy / "evaluations"
    # 1. rename a function: its span is gone
    chunking = ev / "datasets" / "chunking.py"
    chunking.write_text(chunking.read_text().replace("def chunk_text(", "def split_text("))
    # 2. edit a function body: same symbol, new hash
    lexical = ev / "judging" / "correctness" / "lexical.py"
    lexical.write_text(lexical.read_text().replace("    generated_kw = keywords(generated)\n",
                                                   "    generated_kw = keywords(generated)  # once for all refs\n", 1))
    # 3. move a function unchanged to another file
    stats = ev / "results" / "stats.py"
    source = stats.read_text()
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "percentile")
    lines = source.splitlines(keepends=True)
    moved = "".join(lines[node.lineno - 1:node.end_lineno])
    stats.write_text("".join(lines[:node.lineno - 1] + lines[node.end_lineno:]))
    (ev / "results" / "percentiles.py").write_text("import math\n\n\n" + moved)

    golden = repo_copy / "datasets" / "golden_code_queries.json"
    proc = cli("golden", "validate", str(golden), "--repo", str(repo_copy), "--json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    by_span = {(s["path"], s["symbol"]): s for s in report["stale"]}
    assert by_span[("evaluations/datasets/chunking.py", "chunk_text")]["status"] == "missing"
    changed = by_span[("evaluations/judging/correctness/lexical.py", "keyword_overlap")]
    assert changed["status"] == "changed" and "--update" in changed["fix"]
    new_source = lexical.read_text()
    overlap = next(n for n in ast.parse(new_source).body if getattr(n, "name", "") == "keyword_overlap")
    assert changed["new_hash"] == sha("\n".join(new_source.splitlines()[overlap.lineno - 1:overlap.end_lineno]))
    move = by_span[("evaluations/results/stats.py", "percentile")]
    assert move["status"] == "moved" and move["new_path"] == "evaluations/results/percentiles.py"
    assert move["new_hash"] == move["old_hash"] == sha(moved.rstrip("\n"))
    # module-level spans of the edited files changed too (their text lost/kept lines); nothing else is stale
    assert {s["path"] for s in report["stale"]} <= {"evaluations/datasets/chunking.py", "evaluations/judging/correctness/lexical.py",
                                                    "evaluations/results/stats.py"}

    # the table for people, with the fix per span
    human = cli("golden", "validate", str(golden), "--repo", str(repo_copy))
    assert human.returncode == 1 and "moved unchanged to evaluations/results/percentiles.py" in human.stderr

    proc = cli("golden", "validate", str(golden), "--repo", str(repo_copy), "--update", "--json")
    assert proc.returncode == 1  # the renamed function still needs a person
    updated = json.loads(proc.stdout)
    n_missing = sum(s["status"] == "missing" for s in report["stale"])
    assert updated["updated"] == len(report["stale"]) - n_missing and updated["remaining"] == n_missing
    after = json.loads(cli("golden", "validate", str(golden), "--repo", str(repo_copy), "--json").stdout)
    assert {s["status"] for s in after["stale"]} == {"missing"}
    spans = {(s.path, s.symbol) for q in read_golden(golden) for s in q.expected_spans}
    assert ("evaluations/results/percentiles.py", "percentile") in spans
    assert ("evaluations/results/stats.py", "percentile") not in spans


def test_golden_run_graded_metrics_equal_pytrec_eval(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "evaluations", copy / "evaluations", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "out"
    proc = cli("golden", str(GOLDEN), "--repo", str(copy), "--search-mode", "fts", "--skip-qa", "--limit", "25",
               "--db", str(tmp_path / "db"), "--out", str(out), "--no-progress", "--json", "--k", "1,5,10,100")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert summary["dataset"]["documents"] == len(repo_spans(copy))
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert len(records) == 25
    queries = {str(q.query_id): q for q in read_golden(GOLDEN)}
    qrels = {r["name"]: queries[r["name"]].relevance() for r in records}
    assert all(r["relevant"] == qrels[r["name"]] for r in records)  # graded by relevance_score
    run = {r["name"]: dict(zip(r["retrieved"], r["scores"])) for r in records}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recip_rank"}).evaluate(run)
    for r in records:
        assert r["metrics"]["ndcg@10"] == pytest.approx(oracle[r["name"]]["ndcg_cut_10"], abs=1e-9)
    by_tag = json.loads((out / "by_tag.json").read_text())
    easy = [r for r in records if "difficulty:easy" in r["tags"]]
    assert by_tag["difficulty:easy"]["cases"] == len(easy)
    assert by_tag["difficulty:easy"]["ndcg@10"] == pytest.approx(
        sum(oracle[r["name"]]["ndcg_cut_10"] for r in easy) / len(easy))
    assert summary["metrics"]["ndcg@10"] > 0.2


def test_by_tag_counts_a_failed_case_as_zero_like_the_summary():
    """golden's by_tag.json and the summary's segments are one rule (``results.segments``): a case whose retrieval
    failed scores 0. Expected values: pytrec_eval on the ok case, 0 for the failed ones, averaged by hand."""
    from evaluations.cli.golden import by_tag
    from evaluations.results.records import CaseRecord
    from evaluations.results.rundata import RunData
    from evaluations.results.summary import summarize

    ranking, qrels = ["d1", "d2", "d3"], {"d2": 1, "d9": 1}
    ok = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"ndcg_cut_10", "recip_rank"}).evaluate(
        {"q": {d: 3.0 - i for i, d in enumerate(ranking)}})["q"]
    records = [CaseRecord(name="a", tags=["difficulty:easy"], retrieved=ranking, relevant=qrels,
                          metrics={"ndcg@10": ok["ndcg_cut_10"], "mrr@10": ok["recip_rank"]}),
               CaseRecord(name="b", tags=["difficulty:easy"], status="failed", error="boom", relevant={"d4": 1}),
               CaseRecord(name="c", tags=["difficulty:hard"], status="failed", error="boom", relevant={"d5": 1})]
    rows = by_tag(RunData(records=records, ks=[10]))
    assert rows["difficulty:easy"]["cases"] == 2
    assert rows["difficulty:easy"]["ndcg@10"] == pytest.approx(ok["ndcg_cut_10"] / 2)  # (value + 0) / 2
    assert rows["difficulty:easy"]["mrr@10"] == pytest.approx(ok["recip_rank"] / 2)
    assert rows["difficulty:hard"]["ndcg@10"] == 0.0
    segments = summarize(records, name="x", ks=[10], extra={}).segments
    assert {t: s.metrics["ndcg@10"] for t, s in segments.items()} == {t: r["ndcg@10"] for t, r in rows.items()}
