"""Controls (``evaluations judge-check``), the question loader and the hand-labelled weak-system answers.

Expected strings and counts are written by hand (from the data READMEs); the Wilson interval is checked against
scipy's binomtest.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from scipy.stats import binomtest

from evaluations.cli.root import cli as main
from evaluations.judging.agreement import JUDGES
from evaluations.judging.controls import CATEGORIES, build_controls, heading, paraphrase, restate, run_controls
from evaluations.judging.questions import QAItem, load_questions
from evaluations.judging.weak_labels import load_weak_labels

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def test_builders_give_the_expected_strings():
    assert restate("What initiative did InnovateGreen Co. launch to promote commuting?") == \
        "The initiative that InnovateGreen Co. launch to promote commuting."
    assert restate("who got the first nobel prize in physics") == "The person who got the first nobel prize in physics."
    assert heading("What did Clara Johnson proclaim about AI in startups?") == "Johnson Proclaim AI Startups: An Overview"
    item = QAItem("On which date did the festival open?", ("October 10, 2023",), "", True, "g")
    assert paraphrase(item) == "10 October 2023"
    assert paraphrase(QAItem("How many?", ("1,000",), "", True, "g")) == "1000"
    assert paraphrase(QAItem("How many moons?", ("2",), "", True, "g")) == "two"
    assert paraphrase(QAItem("Who?", ("Bram Stoker", "Abraham Stoker"), "", True, "g")) == "Abraham Stoker"


def test_controls_cover_every_category_and_skip_unanswerable_questions():
    items = [
        QAItem("Is the capital of Australia Sydney or Canberra?", ("Canberra",), "", True, "a"),
        QAItem("Who wrote Dracula?", ("Bram Stoker",), "Dracula is an 1897 novel. It was written by Bram Stoker.",
               True, "b"),
        QAItem("What colour was the car?", (), "", False, "c"),
    ]
    controls = build_controls(items)
    by = {(c.answer.group, c.category): c.answer for c in controls}
    assert {g for g, _ in by} == {"a", "b"}
    assert by[("a", "options")].answer == "Sydney or Canberra"
    assert by[("b", "gold_detail")].answer == "Bram Stoker. It was written by Bram Stoker."
    assert by[("b", "other_gold")].answer == "Canberra"
    assert all(c.answer.label is (CATEGORIES[c.category][0] == "positive") for c in controls)


@pytest.mark.parametrize(("file", "n", "answerable"), [
    ("squad2_dev_cs224n/questions.jsonl.gz", 6078, 2910),
    ("techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz", 480, 384),
    ("clapnq_dev/clapnq_dev_unanswerable.jsonl.gz", 300, 0),
    ("repliqa_samples/repliqa_sample20.jsonl.gz", 20, 18),
    ("wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz", 160, 160),
])
def test_load_questions_reads_each_dataset_format(file, n, answerable):
    items = load_questions(SHARED / file)
    assert len(items) == n and sum(i.answerable for i in items) == answerable
    assert all(i.references for i in items if i.answerable)


def test_wilson_interval_matches_scipy():
    items = load_questions(SHARED / "evouna" / "TQ.jsonl.gz", limit=25)
    report = run_controls(build_controls(items), {"keyword": JUDGES["keyword"](0.7)})
    for r in report.judges["keyword"]:
        hits = round(r.rate * r.n)
        ci = binomtest(hits, r.n).proportion_ci(confidence_level=0.95, method="wilson")
        assert r.ci == pytest.approx((ci.low, ci.high), abs=1e-9), r.category


def test_judge_check_cli_and_the_shipped_offline_judge_passes():
    files = [str(SHARED / "evouna" / "NQ.jsonl.gz"), str(SHARED / "squad2_dev_cs224n" / "questions.jsonl.gz")]
    result = CliRunner().invoke(main, ["judge-check", *files, "--limit", "30", "--judges", "keyword,offline",
                                       "--json"])
    report = json.loads(result.output[result.output.index("{"):])
    judges = report["judges"]
    assert set(judges) == {"keyword", "offline"}
    assert {c["category"] for c in judges["offline"]["categories"]} == set(CATEGORIES)
    # the classic keyword rule accepts "A or B" hedges; the offline judge (behind the screen) passes everything
    assert not judges["keyword"]["pass"] and result.exit_code == 1
    assert judges["offline"]["pass"], judges["offline"]
    assert judges["offline"]["min_rejection"] >= 0.95 and judges["offline"]["min_acceptance"] >= 0.95


def test_a_category_the_files_give_no_control_of_is_not_a_failure_and_the_json_is_strict():
    """CLAPNQ's questions offer no "A or B" options, so the options category has no control: it is reported as
    such (pass null, rate null: strict JSON, no NaN) and does not fail the check; a category whose controls the
    judge all left unjudged still fails."""
    clapnq = SHARED / "clapnq_dev" / "clapnq_dev_answerable.jsonl.gz"
    result = CliRunner().invoke(main, ["judge-check", str(clapnq), "--limit", "40", "--judges", "keyword", "--json"])

    def no_nan(value: str) -> None:
        raise AssertionError(f"{value} in the JSON")

    report = json.loads(result.output[result.output.index("{"):], parse_constant=no_nan)
    rows = {c["category"]: c for c in report["judges"]["keyword"]["categories"]}
    assert rows["options"] == {"category": "options", "kind": "negative", "n": 0, "not_judged": 0, "rate": None,
                               "ci95": [None, None], "pass": None}
    failing = sorted(c for c, r in rows.items() if r["n"] and r["rate"] < 0.95)
    assert report["judges"]["keyword"]["pass"] is (not failing)
    assert result.exit_code == (1 if failing else 0)
    table = CliRunner().invoke(main, ["judge-check", str(clapnq), "--limit", "40", "--judges", "keyword"])
    lines = {line.split()[0]: line for line in table.output.splitlines() if line.strip()}
    assert "no controls" in lines["options"]
    assert sorted(c for c in rows if "✗" in lines[c]) == failing

    items = load_questions(clapnq, limit=10)
    failed = run_controls(build_controls(items), {"keyword": lambda examples, progress=None: [float("nan")] * len(
        examples)})  # a judge that judges nothing fails every category it was given
    given = {c.category for c in build_controls(items)}
    assert sorted(c for _, c in failed.failures()) == sorted(given) and "options" not in given


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evaluations", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("args", [
    ["judge-check", "no-such-file.jsonl"],
    ["judge-check", str(SHARED / "evouna" / "NQ.jsonl.gz"), "--judges", "oracle"],
])
def test_judge_check_bad_input_exits_2_with_one_error(args):
    proc = _cli(*args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "error" in proc.stderr.lower()


def test_judge_check_malformed_row(tmp_path):
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"id": "1", "question": "Who?", "answers": {"text": ["X"]}}\n'
                   '{"id": "2", "question": "Why?", "answers": 3}\n')
    proc = _cli("judge-check", str(bad), "--judges", "keyword")
    assert proc.returncode == 2 and f"{bad}:2" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(("field", "value", "named"), [
    ("context", ["a passage given as a list"], "field 'context' must be a text, got list"),
    ("answers", {"text": "France"}, "field 'answers.text' must be a list of texts, got 'France'"),
    ("is_impossible", "false", "field 'is_impossible' must be true or false, got 'false'"),
    ("question", None, "empty or non-text question (got None)"),
])
def test_judge_check_a_squad_row_of_the_wrong_type_is_named(tmp_path, field, value, named):
    """Real SQuAD 2.0 rows, the second with one value of the wrong type. A passage that is not text crashed the
    reference-free controls (traceback); gold answers given as one string were read letter by letter ("F", "r",
    ...) and the string "false" made an answerable question unanswerable, both silently. Each is one error naming
    file:line and the field, before any judge runs."""
    with gzip.open(SHARED / "squad2_dev_cs224n" / "questions.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(next(handle)) for _ in range(2)]
    bad = tmp_path / "q.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[1], field: value}) + "\n")
    proc = _cli("judge-check", str(bad), "--judges", "faithfulness,context_relevance", "--limit", "2")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{bad}:2: " in proc.stderr and named in proc.stderr and "fix: " in proc.stderr, proc.stderr


def test_calibrate_judge_refuses_parameters_that_fail_the_controls(tmp_path):
    """Labels that call the question echoed back correct and the gold wrong make a judge that fails the controls
    (the screen still rejects echoes, but the model then rejects the gold itself)."""
    rows = []
    for i, e in enumerate(load_questions(SHARED / "evouna" / "TQ.jsonl.gz", limit=40)):
        rows.append({"query": e.question, "generated_answer": e.references[0], "reference_answer": list(e.references),
                     "label": False, "id": f"q{i}"})
        rows.append({"query": e.question, "generated_answer": e.question + " is a question about history",
                     "reference_answer": list(e.references), "label": True, "id": f"q{i}"})
    data = tmp_path / "upside_down.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "offline_judge.json"
    refused = CliRunner().invoke(main, ["calibrate-judge", str(data), "--out", str(out)])
    assert refused.exit_code == 1 and not out.exists() and "--force" in refused.output
    forced = CliRunner().invoke(main, ["calibrate-judge", str(data), "--out", str(out), "--force"])
    assert forced.exit_code == 0 and out.exists() and "WARNING: writing parameters that FAIL" in forced.output
    assert json.loads(out.read_text())["controls"]["pass"] is False


def test_weak_labels_resolve_against_the_shared_data():
    rows = load_weak_labels(ROOT / "datasets" / "labels" / "main_job_answers.jsonl", SHARED)
    assert len(rows) == 18 and sum(r.label for r in rows) == 3  # read by hand: 3 of SmolLM2's 18 answers
    assert all(r.references and r.system == "smollm2-135m" for r in rows)
