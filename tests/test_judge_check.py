"""Controls (``evaluations judge-check``), the question loader and the hand-labelled weak-system answers.

Expected strings and counts are written by hand (from the data READMEs); the Wilson interval is checked against
scipy's binomtest.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_llm_server import Fault, FakeLLMServer
from scipy.stats import binomtest

from evaluations.cli.root import cli as main
from evaluations.judging.validation.agreement import JUDGES
from evaluations.judging.grounded.claims import sentences
from evaluations.judging.validation.controls import CATEGORIES, build_controls, heading, paraphrase, restate, run_controls
from evaluations.judging.labels.questions import QAItem, load_questions
from evaluations.judging.labels.weak_labels import load_weak_labels
from inprocess import run_evaluations

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def test_builders_give_the_expected_strings():
    assert restate("What initiative did InnovateGreen Co. launch to promote commuting?") == \
        "The initiative that InnovateGreen Co. launch to promote commuting."
    assert restate("who got the first nobel prize in physics") == "The person who got the first nobel prize in physics."
    assert heading("What did Clara Johnson proclaim about AI in startups?") == \
        "Johnson Proclaim AI Startups: An Overview"
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
        if r.n == 0:  # EVOUNA has no passages: no other passage's sentence to build that control from
            assert r.category == "off_topic_sentence", r.category
            continue
        hits = round(r.rate * r.n)
        ci = binomtest(hits, r.n).proportion_ci(confidence_level=0.95, method="wilson")
        assert r.ci == pytest.approx((ci.low, ci.high), abs=1e-9), r.category


def test_the_shared_wilson_interval_is_scipys_with_its_exact_ends():
    """``judging.validation.agreement.wilson`` (the reference-free summaries' and the controls' interval) equals scipy's Wilson
    interval for every k of n ≤ 60, and is exactly 0 below 0 / n and exactly 1 above n / n, as scipy's is (statsmodels
    alone gives 2.8e-17 and 0.9999999999999999 for some n, which a summary then printed)."""
    from evaluations.judging.validation.agreement import wilson

    for n in range(1, 61):
        for hits in range(n + 1):
            ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
            assert wilson(hits, n) == pytest.approx((ci.low, ci.high), abs=1e-12), (hits, n)
        assert wilson(0, n)[0] == 0.0 and wilson(n, n)[1] == 1.0


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


def test_a_category_the_files_give_no_control_of_is_not_checked_and_no_pass_and_the_json_is_strict():
    """CLAPNQ's questions offer no "A or B" options and its golds are sentences, so the options category has no
    control: it is not checked (pass null, rate null: strict JSON, no NaN; the reason given), which is no pass
    either: the command exits 1 and says which category and why instead of "every judge passes". A category whose
    controls the judge all left unjudged still fails."""
    clapnq = SHARED / "clapnq_dev" / "clapnq_dev_answerable.jsonl.gz"
    result = CliRunner().invoke(main, ["judge-check", str(clapnq), "--limit", "40", "--judges", "keyword", "--json"])

    def no_nan(value: str) -> None:
        raise AssertionError(f"{value} in the JSON")

    report = json.loads(result.output[result.output.index("{"):], parse_constant=no_nan)
    rows = {c["category"]: c for c in report["judges"]["keyword"]["categories"]}
    options = rows.pop("options")
    assert {k: v for k, v in options.items() if k != "not_checked"} == {
        "category": "options", "kind": "negative", "n": 0, "not_judged": 0, "failed": 0, "rate": None,
        "ci95": [None, None], "pass": None}
    assert 'no question offers options ("A or B?")' in options["not_checked"]
    assert all(r["n"] == 40 and r["not_checked"] is None for r in rows.values())  # 40 questions, one control each
    failing = sorted(c for c, r in rows.items() if r["rate"] < 0.95)
    assert report["judges"]["keyword"]["pass"] is (False if failing else None)
    assert result.exit_code == 1
    table = CliRunner().invoke(main, ["judge-check", str(clapnq), "--limit", "40", "--judges", "keyword"])
    lines = {line.split()[0]: line for line in table.output.splitlines() if line.strip()}
    assert "not checked" in lines["options"] and table.exit_code == 1
    assert "NOT CHECKED: keyword on options: no controls (no question offers options" in table.output
    assert "every judge passes" not in table.output
    assert sorted(c for c in rows if "✗" in lines[c]) == failing

    items = load_questions(clapnq, limit=10)
    failed = run_controls(build_controls(items), {"keyword": lambda examples, progress=None: [float("nan")] * len(
        examples)})  # a judge that judges nothing fails every category it was given
    given = {c.category for c in build_controls(items)}
    assert sorted(c for _, c in failed.failures()) == sorted(given) and "options" not in given
    assert [(j, c) for j, c, _ in failed.unchecked()] == [("keyword", "options")]


SQUAD = SHARED / "squad2_dev_cs224n" / "questions.jsonl.gz"


def _words(text: str) -> set[str]:
    return set(re.findall(r"[\w.]+", text))


def test_reference_free_controls_of_questions_sharing_a_passage_come_from_the_rest_of_the_file():
    """The first 3 answerable SQuAD 2.0 questions share one paragraph (Normans): among themselves there is no other
    passage, and their sentences hold no plain number (only "10th") and no name absent from it. Drawn from the
    whole file, as judge-check --limit 3 now draws, each gets another question's passage without its gold and a
    copied sentence with a fact swapped for one no word of the passage has; the same seed gives the same."""
    from evaluations.cli.judge_check import passage_questions
    from evaluations.judging.validation.controls import build_passage_controls

    items, pool = passage_questions((str(SQUAD),), 3)
    assert [i.references[0] for i in items] == ["France", "10th and 11th centuries", "Denmark, Iceland and Norway"]
    assert len({i.context for i in items}) == 1 and len(pool) == 6078
    for judge in ("faithfulness", "context_relevance"):  # the hole: within the 3, the negatives cannot be made
        assert {c.category for c in build_passage_controls(items, judge)} == {
            "faithfulness": {"copied_sentence"}, "context_relevance": {"own_passage"}}[judge]

    relevance = build_passage_controls(items, "context_relevance", pool=pool)
    others = [c.answer for c in relevance if c.category == "other_passage"]
    assert len(others) == 3
    for item, other in zip(items, others):
        assert other.question == item.question and other.label is False
        assert other.passages[0] != item.context and other.passages[0] in {p.context for p in pool}
        assert item.references[0].lower() not in other.passages[0].lower()
    faith = build_passage_controls(items, "faithfulness", pool=pool)
    swapped = [c.answer for c in faith if c.category == "swapped_fact"]
    assert len(swapped) == 3
    for item, control in zip(items, swapped):
        assert control.label is False and control.answer not in item.context
        assert _words(control.answer) - _words(item.context)  # a word the passage does not have
        assert any(len(_words(s) ^ _words(control.answer)) <= 4 for s in sentences(item.context))  # one swap
    again = build_passage_controls(items, "faithfulness", pool=pool)
    assert [c.answer.answer for c in again] == [c.answer.answer for c in faith]


def test_judge_check_exits_1_and_names_the_reference_free_categories_it_could_not_make(tmp_path):
    """A file whose every question has the same passage (the first 3 rows of SQuAD 2.0, about the Normans) gives
    no other passage and no fresh name to swap in: other_passage and swapped_fact are not checked, the command says
    so and why, and exits 1 (it said "every reference-free judge passes every category" and exited 0)."""
    with gzip.open(SQUAD, "rt", encoding="utf-8") as handle:
        rows = [json.loads(next(handle)) for _ in range(3)]
    assert len({r["context"] for r in rows}) == 1
    one = tmp_path / "one_passage.jsonl"
    one.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(main, ["judge-check", str(one), "--judges", "faithfulness,context_relevance",
                                       "--limit", "1"])
    assert result.exit_code == 1, result.output
    assert "NOT CHECKED: faithfulness on swapped_fact: no controls (no passage sentence has a number" in result.output
    assert "NOT CHECKED: context_relevance on other_passage: no controls (no passage of the files is another" \
        in result.output
    assert "passes every category" not in result.output
    r = CliRunner().invoke(main, ["judge-check", str(one), "--judges", "context_relevance", "--limit", "1", "--json"])
    report = json.loads(r.output[r.output.index("{"):])
    judge = report["reference_free"]["context_relevance"]["judges"]["context_relevance"]
    categories = {c["category"]: c for c in judge["categories"]}
    assert r.exit_code == 1 and judge["pass"] is not True
    assert categories["other_passage"]["n"] == 0 and categories["other_passage"]["pass"] is None
    assert categories["own_passage"]["n"] == 1


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_evaluations([*args], capture_output=True, text=True, cwd=ROOT)


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
    (the screen still rejects echoes, but the model then rejects the gold itself). 20 TriviaQA questions: two
    labelled answers each to fit on, and the controls of all 20 (every gold form among them) to fail."""
    rows = []
    for i, e in enumerate(load_questions(SHARED / "evouna" / "TQ.jsonl.gz", limit=20)):
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


# -- a served judge failing (scripted with tests/fake_llm_server.py) ---------------------------------------------
EIFFEL = "The Eiffel Tower is in Paris. It was completed in 1889."
ZANZIBAR = "The Zanzibar lighthouse was painted blue in 1902."
# two SQuAD 2.0 rows written by hand: each passage holds its own gold and not the other's, so each question gets
# one control of every reference-free category (own/other passage, copied sentence/swapped year)
SQUAD_ROWS = [
    {"id": "e1", "question": "When was the Eiffel Tower completed?", "context": EIFFEL,
     "answers": {"text": ["1889"], "answer_start": [47]}, "is_impossible": False},
    {"id": "z1", "question": "What colour is the Zanzibar lighthouse?", "context": ZANZIBAR,
     "answers": {"text": ["blue"], "answer_start": [35]}, "is_impossible": False},
]
# two classic labelled rows: the answer judges' controls of two questions
CLASSIC_ROWS = [
    {"id": "q1", "query": "What is the capital of France?", "generated_answer": "Paris", "reference_answer": "Paris",
     "label": True},
    {"id": "q2", "query": "Who wrote Hamlet?", "generated_answer": "Charles Dickens",
     "reference_answer": ["William Shakespeare", "Shakespeare"], "label": False},
]


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(capsys, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``evaluations ARGS`` in this process; 0 when it did not exit."""
    from test_judge_command_faults import _cli

    return _cli(capsys, *args)


def _served(tmp_path: Path, url: str) -> list[str]:
    config = tmp_path / "judge.yaml"
    config.write_text(f"providers:\n  openai:\n    base_url: {url}\nrequests:\n  retries: 0\n  timeout: 20\n"
                      f"judge:\n  retries: 0\ncache:\n  path: {tmp_path / 'calls.sqlite'}\n", encoding="utf-8")
    return ["--judge", "openai:judge", "--config", str(config), "--no-cache"]


def _categories(report: dict, judge: str) -> dict[str, dict]:
    judged = report["reference_free"][judge] if "reference_free" in report else report
    return {c["category"]: c for c in judged["judges"][judge]["categories"]}


SERVER_FAULTS = {
    "http 500": (lambda body: Fault("500"), "status_code: 500"),
    "maybe": (lambda body: "maybe", "neither yes nor no"),
}


@pytest.mark.parametrize("judge", ["context_relevance", "faithfulness"])
@pytest.mark.parametrize("fault", list(SERVER_FAULTS))
def test_judge_check_counts_the_controls_a_served_checker_fails_and_exits_3(tmp_path, capsys, judge, fault):
    """A reachable server failing every request (HTTP 500, or "maybe" for yes/no) crashed judge-check of the
    reference-free judges with a traceback (``CheckFailed``). Now each of the 4 controls (2 questions × 2 categories)
    is counted as FAILED, apart from the not judged, and said with the first error's file:line, the server's URL and
    the fix; the exit is 3, as judge-agreement's."""
    responder, said = SERVER_FAULTS[fault]
    rows = _write(tmp_path / "squad.jsonl", SQUAD_ROWS)
    with FakeLLMServer(models=("judge",), responder=responder) as server:
        served = _served(tmp_path, server.openai_url)
        code, out, err = _run(capsys, "judge-check", str(rows), "--judges", judge, "--json", *served)
        assert code == 3, err
        assert "Traceback" not in err and f"{judge}: 4 of 4 rows FAILED" in err, err
        assert said in err and f"{rows}:1" in err and server.openai_url in err and "exit 3: 4 row verdict(s)" in err
        report = json.loads(out)
        assert report["reference_free"][judge]["judges"][judge]["failed"] == 4
        assert [(c["n"], c["failed"], c["not_judged"]) for c in _categories(report, judge).values()] == [(0, 2, 0)] * 2

        code, out, err = _run(capsys, "judge-check", str(rows), "--judges", judge, *served)
    assert code == 3 and "Traceback" not in err, err
    assert sum("2 FAILED" in line for line in out.splitlines()) == 2, out  # each category's row in the table


def test_judge_check_counts_failed_controls_apart_from_the_judged_ones(tmp_path, capsys):
    """The server fails every request that names Zanzibar (its question or its passage) and says "yes" to the rest:
    of context relevance's 4 controls only the Eiffel question with its own passage is judged; the other 3 are
    counted as failed (own passage: 1, other passage: 2), none as not judged, and the exit is 3."""
    rows = _write(tmp_path / "squad.jsonl", SQUAD_ROWS)

    def responder(body: dict) -> object:
        return Fault("500") if "Zanzibar" in json.dumps(body) else "yes"

    with FakeLLMServer(models=("judge",), responder=responder) as server:
        code, out, err = _run(capsys, "judge-check", str(rows), "--judges", "context_relevance", "--json",
                              *_served(tmp_path, server.openai_url))
    assert code == 3 and "context_relevance: 3 of 4 rows FAILED" in err, err
    categories = _categories(json.loads(out), "context_relevance")
    assert {k: (c["n"], c["failed"], c["not_judged"]) for k, c in categories.items()} == {
        "own_passage": (1, 1, 0), "other_passage": (0, 2, 0)}


def test_judge_check_counts_the_controls_a_served_llm_judge_fails_and_exits_3(tmp_path, capsys):
    """The ``llm`` judge through a server answering HTTP 500 to every chat request: the controls the non-answer
    screen decides before the model (the question echoed back, the empty answer) keep their rate; every gold answer
    goes to the model and fails. judge-check said "none judged ✗" with no server, no count and exit 1; now each
    failed control is counted (one per chat request the server refused), said with the URL, and the exit is 3."""
    rows = _write(tmp_path / "classic.jsonl", CLASSIC_ROWS)
    with FakeLLMServer(models=("judge",), responder=lambda body: Fault("500")) as server:
        served = _served(tmp_path, server.openai_url)
        code, out, err = _run(capsys, "judge-check", str(rows), "--judges", "llm", "--json", *served)
        refused = len(server.calls("/v1/chat/completions"))
        url = server.openai_url
    assert code == 3 and "Traceback" not in err, err
    report = json.loads(out)
    categories = {c["category"]: c for c in report["judges"]["llm"]["categories"]}
    assert report["judges"]["llm"]["failed"] == refused > 0
    assert f"llm: {refused} of {report['controls']} rows FAILED" in err and url in err, err
    assert "; first: " in err and "status_code: 500" in err, err  # the first error, as the other judges say it
    for positive in ("gold_bare", "gold_sentence"):  # one per question, each asked of the model
        assert (categories[positive]["n"], categories[positive]["failed"], categories[positive]["not_judged"]) == \
            (0, 2, 0)
    for screened in ("echo", "empty"):
        assert (categories[screened]["n"], categories[screened]["failed"], categories[screened]["rate"]) == (2, 0, 1.0)


# -- the files: each question once, told apart by file and id; a question and its gold are enough ----------------
def _questions(capsys, *files: Path) -> tuple[int, dict, str]:
    """(exit code, JSON report, stderr) of judge-check --judges f1 on ``files``: no model is asked."""
    code, out, err = _run(capsys, "judge-check", *map(str, files), "--judges", "f1", "--json")
    return code, (json.loads(out) if out.strip() else {}), err


def _gold_bare(report: dict) -> int:
    return next(c["n"] for c in report["judges"]["f1"]["categories"] if c["category"] == "gold_bare")


@pytest.mark.parametrize("fmt", ["generic", "classic"])
def test_an_id_given_to_two_different_questions_is_one_error_naming_both_lines(tmp_path, capsys, fmt):
    """Two rows with id "1" and different questions were read as one question ("Controls from 1 questions"), one
    silently lost; now one error names both lines and the id."""
    rows = [{"id": "1", "query": "What is the capital of France?", "answers": ["Paris"]},
            {"id": "1", "query": "Who wrote Hamlet?", "answers": ["Shakespeare"]}]
    if fmt == "classic":  # labelled answers: one row per answer, so a repeated id is usual, a new question not
        rows = [{"id": r["id"], "query": r["query"], "reference_answer": r["answers"][0],
                 "generated_answer": r["answers"][0], "label": True} for r in rows]
    path = _write(tmp_path / "dup.jsonl", rows)
    code, _, err = _questions(capsys, path)
    assert code == 2 and "Traceback" not in err, err
    assert f"{path}:2: id '1' is given to two different questions" in err and f"{path}:1" in err, err
    assert "fix: give each question its own id" in err


def test_a_row_repeating_a_question_of_a_dataset_file_is_read_once_with_a_note(tmp_path, capsys):
    row = {"id": "1", "query": "What is the capital of France?", "answers": ["Paris"]}
    path = _write(tmp_path / "q.jsonl", [row, {"id": "2", "query": "Who wrote Hamlet?", "answers": ["Shakespeare"]},
                                         row])
    code, report, err = _questions(capsys, path)
    assert code in (0, 1) and report["questions"] == 2 and _gold_bare(report) == 2, err
    assert f"{path}: 1 row(s) repeat the id and question of an earlier row: read once" in err


@pytest.mark.parametrize("how", ["same path", "another path"])
def test_a_file_given_twice_is_one_error(tmp_path, capsys, monkeypatch, how):
    """judge-check classic.jsonl classic.jsonl counted each question twice (n doubled, the intervals narrowed on no
    new evidence); now it is refused, as judge-agreement and calibrate-judge refuse it, by the same or another
    path."""
    path = _write(tmp_path / "classic.jsonl", CLASSIC_ROWS)
    monkeypatch.chdir(tmp_path)
    again = path if how == "same path" else Path("classic.jsonl")
    code, report, err = _questions(capsys, path, again)
    assert code == 2 and report == {}, err
    also = "" if how == "same path" else f" (also as {path})"
    assert f"{again}: the file is given twice{also}: its questions would be counted twice" in " ".join(err.split())
    assert "Traceback" not in err


@pytest.mark.parametrize("fmt", ["generic", "classic"])
def test_two_files_numbering_their_questions_alike_keep_every_question(tmp_path, capsys, fmt):
    """Two files whose ids both start at 1 (same file name in two folders; classic rows carry no file in their id):
    their questions were merged by id, 4 questions counted as 2. Questions are told apart by file."""
    first = [{"id": "1", "query": "What is the capital of France?", "answers": ["Paris"]},
             {"id": "2", "query": "Who wrote Hamlet?", "answers": ["Shakespeare"]}]
    second = [{"id": "1", "query": "What is the largest planet?", "answers": ["Jupiter"]},
              {"id": "2", "query": "Who painted the Mona Lisa?", "answers": ["Leonardo da Vinci"]}]
    if fmt == "classic":
        first, second = ([{"id": r["id"], "query": r["query"], "reference_answer": r["answers"],
                           "generated_answer": r["answers"][0], "label": True} for r in rows]
                         for rows in (first, second))
    a, b = _write(tmp_path / "a" / "q.jsonl", first), _write(tmp_path / "b" / "q.jsonl", second)
    code, report, err = _questions(capsys, a, b)
    assert code in (0, 1) and report["questions"] == 4 and _gold_bare(report) == 4, err


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_file_of_questions_and_gold_answers_is_enough(tmp_path, capsys, suffix):
    """docs/answers-and-judges.md: judge-check builds its controls from a question and its gold; a file of
    ``query`` + ``reference_answer`` only failed with "missing field 'generated_answer'" (the controls are the
    answers: none is read). In CSV the gold alternatives are a JSON list."""
    path = tmp_path / f"gold.{suffix}"
    if suffix == "jsonl":
        _write(path, [{"query": "What is the capital of France?", "reference_answer": "Paris"},
                      {"query": "Who wrote Hamlet?", "reference_answer": ["William Shakespeare", "Shakespeare"]}])
    else:
        path.write_text('query,reference_answer\nWhat is the capital of France?,Paris\n'
                        'Who wrote Hamlet?,"[""William Shakespeare"", ""Shakespeare""]"\n', encoding="utf-8")
    code, report, err = _questions(capsys, path)
    assert code in (0, 1) and "missing field" not in err, err
    assert report["questions"] == 2 and _gold_bare(report) == 2


def test_a_gold_answer_of_the_wrong_type_is_one_error_naming_the_line(tmp_path, capsys):
    path = _write(tmp_path / "gold.jsonl", [{"query": "What is the capital of France?", "reference_answer": "Paris"},
                                            {"query": "How many moons has Mars?", "reference_answer": 2}])
    code, _, err = _questions(capsys, path)
    assert code == 2 and "Traceback" not in err and f"{path}:2: field 'reference_answer'" in err, err
    assert "fix: " in err
