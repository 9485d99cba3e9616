"""The context-relevance label file resolves against the real shared data (fast, no model).

Oracles are read here independently of the loader: the SciFact qrels TSVs and corpus parsed with csv/gzip/json,
the SQuAD / CLAPNQ / TechQA / WixQA / RepliQA rows read with gzip/json.
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from evaluations.core.errors import EvaluationsError
from evaluations.judging.labels.context_labels import is_context_labels_file, load_context_labels

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "datasets" / "labels" / "context_relevance.jsonl"
SHARED = REPO.parent / "shared" / "data"


def _rows() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module")
def loaded():
    return {row.id: row for row in load_context_labels(LABELS, SHARED)}


def test_every_labelled_row_resolves_to_the_cut_text(loaded):
    labelled = [r for r in _rows() if r["label"] is not None]
    assert len(loaded) == len(labelled)
    for raw in labelled:
        row = loaded[raw["id"]]
        assert row.label is raw["label"] and row.source_label is raw["source_label"] and row.kind == raw["kind"]
        assert len(row.context) == 1 and len(row.context[0]) == raw["passage_chars"] and row.query.strip()
        assert row.group == f"{raw['question_ref']['dataset']}:{raw['question_ref']['key']}"


def test_scifact_rows_match_the_qrels_and_corpus_read_here(loaded):
    qrels = set()
    for split in ("train", "test"):
        with open(SHARED / "scifact" / "qrels" / f"{split}.tsv", newline="") as handle:
            qrels |= {(r["query-id"], r["corpus-id"]) for r in csv.DictReader(handle, delimiter="\t")}
    docs = {d["_id"]: f"{d['title']}\n{d['text']}" if d["title"] else d["text"]
            for d in _gz(SHARED / "scifact" / "corpus.jsonl.gz")}
    claims = {q["_id"]: q["text"] for q in _gz(SHARED / "scifact" / "queries.jsonl.gz")}
    scifact = [r for r in _rows() if r["question_ref"]["dataset"] == "scifact" and r["label"] is not None]
    assert len(scifact) >= 100
    for raw in scifact:
        qid, did = raw["question_ref"]["key"], raw["passage_ref"]["key"]
        assert raw["source_label"] is ((qid, did) in qrels), raw["id"]
        row = loaded[raw["id"]]
        assert row.query == claims[qid]
        assert row.context[0] == docs[did][: raw["passage_chars"]]


def test_question_file_rows_match_the_rows_read_here(loaded):
    text_of = {"squad2": lambda r: r["context"], "clapnq": lambda r: r["passages"][0]["text"],
               "repliqa": lambda r: r["document_extracted"], "techqa": lambda r: r["contexts"][0]["text"],
               "wixqa": lambda r: r["contexts"][0]["text"]}
    rows_by_key: dict[str, dict] = {}
    checked = 0
    for raw in _rows():
        ref = raw["passage_ref"]
        if raw["label"] is None or ref["dataset"] == "scifact":
            continue
        if ref["file"] not in rows_by_key:  # keys: row id, RepliQA sample_id, or line:N for rows without one
            rows_by_key[ref["file"]] = {
                str(r["id"]) if "id" in r else str(r["sample_id"]) if "sample_id" in r else f"line:{i}": r
                for i, r in enumerate(_gz(SHARED / ref["file"]), 1)}
        qref = raw["question_ref"]
        if qref["file"] == ref["file"]:
            question_row = rows_by_key[ref["file"]][qref["key"]]
            assert loaded[raw["id"]].query == question_row.get("question", question_row.get("input")), raw["id"]
        start = raw.get("passage_start", 0)
        text = text_of[ref["dataset"]](rows_by_key[ref["file"]][ref["key"]])
        assert loaded[raw["id"]].context[0] == text[start:start + raw["passage_chars"]], raw["id"]
        checked += 1
    assert checked >= 200


def test_label_file_is_a_balanced_set_with_notes():
    rows = [r for r in _rows() if r["label"] is not None]
    assert len({r["id"] for r in _rows()}) == len(_rows())
    positives = sum(r["label"] for r in rows)
    assert 0.35 <= positives / len(rows) <= 0.65
    for r in rows:  # every false and every disagreement with the dataset says why
        if not r["label"] or r["label"] != r["source_label"]:
            assert r["label_note"].strip(), r["id"]


def test_recognised_by_its_first_row():
    assert is_context_labels_file(LABELS)
    assert not is_context_labels_file(REPO / "datasets" / "labels" / "weak_answers.jsonl")


def _write(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_malformed_row_names_its_line(tmp_path):
    good = next(r for r in _rows() if r["label"] is not None)
    no_ref = {k: v for k, v in good.items() if k != "passage_ref"}
    with pytest.raises(EvaluationsError) as exc:
        load_context_labels(_write(tmp_path, [good, no_ref]), SHARED)
    assert exc.value.where == f"{tmp_path / 'labels.jsonl'}:2" and "passage_ref" in exc.value.message
    too_long = {**good, "passage_chars": 10**6}
    with pytest.raises(EvaluationsError, match="does not fit") as exc:
        load_context_labels(_write(tmp_path, [too_long]), SHARED)
    assert exc.value.where.endswith("labels.jsonl:1")
    bad_label = {**good, "label": "maybe"}
    with pytest.raises(EvaluationsError, match="labels.jsonl:1"):
        load_context_labels(_write(tmp_path, [bad_label]), SHARED)


def test_a_missing_shared_file_is_named(tmp_path):
    good = next(r for r in _rows() if r["label"] is not None)
    with pytest.raises(EvaluationsError, match="shared data file not found") as exc:
        load_context_labels(_write(tmp_path, [good]), tmp_path / "nowhere")
    assert exc.value.where == str(tmp_path / "nowhere" / good["question_ref"]["file"])
