"""Generic dataset files: the published JSON schemas, one error per problem, and CoSQA (real code search data)
through `evaluations run DATASET_FILE --corpus` with metrics checked against pytrec_eval."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import pytrec_eval

from conftest import DATA
from evaluations.datasets.generic import load_dataset_file, read_documents, read_records
from evaluations.core.errors import EvaluationsError
from evaluations.scoring.schemas import SCHEMAS, schema_text
from inprocess import run_evaluations
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)

pytestmark = pytest.mark.usefixtures("shared_minilm")

REPO = Path(__file__).resolve().parents[1]
SCHEMA_DIR = REPO / "datasets" / "schemas"


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_evaluations(args, cwd=REPO, env={**os.environ, "NO_COLOR": "1"}, text=True)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_published_schema_is_current(name):
    path = SCHEMA_DIR / f"{name}.schema.json"
    assert path.read_text(encoding="utf-8") == schema_text(name), \
        f"{path} is stale: run python -m evaluations.scoring.schemas"


def test_schema_and_loader_agree_on_real_records(tmp_path):
    """A real file validates against the published schema (jsonschema) and loads; a bad record fails both."""
    schema = json.loads((SCHEMA_DIR / "dataset_record.schema.json").read_text())
    good = {"id": "q1", "query": "python check if a string is a number", "relevant_doc_ids": ["d1"],
            "graded_relevance": {"d2": 2}, "answers": ["use str.isdigit"], "tags": ["web"], "category": "how-to",
            "difficulty": "easy"}
    bad = {"id": "q2", "query": "", "graded_relevance": {"d1": "high"}, "colour": "blue"}
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(good) + "\n")
    [record] = read_records(path)
    query = record.to_query()
    assert query.relevant == {"d1": 1, "d2": 2}
    assert query.tags == ["web", "category:how-to", "difficulty:easy"]


def test_every_problem_is_reported_with_line_and_field(tmp_path):
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text("\n".join([
        json.dumps({"id": "q1", "query": "fine", "relevant_doc_ids": ["a"]}),
        json.dumps({"id": "q2", "query": "no gold at all: valid, its answer is judged reference-free"}),
        json.dumps({"id": "q3", "query": "bad grade", "graded_relevance": {"a": "high"}}),
        json.dumps({"id": "q1", "query": "duplicate id", "relevant_doc_ids": ["a"]}),
        json.dumps({"id": "q5", "query": "typo", "relevant_docs": ["a"], "answers": ["x"]}),
    ]) + "\n")
    with pytest.raises(EvaluationsError) as info:
        read_records(jsonl)
    text = str(info.value)
    assert "3 problem(s)" in text and "bad.jsonl:2:" not in text
    assert "bad.jsonl:3: field 'graded_relevance.a'" in text
    assert "bad.jsonl:4: field 'id': duplicate id 'q1' (first at line 1)" in text
    assert "bad.jsonl:5: field 'relevant_docs': Extra inputs are not permitted" in text
    assert 'keep fields of your own under "metadata"' in info.value.fix

    own = tmp_path / "own.jsonl"  # fields of the user's own, under metadata: accepted, not read
    own.write_text(json.dumps({"id": "q1", "query": "fine", "metadata": {"source": "faq", "owner": 3}}) + "\n")
    [record] = read_records(own)
    assert record.to_query().text == "fine" and record.metadata == {"source": "faq", "owner": 3}

    array = tmp_path / "bad.json"  # line numbers of records inside a JSON array
    array.write_text('[\n  {"id": "a", "query": "ok", "answers": ["x"]},\n\n  {"id": "b",\n   "query": 3,'
                     ' "answers": ["y"]}\n]\n')
    with pytest.raises(EvaluationsError, match=r"bad.json:4: field 'query'"):
        read_records(array)
    yaml_file = tmp_path / "bad.yaml"
    yaml_file.write_text("- id: a\n  query: ok\n  answers: [x]\n- id: b\n  query: fine\n  difficulty: [hard]\n"
                         "  answers: [y]\n")
    with pytest.raises(EvaluationsError, match=r"bad.yaml:4: field 'difficulty'"):
        read_records(yaml_file)


def test_documents_from_a_markdown_folder_and_missing_ids(tmp_path):
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "install.md").write_text("# Install\npip install evaluations\n")
    (docs / "faq.txt").write_text("Why is recall low? Check the ids.\n")
    (docs / "image.png").write_bytes(b"\x89PNG")
    assert [d.id for d in read_documents(docs)] == ["faq.txt", "guide/install.md"]
    dataset = tmp_path / "set.yaml"
    dataset.write_text("- id: q1\n  query: how do I install it\n  relevant_doc_ids: [guide/install.md]\n"
                       "- id: q2\n  query: low recall\n  relevant_doc_ids: [faq.md, nope.md]\n")
    with pytest.raises(EvaluationsError, match=r"2 relevant document id\(s\) are not in the corpus \(q2->faq.md, q2->nope.md"):
        load_dataset_file(dataset, docs)


def test_cosqa_through_the_generic_path_equals_pytrec_eval(tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    from cosqa_to_dataset import convert

    queries, corpus = convert(DATA / "cosqa_dev" / "cosqa-dev.jsonl.gz", tmp_path / "cosqa")
    out = tmp_path / "run"
    proc = cli("run", str(queries), "--corpus", str(corpus), "--search-mode", "fts", "--skip-qa", "--limit", "120",
               "--db", str(tmp_path / "db"), "--out", str(out), "--no-progress", "--json", "--k", "1,10,100")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert summary["counts"]["cases"] == len(records) == 120
    assert summary["dataset"]["documents"] == 604 and all(r["tags"] == ["cosqa"] for r in records)
    qrels = {r["name"]: {d: int(g) for d, g in r["relevant"].items()} for r in records}
    run = {r["name"]: dict(zip(r["retrieved"], r["scores"])) for r in records}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_100", "success_1"}).evaluate(run)
    for r in records:
        assert r["metrics"]["ndcg@10"] == pytest.approx(oracle[r["name"]]["ndcg_cut_10"], abs=1e-9)
        assert r["metrics"]["recall@100"] == pytest.approx(oracle[r["name"]]["recall_100"], abs=1e-9)
    assert summary["metrics"]["ndcg@10"] == pytest.approx(sum(v["ndcg_cut_10"] for v in oracle.values()) / 120)
    assert 0.3 < summary["metrics"]["ndcg@10"] < 1.0


def test_log_schema_and_loader_agree_on_query_id_types():
    """The log reader takes an integer query_id as its decimal text and refuses a float or boolean; the published
    schema (checked by jsonschema, not by our reader) says the same, so a user's validator does not reject logs
    that score."""
    from pydantic import ValidationError

    from evaluations.scoring.logs import LogRecord

    schema = json.loads((SCHEMA_DIR / "log_record.schema.json").read_text())
    for value in ("q1", 7):
        jsonschema.validate({"query_id": value}, schema)
        assert LogRecord.model_validate({"query_id": value}).query_id == str(value)
    for value in (True, None, 1.5):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"query_id": value}, schema)
    for value in (True, None, 1.5, 1.0):  # JSON Schema counts 1.0 as an integer; the reader refuses it
        with pytest.raises(ValidationError):
            LogRecord.model_validate({"query_id": value})


def test_cases_that_retrieved_nothing_are_warned_about(tmp_path):
    """Full-text search finds nothing for a query of stopwords only or in Chinese (the keyword index splits neither
    into terms it holds): those cases score 0, and the run says so, naming them; vector search retrieves for every
    query, so the same run in hybrid mode has no such warning. SciFact's first 20 abstracts and a real query."""
    import gzip

    docs = [json.loads(line) for line in gzip.open(DATA / "scifact" / "corpus.jsonl.gz", "rt")][:20]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": d["_id"], "text": d["text"]}) + "\n" for d in docs))
    first = docs[0]["title"]
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(row) + "\n" for row in [
        {"id": "real", "query": first}, {"id": "stopwords", "query": "the of and"},
        {"id": "chinese", "query": "维生素D缺乏与什么疾病有关"}]))
    runs = {}
    for mode in ("fts", "hybrid"):
        proc = cli("run", str(queries), "--corpus", str(corpus), "--search-mode", mode, "--skip-qa", "--no-progress",
                   "--db", str(tmp_path / f"db-{mode}"), "--out", str(tmp_path / mode))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        records = {json.loads(line)["name"]: json.loads(line) for line in (tmp_path / mode / "cases.jsonl").open()}
        runs[mode] = (records, json.loads((tmp_path / mode / "summary.json").read_text()), proc.stdout + proc.stderr)
    records, summary, output = runs["fts"]
    assert records["real"]["retrieved"]
    assert not records["stopwords"]["retrieved"] and not records["chinese"]["retrieved"]
    (warning,) = [w for w in summary["warnings"] if w["kind"] == "nothing_retrieved"]
    assert warning["cases"] == 2 and sorted(warning["examples"]) == ["chinese", "stopwords"]
    assert "2 of 3 cases retrieved nothing" in output
    records, summary, output = runs["hybrid"]
    assert all(r["retrieved"] for r in records.values())
    assert "nothing_retrieved" not in {w["kind"] for w in summary.get("warnings", [])}
