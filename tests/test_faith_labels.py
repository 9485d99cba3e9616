"""The faithfulness labels file (datasets/labels/faithfulness.jsonl) and its loader, checked against the shared data
read directly (gzip + json), not through the loader's readers."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from evaluations.core.errors import EvaluationsError
from evaluations.judging.labels.faith_labels import is_faithfulness_labels_file, load_faithfulness_labels

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "datasets" / "labels" / "faithfulness.jsonl"
SHARED = ROOT.parent / "shared" / "data"
SQUAD = "squad2_dev_cs224n/questions.jsonl.gz"
TAKEN = ("copy", "short", "swap_entity", "swap_number", "swap_date")  # answers taken from a passage: stored as recipes

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
        assert row.label is line["label"]
        # the label stays attached to the text it was given for: sha256 recorded before the recipes replaced the text
        assert hashlib.sha256(row.generated_answer.encode("utf-8")).hexdigest() == line["answer_sha256"]
        if "answer" in line:
            assert row.generated_answer == line["answer"]
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
        if line["origin"] == "copy":  # an unedited copy is a sentence of that passage, rebuilt from its offsets
            taken = line["answer_from"]
            assert line["passage_refs"][taken["passage"]] == own
            assert rows[line["id"]].generated_answer == " ".join(cut[taken["start"]:taken["end"]].split())
    assert checked >= 30


def test_answers_taken_from_passages_are_stored_as_recipes_not_text():
    squad = _squad_by_id()
    rows = {r.id: r for r in load_faithfulness_labels(LABELS, SHARED)}
    raw = _raw_rows()
    assert {r["origin"] for r in raw} >= set(TAKEN)
    swapped = 0
    for line in raw:
        if line["origin"] not in TAKEN:
            assert "answer" in line and "answer_from" not in line  # ours (a weak model's answer, a paraphrase)
            continue
        assert "answer" not in line and set(line["answer_from"]) in ({"passage", "start", "end"}, {"gold"})
        edit = line.get("edit")
        assert (edit is not None) == line["origin"].startswith("swap_")
        if edit:  # only the swapped entity / number / date is ours to store
            assert len(edit["old"].split()) <= 6 and len(edit["new"].split()) <= 6
        ref = line["passage_refs"][line["answer_from"]["passage"]]
        if ref["dataset"] != "squad2":
            continue
        cut = squad[ref["key"]]["context"][: line["context_chars"]]
        taken = " ".join(cut[line["answer_from"]["start"]:line["answer_from"]["end"]].split())
        expected = taken.replace(edit["old"], edit["new"], 1) if edit else taken
        assert rows[line["id"]].generated_answer == expected
        swapped += bool(edit)
    assert swapped >= 10


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


def test_malformed_answer_recipes_name_the_line(tmp_path):
    raw = _raw_rows()
    good = next(r for r in raw if r["origin"].startswith("swap_") and r["answer_from"]["start"] > 0)
    taken = good["answer_from"]
    broken = [dict(good, answer_from={**taken, "end": taken["start"]}),  # empty slice
              dict(good, answer_from={"passage": taken["passage"], "start": taken["start"]}),  # no end
              dict(good, answer_from={**taken, "passage": len(good["passage_refs"])}),  # no such passage
              dict(good, answer_from={**taken, "end": good["context_chars"] + 1}),  # past the cut
              dict(good, answer_from={"gold": 99}), dict(good, answer_from={**taken, "gold": 0}),
              dict(good, edit={"old": "no such words here", "new": "x"}), dict(good, edit={"new": "x"}),
              dict(good, answer="text as well"), {k: v for k, v in good.items() if k != "answer_from"},
              dict(good, answer_from={**taken, "start": taken["start"] + 1})]  # another text: answer_sha256 differs
    for bad in broken:
        with pytest.raises(EvaluationsError) as err:
            load_faithfulness_labels(_write(tmp_path, [good, bad]), SHARED)
        assert f"{tmp_path / 'faith.jsonl'}:2" in str(err.value)
    ok = load_faithfulness_labels(_write(tmp_path, [good, {k: v for k, v in good.items() if k != "answer_sha256"}]), SHARED)
    assert ok[0].generated_answer == ok[1].generated_answer  # answer_sha256 is a check, not needed to resolve


def test_a_missing_shared_file_is_an_evaluations_error(tmp_path):
    good = _raw_rows()[0]
    with pytest.raises(EvaluationsError, match="shared data file not found"):
        load_faithfulness_labels(_write(tmp_path, [good]), tmp_path / "no-shared")


def test_the_file_is_recognised_and_the_weak_labels_file_is_not():
    assert is_faithfulness_labels_file(LABELS)
    assert not is_faithfulness_labels_file(ROOT / "datasets" / "labels" / "weak_answers.jsonl")
