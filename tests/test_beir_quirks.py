"""Quirks of real BEIR sets that the loader reads as BEIR and trec_eval do, on a real SciFact subset; the figures
checked against pytrec_eval on the run's own rankings.

- an empty document (FiQA has rows ``{"_id": "7915", "title": "", "text": ""}``): indexed empty, counted, warned;
- a judged document the corpus lacks (ArguAna's qrels name one): kept among the relevant, so recall and nDCG count
  it as missed, as pytrec_eval does with the same qrels;
- a judged query ``queries.jsonl`` lacks (reported for NFCorpus): left out, counted;
- a query of another split with an empty text: not read;
- qrels whose first line is another header (``query_id corpus_id score``), with trailing tabs;
- the same pair graded twice differently: an error naming both lines;
- a query that is a document under its own id (ArguAna, Quora): kept, and said (BEIR's figures drop it).
Each of the first four stopped the whole dataset before (exit 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import pytrec_eval
from conftest import assert_one_error, write_scifact_subset
from test_cli_retrieval import run_cli


def _quirky(folder: Path) -> tuple[Path, dict[str, dict[str, int]]]:
    source = write_scifact_subset(folder, 12, 30)
    with (source / "corpus.jsonl").open("a") as corpus:
        corpus.write(json.dumps({"_id": "7915", "title": "", "text": ""}) + "\n")
    asked = json.loads((source / "queries.jsonl").read_text().splitlines()[0])
    with (source / "corpus.jsonl").open("a") as corpus:  # ArguAna's way: the query is a document, under its id
        corpus.write(json.dumps({"_id": asked["_id"], "title": "", "text": asked["text"]}) + "\n")
    with (source / "queries.jsonl").open("a") as queries:
        queries.write(json.dumps({"_id": "dev-only", "text": ""}) + "\n")
    rows = [line.split("\t") for line in (source / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    first = rows[0][0]
    rows += [[first, "not-in-corpus", "1"], ["not-in-queries", rows[0][1], "1"]]
    (source / "qrels" / "test.tsv").write_text("query_id\tcorpus_id\tscore\n"
                                               + "".join("\t".join(r) + "\t\n" for r in rows))
    qrels: dict[str, dict[str, int]] = {}
    for qid, did, score in rows:
        if qid != "not-in-queries":
            qrels.setdefault(qid, {})[did] = int(score)
    return source, qrels


def test_real_sets_quirks_are_read_as_beir_and_trec_eval_read_them(tmp_path):
    source, qrels = _quirky(tmp_path / "beir")
    out = tmp_path / "run"
    proc = run_cli("beir", str(source), "--search-mode", "fts", "--skip-qa", "--no-progress", "--k", "1,10,100",
                   "--db", str(tmp_path / "db"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert any("1 document(s) of corpus.jsonl have no title and no text (e.g. '7915')" in w for w in warnings)
    assert any("1 document id(s) judged in" in w and "'not-in-corpus'" in w for w in warnings), warnings
    assert any("1 query id(s) of" in w and "'not-in-queries'" in w for w in warnings), warnings
    assert any("1 of 12 queries are documents of the corpus under their own id" in w for w in warnings), warnings
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dataset"]["documents"] == len((source / "corpus.jsonl").read_text().splitlines())
    assert len(summary["warnings"]) >= 4 and all(w["kind"] == "dataset" for w in summary["warnings"][:4])
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert sorted(r["case"] for r in records) == sorted(qrels)  # the absent query left out, the empty one unread
    run = {r["case"]: {d: float(len(r["retrieved"]) - i) for i, d in enumerate(r["retrieved"])} for r in records}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_100", "P_1"}).evaluate(run)
    for ours, theirs in (("ndcg@10", "ndcg_cut_10"), ("recall@100", "recall_100"), ("p@1", "P_1")):
        expected = sum(v[theirs] for v in oracle.values()) / len(oracle)
        assert summary["metrics"][ours] == pytest.approx(expected, abs=1e-9), ours
    assert oracle[next(iter(qrels))]["recall_100"] < 1.0  # the absent document is counted as missed


def test_a_pair_graded_twice_differently_names_both_lines(tmp_path):
    source = write_scifact_subset(tmp_path / "beir", 3, 5)
    qrels = source / "qrels" / "test.tsv"
    lines = qrels.read_text().splitlines()
    qid, did, grade = lines[1].split("\t")
    qrels.write_text("\n".join([*lines, f"{qid}\t{did}\t{1 - int(grade) if grade in '01' else 0}"]) + "\n")
    proc = run_cli("beir", str(source), "--search-mode", "fts", "--skip-qa", "--no-progress",
                   "--db", str(tmp_path / "db"), "--out", str(tmp_path / "run"))
    assert_one_error(proc.returncode, proc.stderr, f"{qrels}:{len(lines) + 1}: document {did!r} of query {qid!r}",
                     f"at {qrels}:2")
    assert not (tmp_path / "run").exists()


def test_a_file_beside_the_one_read_is_named(tmp_path):
    """corpus.jsonl and corpus.jsonl.gz both there: the .jsonl was read without a word."""
    import gzip

    from evaluations.datasets import LoadOptions, get_spec

    source = write_scifact_subset(tmp_path / "beir", 3, 5)
    with gzip.open(source / "corpus.jsonl.gz", "wt") as handle:
        handle.write((source / "corpus.jsonl").read_text())
    corpus = get_spec("beir").load(LoadOptions(source=source))
    assert corpus.warnings == ["corpus.jsonl was read, not corpus.jsonl.gz beside it"]


def test_a_run_of_another_split_is_named_by_it(tmp_path):
    """Runs are called runs/<dataset>-<mode>-<time>: a run of --split dev was called like the test split's, so
    history and compare read two splits' figures as one series."""
    source = write_scifact_subset(tmp_path / "beir", 3, 5)
    (source / "qrels" / "dev.tsv").write_text((source / "qrels" / "test.tsv").read_text())
    work = tmp_path / "work"
    work.mkdir()
    for split in ((), ("--split", "dev"), ("--split", "test")):
        proc = run_cli("beir", str(source), *split, "--search-mode", "fts", "--skip-qa", "--no-progress",
                       "--db", str(tmp_path / "db"), cwd=work, env={"PYTHONPATH": str(Path(__file__).parents[1])})
        assert proc.returncode == 0, proc.stderr
    # <name>-<date>-<time>, and -2 when a run of that name started in the same second (fast runs do)
    names = sorted(re.sub(r"-\d{8}-\d{6}(-\d+)?$", "", p.name) for p in (work / "runs").iterdir())
    assert names == ["beir-dev-fts", "beir-fts", "beir-fts"]


def test_a_question_asked_under_two_ids_is_said(tmp_path):
    """SciFact's train split asks "Adult tissue-resident macrophages stem from ..." as query 89 and 90 with other
    qrels, and claim 85 again as 86 with the same: each is scored on its own, which a user should hear of."""
    from conftest import SCIFACT, _read_jsonl_gz

    wanted = {"85", "86", "89", "90"}
    rows = [line.split("\t") for line in (SCIFACT / "qrels" / "train.tsv").read_text().splitlines()[1:]]
    kept = [r for r in rows if r[0] in wanted]
    judged = {r[1] for r in kept}
    docs = [d for d in _read_jsonl_gz(SCIFACT / "corpus.jsonl.gz")][:20]
    docs += [d for d in _read_jsonl_gz(SCIFACT / "corpus.jsonl.gz") if d["_id"] in judged and d not in docs]
    source = tmp_path / "beir"
    (source / "qrels").mkdir(parents=True)
    (source / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (source / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in _read_jsonl_gz(SCIFACT /
                                                                                                "queries.jsonl.gz")
                                                  if q["_id"] in wanted))
    (source / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n"
                                                                                        for r in kept))
    out = tmp_path / "run"
    proc = run_cli("beir", str(source), "--search-mode", "fts", "--skip-qa", "--no-progress",
                   "--db", str(tmp_path / "db"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    [warning] = [w for w in json.loads((out / "summary.json").read_text())["warnings"]
                 if w["kind"] == "repeated_questions"]
    assert warning["message"].startswith("2 case(s) ask a question an earlier case asks (e.g. '86' asks what '85' "
                                         "asks), 1 of them with other gold")
    assert "2 case(s) ask a question an earlier case asks" in " ".join(proc.stderr.split())
