"""The faithfulness labels file (datasets/labels/faithfulness.jsonl) and its loader, checked against the shared data
read directly (gzip + json), not through the loader's readers."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from evaluations.core.errors import EvaluationsError
from evaluations.judging.faith_labels import is_faithfulness_labels_file, load_faithfulness_labels

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "datasets" / "labels" / "faithfulness.jsonl"
SHARED = ROOT.parent / "shared" / "data"
SQUAD = "squad2_dev_cs224n/questions.jsonl.gz"

pytestmark = pytest.mark.skipif(not (SHARED / SQUAD).is_file(), reason="needs ../shared/data")


def _raw_rows() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _squad_by_id() -> dict[str, dict]:
    with gzip.open(SHARED / SQUAD, "rt", encoding="utf-8") as f:
        return {row["id"]: row for row in map(json.loads, f)}


def test_every_shipped_row_resolves_with_the_cut_and_the_labels_of_the_file():
    raw = _raw_rows()
    rows = load_faithfulness_labels(LABELS, SHARED)
    assert [r.id for r in rows] == [r["id"] for r in raw]
    for row, line in zip(rows, raw):
        assert len(row.context) == len(line["passage_refs"]) and all(row.context)
        assert all(len(p) <= line["context_chars"] for p in row.context)
        assert row.label is line["label"] and row.generated_answer == line["answer"]
        assert row.group == f"{line['question_ref']['dataset']}:{line['question_ref']['key']}"
    labelled = Counter(r["label"] for r in raw if r["label"] is not None)
    assert sum(labelled.values()) >= 300
    assert min(labelled.values()) >= 0.35 * sum(labelled.values())  # both classes >= 35 %
    assert all(r["label_note"] for r in raw if r["label"] is False)  # every false row names its failing claim


def test_squad_passages_are_the_shared_text_cut_and_hold_the_gold_answer():
    squad = _squad_by_id()
    rows = {r.id: r for r in load_faithfulness_labels(LABELS, SHARED)}
    checked = 0
    for line in _raw_rows():
        own = line["question_ref"]
        if own["dataset"] != "squad2" or line["origin"] not in ("weak:gold", "copy", "short"):
            continue
        source = squad[own["key"]]
        cut = source["context"][: line["context_chars"]]
        assert cut in rows[line["id"]].context  # the question's own passage is one of the passages given
        golds = [g for g in source["answers"]["text"] if g.strip()]
        assert not golds or any(g in cut for g in golds)  # unanswerable questions have no gold
        checked += bool(golds)
        if line["origin"] == "copy":
            assert line["answer"] in cut  # an unedited copy is a sentence of that passage
    assert checked >= 30


def test_wrong_context_rows_are_given_another_questions_passage():
    squad = _squad_by_id()
    rows = {r.id: r for r in load_faithfulness_labels(LABELS, SHARED)}
    wrong = [r for r in _raw_rows() if r["origin"] == "weak:wrong" and r["question_ref"]["dataset"] == "squad2"]
    assert wrong
    for line in wrong:
        own = squad[line["question_ref"]["key"]]["context"][: line["context_chars"]]
        assert own not in rows[line["id"]].context


def test_weak_rows_carry_the_weak_models_own_answers():
    weak = {r["id"]: r for r in map(json.loads, (ROOT / "datasets" / "labels" / "weak_answers.jsonl").read_text(
        encoding="utf-8").splitlines())}
    rows = [r for r in _raw_rows() if r["origin"].startswith("weak:")]
    assert sum(r["label"] is not None for r in rows) >= 200
    for row in rows:
        source = weak[row["weak_ref"]]
        assert (row["answer"], row["system"], row["origin"]) == (source["answer"], source["model"], f"weak:{source['context']}")
        assert row["question_ref"] == source["ref"]


def _write(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "faith.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_malformed_rows_name_the_line(tmp_path):
    good = _raw_rows()[0]
    broken = [dict(good, passage_refs=[]), {k: v for k, v in good.items() if k != "question_ref"},
              dict(good, passage_refs=[{"dataset": "squad2", "file": SQUAD}]), dict(good, label="maybe"),
              dict(good, context_chars=0), dict(good, question_ref={**good["question_ref"], "key": "no-such-key"})]
    for bad in broken:
        with pytest.raises(EvaluationsError) as err:
            load_faithfulness_labels(_write(tmp_path, [good, bad]), SHARED)
        assert f"{tmp_path / 'faith.jsonl'}:2" in str(err.value)


def test_a_missing_shared_file_is_an_evaluations_error(tmp_path):
    good = _raw_rows()[0]
    with pytest.raises(EvaluationsError, match="shared data file not found"):
        load_faithfulness_labels(_write(tmp_path, [good]), tmp_path / "no-shared")


def test_the_file_is_recognised_and_the_weak_labels_file_is_not():
    assert is_faithfulness_labels_file(LABELS)
    assert not is_faithfulness_labels_file(ROOT / "datasets" / "labels" / "weak_answers.jsonl")
