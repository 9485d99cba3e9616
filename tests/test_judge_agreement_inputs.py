"""judge-agreement's inputs and undefined statistics: rows without a gold answer for the judges that compare with
one, answer_relevance's rows read as the other reference-free judges' rows, a file given twice, a CSV label cell
meaning not applicable, the missing-file hint, and precision/recall/F1 that are undefined (0/0) reported as n/a /
null and left out of the bootstrap intervals (scikit-learn's ``zero_division=np.nan`` as the oracle)."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, assert_one_error
from sklearn.metrics import f1_score, precision_score, recall_score

from evaluations.cli.root import main
from evaluations.core.errors import EvaluationsError
from evaluations.judging.validation.agreement import agreement, bootstrap_ci, check_references, confusion, metrics
from evaluations.judging.labels.data import load_labelled
from evaluations.judging.labels.rows import LabelledAnswer
from evaluations.judging.labels.passage_rows import load_passage_rows

SQUAD = DATA / "squad2_dev_cs224n" / "questions.jsonl.gz"


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``evaluations ARGS`` run in this process (main() exits only on errors)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exited:
        code = exited.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def squad_rows() -> list[dict]:
    """Four real answerable SQuAD 2.0 questions as reference-free rows: query, context (its paragraph), the gold as
    the answer, label true; no reference_answer."""
    rows = []
    with gzip.open(SQUAD, "rt") as handle:
        for line in handle:
            r = json.loads(line)
            if not r["is_impossible"] and r["answers"]["text"]:
                rows.append({"id": r["id"], "query": r["question"], "context": [r["context"]],
                             "generated_answer": r["answers"]["text"][0], "label": True})
            if len(rows) == 4:
                return rows
    raise AssertionError("fewer than 4 answerable questions")


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- undefined statistics ------------------------------------------------------------------------------------


@pytest.mark.parametrize("labels, verdicts", [
    ([False] * 6, [False] * 6),  # nobody says correct: precision, recall, F1 and κ are 0/0
    ([True, False, True], [False] * 3),  # the judge never says correct: precision 0/0, recall and F1 0
    ([False] * 3, [True, False, False]),  # the human never says correct: recall 0/0, precision and F1 0
    ([True, False, True, False], [True, False, False, True]),  # all defined
])
def test_undefined_point_values_are_nan_as_scikit_learn(labels, verdicts):
    ours = {k: float(v) for k, v in metrics(confusion(labels, verdicts)).items()}
    oracle = {"precision": precision_score(labels, verdicts, zero_division=np.nan),
              "recall": recall_score(labels, verdicts, zero_division=np.nan),
              "f1": f1_score(labels, verdicts, zero_division=np.nan)}
    assert {k: ours[k] for k in oracle} == pytest.approx(oracle, nan_ok=True)
    result = agreement("f1", labels, verdicts, [str(i) for i in range(len(labels))], resamples=50).to_dict()
    for name, value in oracle.items():
        assert result[name]["value"] == (None if np.isnan(value) else pytest.approx(value))
        if np.isnan(value):  # every resample is 0/0 too: no interval
            assert result[name]["ci95"] == [None, None]


def test_undefined_resamples_are_left_out_of_the_interval():
    """By hand: question A is a true positive, B a true negative. A resample holds A twice (precision, recall, F1 =
    1), A and B (1) or B twice (0/0: undefined, left out), so every defined value is 1 and the interval is [1, 1];
    counted as 0, a quarter of the resamples would pull its lower end to 0. κ: A and B together give 1, one of
    them alone p_e = 1 (undefined)."""
    ci = bootstrap_ci([True, False], [True, False], ["A", "B"], resamples=400, seed=3)
    for name in ("accuracy", "precision", "recall", "f1", "kappa"):
        assert ci[name] == (1.0, 1.0), name


def test_perfect_agreement_table_and_json_say_n_a_for_undefined(tmp_path, capsys):
    """The tester's two files: all labels false and the judge agrees (precision/recall/F1 undefined: n/a, null),
    and perfect agreement on 4 questions, 2 correct (every interval [1, 1]); --resamples 0: no interval, n/a."""
    golds = [("What is the capital of France?", "Paris"), ("Who wrote Hamlet?", "Shakespeare"),
             ("Largest planet?", "Jupiter"), ("Chemical symbol for gold?", "Au")]
    wrong = _jsonl(tmp_path / "wrong.jsonl", [
        {"id": f"c{i}", "query": q, "generated_answer": "Wrong thing", "reference_answer": g, "label": False}
        for i, (q, g) in enumerate(golds)])
    perfect = _jsonl(tmp_path / "perfect.jsonl", [
        {"id": f"q{i}", "query": q, "generated_answer": g if i % 2 else "Mars", "reference_answer": g,
         "label": bool(i % 2)} for i, (q, g) in enumerate(golds)])
    code, out, _ = run_cli(capsys, "judge-agreement", str(wrong), "--judges", "f1", "--resamples", "200")
    line = next(x for x in out.splitlines() if x.strip().startswith("f1"))
    assert code == 0 and line.split()[1:5] == ["1.000", "n/a", "n/a", "n/a"], out
    code, out, _ = run_cli(capsys, "judge-agreement", str(wrong), "--judges", "f1", "--json", "--resamples", "200")
    judge = json.loads(out)["judges"][0]
    assert [judge[m]["value"] for m in ("accuracy", "precision", "recall", "f1")] == [1.0, None, None, None]
    code, out, _ = run_cli(capsys, "judge-agreement", str(perfect), "--judges", "f1", "--json")
    judge = json.loads(out)["judges"][0]
    assert {m: judge[m]["ci95"] for m in ("accuracy", "precision", "recall", "f1", "kappa")} == \
        {m: [1.0, 1.0] for m in ("accuracy", "precision", "recall", "f1", "kappa")}
    code, out, _ = run_cli(capsys, "judge-agreement", str(perfect), "--judges", "f1", "--resamples", "0")
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.strip().startswith("f1"))
    assert code == 0 and lines[at + 1].split() == ["n/a"] * 5 and "nan" not in out, out


# --- rows without a gold answer ----------------------------------------------------------------------------


@pytest.mark.parametrize("judges", ["keyword,f1,em,containment", "f1,faithfulness", "answer_relevance,em"])
def test_correctness_judges_refuse_rows_without_a_gold_answer(tmp_path, capsys, squad_rows, judges):
    path = _jsonl(tmp_path / "rf.jsonl", squad_rows)
    code, out, err = run_cli(capsys, "judge-agreement", str(path), "--judges", judges)
    readers = ", ".join(j for j in judges.split(",") if j not in ("faithfulness", "answer_relevance"))
    assert_one_error(code, out + err, f"{path}:1", "line(s) 1, 2, 3, 4", "'reference_answer'", readers,
                     "reference-free judges")


def test_reference_free_judge_alone_needs_no_gold_and_unanswerable_rows_need_none(tmp_path, capsys, squad_rows):
    path = _jsonl(tmp_path / "rf.jsonl", squad_rows)
    code, out, err = run_cli(capsys, "judge-agreement", str(path), "--judges", "answer_relevance", "--json",
                             "--resamples", "0")
    assert code == 0 and json.loads(out)["judges"][0]["n"] == 4, err
    refusal = LabelledAnswer("q", (), "I cannot tell.", True, "q", "x.jsonl:1", answerable=False)
    check_references([refusal], ["f1", "offline"])  # an unanswerable question has no gold: no error
    with pytest.raises(EvaluationsError, match="f1"):
        check_references([refusal, LabelledAnswer("q2", (), "a", True, "q2", "x.jsonl:2")], ["f1"])


# --- answer_relevance's rows ---------------------------------------------------------------------------------


@pytest.mark.parametrize("change, drop, needles", [
    ({"context": ["ok passage", 42, None]}, "", ["field 'context'", "item 2 is a number (42)"]),
    ({"context": [{"text": "a passage", "id": "p1"}]}, "", ["field 'context'", "item 1 is an object"]),
    ({"query": "  "}, "", ["field 'query' must be a non-empty string"]),
    ({"question": "Who?"}, "query", ["missing field 'query'", "rename 'question' to 'query'"]),
    ({"lable": True}, "label", ["missing field 'label'", "rename 'lable' to 'label'"]),
    ({"label": "maybe"}, "", ["'maybe' is not a true/false label", "null (in CSV an empty cell or null) = not "
                                                                   "applicable"]),
])
def test_answer_relevance_rows_are_checked_as_reference_free_rows(tmp_path, capsys, squad_rows, change, drop,
                                                                  needles):
    """Each of these was accepted (or refused without the rename) when answer_relevance read classic rows."""
    row = {k: v for k, v in {**squad_rows[1], **change}.items() if k != drop}
    path = _jsonl(tmp_path / "rows.jsonl", [squad_rows[0], row])
    code, out, err = run_cli(capsys, "judge-agreement", str(path), "--judges", "answer_relevance")
    assert_one_error(code, out + err, f"{path}:2", *needles)


def test_answer_relevance_null_label_is_not_applicable(tmp_path, capsys, squad_rows):
    path = _jsonl(tmp_path / "rows.jsonl", [squad_rows[0], {**squad_rows[1], "label": None}, squad_rows[2]])
    code, out, err = run_cli(capsys, "judge-agreement", str(path), "--judges", "answer_relevance", "--json",
                             "--resamples", "0")
    assert code == 0 and json.loads(out)["examples"] == 2, err
    assert "1 row(s) labelled not applicable (null) left out" in err
    assert json.loads(out)["rows_labelled_null"] == {str(path): 1}


def test_limit_counts_only_the_null_rows_it_read(tmp_path, capsys, squad_rows):
    """--limit 1 reads the first labelled row and the null rows before the next: the null rows after it are not
    read, so not counted (the file's 3 were counted before)."""
    null = {**squad_rows[1], "label": None}
    path = _jsonl(tmp_path / "rows.jsonl", [squad_rows[0], null, squad_rows[2], null, null])
    code, out, err = run_cli(capsys, "judge-agreement", str(path), "--judges", "answer_relevance", "--json",
                             "--resamples", "0", "--limit", "1")
    assert code == 0 and json.loads(out)["examples"] == 1, err
    assert "1 row(s) labelled not applicable (null) left out" in err and json.loads(out)["rows_labelled_null"] == {
        str(path): 1}
    code, out, err = run_cli(capsys, "judge-agreement", str(path), "--judges", "answer_relevance", "--json",
                             "--resamples", "0", "--limit", "2")
    assert json.loads(out)["examples"] == 2 and "3 row(s) labelled not applicable (null) left out" in err


# --- files ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["judge-agreement", "calibrate-judge"])
def test_the_same_file_given_twice_is_refused(tmp_path, capsys, monkeypatch, command):
    rows = load_labelled(DATA / "evouna" / "TQ.jsonl.gz", limit=4)
    path = _jsonl(tmp_path / "labelled.jsonl", [
        {"id": e.group, "query": e.question, "generated_answer": e.answer, "reference_answer": list(e.references),
         "label": e.label} for e in rows])
    monkeypatch.chdir(tmp_path)
    judges = ["--judges", "f1"] if command == "judge-agreement" else []
    code, out, err = run_cli(capsys, command, str(path), str(path), *judges)
    assert_one_error(code, out + err, "given twice", "give each labelled file once")
    code, out, err = run_cli(capsys, command, "labelled.jsonl", "./labelled.jsonl", *judges)
    assert_one_error(code, out + err, "./labelled.jsonl: the file is given twice (also as labelled.jsonl)")


def test_missing_file_hint_fits_the_command(tmp_path, capsys):
    for judges in ("f1", "answer_relevance"):
        code, out, err = run_cli(capsys, "judge-agreement", str(tmp_path / "nope.jsonl"), "--judges", judges)
        assert_one_error(code, out + err, "nope.jsonl: file not found", "FILES")
        assert "--source" not in out + err


def test_csv_empty_or_null_label_is_not_applicable_for_reference_free_rows(tmp_path, squad_rows):
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "query", "context", "generated_answer", "label"])
        writer.writeheader()
        for row, label in zip(squad_rows, ["", "null", " NULL ", "true"]):
            writer.writerow({**row, "context": json.dumps(row["context"]), "label": label})
    rows = load_passage_rows(path)
    assert rows.not_applicable == 3 and [e.question for e in rows] == [squad_rows[3]["query"]]
    # a correctness file has no not-applicable label: an empty cell is an error that says every row needs one
    classic = tmp_path / "classic.csv"
    classic.write_text('query,generated_answer,reference_answer,label\n"Who wrote Hamlet?",Dickens,Shakespeare,\n')
    with pytest.raises(EvaluationsError) as err:
        load_labelled(classic)
    assert err.value.where == f"{classic}:2: field 'label'" and "every row of a correctness file" in err.value.fix


def test_judges_named_twice_run_once_and_a_misspelt_one_is_pointed_to():
    """``--judges f1,f1`` ran f1 twice (two identical rows in the table); ``--judges faithfulnes`` listed every judge
    without saying which one was meant."""
    from evaluations.cli.options import parse_judges

    assert parse_judges("f1, f1,faithfulness") == ["f1", "faithfulness"]
    with pytest.raises(EvaluationsError) as info:
        parse_judges("f1,faithfulnes,llama")
    assert "unknown judge(s) faithfulnes (did you mean faithfulness?), llama" in str(info.value)


@pytest.mark.parametrize("command", [["judge-agreement"], ["score"]])
def test_resamples_have_an_upper_bound(tmp_path, command):
    """--resamples 10000000 ran (1.5 GB of memory in a tester's run); now a usage error naming the range, exit 2."""
    from click.testing import CliRunner

    from evaluations.cli.root import cli

    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"query": "q", "generated_answer": "a", "reference_answer": "a", "label": True}) + "\n")
    result = CliRunner().invoke(cli, [*command, str(path), "--resamples", "10000000"])
    assert result.exit_code == 2 and "0<=x<=100000" in result.output, result.output
