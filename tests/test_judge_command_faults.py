"""Faults and bad input of ``judge-agreement`` / ``calibrate-judge`` on the reference-free judges' labelled rows.

A served judge that is reachable but fails its requests (HTTP 500, a reply that is not JSON, "maybe", an empty
reply) is scripted with the fake server (tests/fake_llm_server.py): its rows are counted as failed, the agreement
is that of the rows judged, and the command exits 3 as a run with failed cases does; calibrate-judge writes
nothing. Bad rows, configs and ``--judge`` names are one error (exit 2) before any model is loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_llm_server import Fault, FakeLLMServer

from evaluations.cli.root import main
from evaluations.core.errors import EvaluationsError
from evaluations.datasets.rows import iter_rows

PASSAGE = "The Eiffel Tower is in Paris. It was completed in 1889."
OTHER = "The Zanzibar lighthouse was painted blue in 1902."
ROWS = [
    {"query": "When was the Eiffel Tower completed?", "context": [PASSAGE],
     "generated_answer": "It was completed in 1889.", "label": True},
    {"query": "What colour is the Zanzibar lighthouse?", "context": [OTHER],
     "generated_answer": "It is red.", "label": False},
]


def _rows(tmp_path: Path, rows: list[dict], name: str = "rows.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``evaluations ARGS`` in this process; 0 when it did not exit."""
    code = 0
    try:
        main(list(args))
    except SystemExit as exited:
        code = exited.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _served_config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "judge.yaml"
    config.write_text(f"providers:\n  openai:\n    base_url: {url}\nrequests:\n  retries: 0\n  timeout: 20\n"
                      f"judge:\n  retries: 0\ncache:\n  path: {tmp_path / 'calls.sqlite'}\n", encoding="utf-8")
    return config


def _one_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and err.count("error: ") == 1 and "fix:" in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"


# -- a served judge failing mid-way ------------------------------------------------------------------------
FAULTY = {
    "http 500": (lambda body: Fault("500"), "status_code: 500"),
    "not json": (lambda body: Fault("malformed"), "Failed to decode response as JSON"),
    "maybe": (lambda body: "maybe", "neither yes nor no"),
    "empty reply": (lambda body: "", "no output mode of the served checker"),
}


@pytest.mark.parametrize("fault", list(FAULTY))
def test_a_served_judge_failing_every_request_is_counted_and_exits_3(tmp_path, capsys, fault):
    responder, said = FAULTY[fault]
    rows = _rows(tmp_path, ROWS)
    with FakeLLMServer(models=("judge",), responder=responder) as server:
        config = _served_config(tmp_path, server.openai_url)
        served = ["--judge", "openai:judge", "--config", str(config), "--no-cache"]
        code, out, err = _cli(capsys, "judge-agreement", str(rows), "--judges", "faithfulness,context_relevance",
                              "--json", "--resamples", "0", *served)
        assert code == 3, err
        assert "Traceback" not in err
        judged = {j["judge"]: j for j in json.loads(out)["judges"]}
        for judge in ("faithfulness", "context_relevance"):
            assert (judged[judge]["n"], judged[judge]["failed"], judged[judge]["not_applicable"]) == (0, 2, 0)
            assert f"{judge}: 2 of 2 rows FAILED" in err
        assert said in err and server.openai_url in err and f"{rows}:1" in err
        assert "exit 3: 4 row verdict(s) failed" in err

        written = tmp_path / "faithfulness.json"
        code, out, err = _cli(capsys, "calibrate-judge", str(rows), "--judges", "faithfulness", "--out",
                              str(written), *served)
        assert code == 3 and "Traceback" not in err, err
        assert "faithfulness: 2 of 2 rows FAILED" in err and "nothing written" in err and said in err
        assert not written.exists()


def test_rows_the_server_fails_are_counted_beside_the_agreement_of_the_rows_it_judged(tmp_path, capsys):
    """The server answers "yes" about the Eiffel Tower passage and fails every question about the other: one row
    judged, one failed, never dropped; the table says both, and the exit is 3."""

    def responder(body: dict) -> object:
        return Fault("500") if "Zanzibar" in json.dumps(body) else "yes"

    rows = _rows(tmp_path, ROWS)
    with FakeLLMServer(models=("judge",), responder=responder) as server:
        config = _served_config(tmp_path, server.openai_url)
        code, out, err = _cli(capsys, "judge-agreement", str(rows), "--judges", "context_relevance",
                              "--resamples", "0", "--judge", "openai:judge", "--config", str(config), "--no-cache")
    assert code == 3 and "Traceback" not in err, err
    line = next(x for x in out.splitlines() if x.strip().startswith("context_relevance"))
    assert line.split()[-1] == "1"  # judged: the Eiffel Tower row
    assert "context_relevance: 1 of 2 rows FAILED" in err and f"{rows}:2" in err
    assert "not judged" not in out  # a failed row is not "not applicable"


# -- bad rows --------------------------------------------------------------------------------------------------
BAD_ROWS = {
    "reference_answer int": ({"reference_answer": 5}, "'reference_answer'", "a number (5)"),
    "reference_answer dict": ({"reference_answer": {"x": 1}}, "'reference_answer'", "an object"),
    "reference_answer list of ints": ({"reference_answer": [1, 2]}, "'reference_answer'", "a list ([1, 2])"),
    "empty query": ({"query": ""}, "'query'", "an empty string"),
    "blank query": ({"query": "  "}, "'query'", "an empty string"),
    "answer 0": ({"generated_answer": 0}, "'generated_answer'", 'write it as text: "0"'),
    "answer 1889": ({"generated_answer": 1889}, "'generated_answer'", 'write it as text: "1889"'),
    "answer true": ({"generated_answer": True}, "'generated_answer'", "a boolean (true)"),
}


@pytest.mark.parametrize("case", list(BAD_ROWS))
@pytest.mark.parametrize("command", ["judge-agreement", "calibrate-judge"])
def test_a_bad_field_is_one_error_naming_file_line_and_key(tmp_path, capsys, case, command):
    change, key, got = BAD_ROWS[case]
    rows = _rows(tmp_path, [ROWS[0], {**ROWS[1], **change}])
    out = tmp_path / "out.json"
    code, _, err = _cli(capsys, command, str(rows), "--judges", "faithfulness",
                        *(["--out", str(out)] if command == "calibrate-judge" else []))
    _one_error(code, err, f"{rows}:2", key, got)
    assert not out.exists()


def test_reference_answers_as_text_or_texts_are_read(tmp_path):
    from evaluations.judging.labels.passage_rows import load_passage_rows

    rows = _rows(tmp_path, [{**ROWS[0], "reference_answer": "1889"},
                            {**ROWS[1], "reference_answer": ["blue", "", "light blue"]},
                            {**ROWS[1], "reference_answer": None, "generated_answer": None}])
    loaded = load_passage_rows(rows)
    assert [r.references for r in loaded] == [("1889",), ("blue", "light blue"), ()]
    assert [r.answer for r in loaded] == ["It was completed in 1889.", "It is red.", ""]


# -- a .json file that is one object ---------------------------------------------------------------------------
def test_a_json_object_is_rows_only_when_one_member_is_the_array_of_rows(tmp_path, capsys):
    one = tmp_path / "one.json"
    one.write_text(json.dumps(ROWS[0]), encoding="utf-8")
    code, _, err = _cli(capsys, "judge-agreement", str(one), "--judges", "faithfulness")
    _one_error(code, err, str(one), "one JSON object, not an array of rows")
    assert "got a string" not in err

    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"meta": {"v": 1}, "notes": [], "rows": ROWS}), encoding="utf-8")
    assert [row for _, row in iter_rows(wrapped)] == ROWS

    two = tmp_path / "two.json"
    two.write_text(json.dumps({"train": ROWS, "test": ROWS}), encoding="utf-8")
    with pytest.raises(EvaluationsError) as ambiguous:
        list(iter_rows(two))
    assert "several arrays of objects (train, test)" in str(ambiguous.value) and ambiguous.value.where == str(two)


# -- the config and --judge on the embedded paths ----------------------------------------------------------------
BAD_CONFIGS = {
    "bad yaml": ("judge: [unclosed\n", "not valid YAML"),
    "unknown key": ("judge:\n  reference_fre: auto\n", "unknown key 'judge.reference_fre'"),
    "negative timeout": ("requests:\n  timeout: -5\n", "requests.timeout"),
}
COMMANDS = {
    "agreement faithfulness": ["judge-agreement", "--judges", "faithfulness"],
    "agreement context_relevance": ["judge-agreement", "--judges", "context_relevance"],
    "calibrate faithfulness": ["calibrate-judge", "--judges", "faithfulness"],
    "calibrate offline": ["calibrate-judge"],
}


@pytest.mark.parametrize("bad", list(BAD_CONFIGS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_config_is_validated_with_the_default_embedded_judge(tmp_path, capsys, bad, command):
    text, said = BAD_CONFIGS[bad]
    config = tmp_path / "bad.yaml"
    config.write_text(text, encoding="utf-8")
    name, *args = COMMANDS[command]
    code, _, err = _cli(capsys, name, str(_rows(tmp_path, ROWS)), *args, "--config", str(config))
    _one_error(code, err, str(config), said)


@pytest.mark.parametrize("command", ["agreement faithfulness", "agreement context_relevance",
                                     "calibrate faithfulness"])
def test_the_embedded_judge_reads_its_model_under_the_configs_data_dir(tmp_path, capsys, command):
    """``storage.data_dir`` is where the embedded judge's model is assembled: a data_dir that is a file is the
    error about that folder (the judge did not fall back to the default data folder)."""
    not_a_folder = tmp_path / "data"
    not_a_folder.write_text("", encoding="utf-8")
    config = tmp_path / "haiku.rag.yaml"
    config.write_text(f"storage:\n  data_dir: {not_a_folder}\n", encoding="utf-8")
    name, *args = COMMANDS[command]
    code, _, err = _cli(capsys, name, str(_rows(tmp_path, ROWS)), *args, "--config", str(config))
    _one_error(code, err, str(not_a_folder / "models"), "storage.data_dir")


@pytest.mark.parametrize("command", [*COMMANDS, "agreement keyword", "agreement llm"])
def test_an_unknown_embedded_judge_is_rejected_on_every_path(tmp_path, capsys, command):
    name, *args = {**COMMANDS, "agreement keyword": ["judge-agreement", "--judges", "keyword"],
                   "agreement llm": ["judge-agreement", "--judges", "llm"]}[command]
    code, _, err = _cli(capsys, name, str(_rows(tmp_path, ROWS)), *args, "--judge", "embedded:nonexistent")
    _one_error(code, err, "--judge", "unknown embedded model 'nonexistent'", "qwen2.5-coder-1.5b")


def test_judge_agreement_names_the_served_llm_judges_first_error(tmp_path, capsys):
    """The ``llm`` judge through a server answering HTTP 500: its rows were counted FAILED without the error (the
    reference-free judges' line gives the first one); now the same."""
    rows = _rows(tmp_path, [{"id": "q1", "query": "Who wrote Hamlet?", "generated_answer": "Shakespeare wrote it.",
                             "reference_answer": "William Shakespeare", "label": True},
                            {"id": "q2", "query": "What is the capital of France?", "generated_answer": "Lyon",
                             "reference_answer": "Paris", "label": False}])
    with FakeLLMServer(models=("judge",), responder=lambda body: Fault("500")) as server:
        config = _served_config(tmp_path, server.openai_url)
        code, out, err = _cli(capsys, "judge-agreement", str(rows), "--judges", "llm", "--json", "--resamples", "0",
                              "--judge", "openai:judge", "--config", str(config), "--no-cache")
    assert code == 3 and "Traceback" not in err, err
    assert "llm: 2 of 2 rows FAILED" in err and "; first: " in err and "status_code: 500" in err, err


@pytest.mark.parametrize("fault", ["http 500", "maybe"])
def test_a_served_judge_failing_on_a_scored_log_is_counted_and_exits_3(tmp_path, capsys, monkeypatch, fault):
    """``score --format log`` as ``run``: a query the served checker fails on is counted as failed by that judge (its
    error kept in the query's record), the summary and --out are written, and the command exits 3."""
    responder, said = FAULTY[fault]
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "faithfulness,context_relevance")
    log = _rows(tmp_path, [{"query_id": f"q{i}", "query": r["query"], "answer": r["generated_answer"],
                            "retrieved": [{"id": f"p{i}", "text": r["context"][0]}]} for i, r in enumerate(ROWS)],
                "log.jsonl")
    with FakeLLMServer(models=("judge",), responder=responder) as server:
        config = tmp_path / "judge.yaml"
        config.write_text(f"providers:\n  openai:\n    base_url: {server.openai_url}\nrequests:\n  retries: 0\n"
                          "  timeout: 20\njudge:\n  retries: 0\n  model:\n    provider: openai\n    name: judge\n"
                          f"cache:\n  enabled: false\n  path: {tmp_path / 'calls.sqlite'}\n", encoding="utf-8")
        out = tmp_path / "out"
        code, stdout, err = _cli(capsys, "score", str(log), "--format", "log", "--config", str(config), "--json",
                                 "--out", str(out))
    assert code == 3, err
    assert "Traceback" not in err and said in err and "failed on 2 of 2 queries" in err
    metrics = json.loads(stdout)["reference_free"]["metrics"]
    for judge in ("faithfulness", "context_relevance"):
        assert {k: metrics[judge][k] for k in ("n", "failed", "not_applicable")} == {
            "n": 0, "failed": 2, "not_applicable": 0}
        assert metrics[judge]["kinds"] == {"judge failed": 2}
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert [sorted(e["evaluator"] for e in r["judge_errors"]) for r in records] == \
        [["context_relevance", "faithfulness"]] * 2


@pytest.mark.parametrize("command", ["judge-agreement", "judge-check", "calibrate-judge"])
def test_without_judge_the_configs_judge_model_is_the_checker_and_is_checked(tmp_path, capsys, command):
    """No --judge: the judge a run would use (the config's judge.model) is the one validated or fitted, and checked
    as a run checks it; it was replaced by the embedded judge without a word."""
    from fake_llm_server import closed_port_url

    from conftest import DATA

    # judge-check reads question files (it builds its own controls), the others labelled rows
    rows = DATA / "clapnq_dev" / "clapnq_dev_answerable.jsonl.gz" if command == "judge-check" else _rows(tmp_path, ROWS)
    judges = ["--judges", "faithfulness"] + (["--out", str(tmp_path / "p.json")] if command == "calibrate-judge"
                                             else ["--limit", "3"] if command == "judge-check" else [])
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("judge:\n  model: {provider: embedded, name: nosuch}\n", encoding="utf-8")
    code, _, err = _cli(capsys, command, str(rows), *judges, "--config", str(unknown))
    _one_error(code, err, "judge.model.name", "nosuch")

    url = closed_port_url() + "/v1"
    down = tmp_path / "down.yaml"
    down.write_text(f"providers:\n  openai:\n    base_url: {url}\njudge:\n  model: {{provider: openai, name: judge}}\n",
                    encoding="utf-8")
    code, _, err = _cli(capsys, command, str(rows), *judges, "--config", str(down))
    _one_error(code, err, url)
    assert not (tmp_path / "p.json").exists()


def test_one_id_given_to_two_questions_is_one_error_naming_both_rows(tmp_path, capsys):
    """Answers of one question share its id (the resampling group); two questions under one id were merged into
    one group without a word (judge-check already refused it)."""
    rows = _rows(tmp_path, [{**row, "id": "q1"} for row in ROWS])
    code, _, err = _cli(capsys, "judge-agreement", str(rows), "--judges", "faithfulness")
    _one_error(code, err, f"{rows}:2", f"{rows}:1", "'q1' is given to two different questions")
    same = _rows(tmp_path, [{**ROWS[0], "id": "q1"}, {**ROWS[0], "id": "q1", "generated_answer": "In 1889."}],
                 "same.jsonl")  # two answers to one question: one group, as intended
    from evaluations.cli.judge_common import load_answers

    assert [e.group for e in load_answers((str(same),), None, passages=True, judges=["faithfulness"])] == ["q1", "q1"]


def test_a_null_labelled_row_is_still_checked_and_a_blank_passage_is_no_passage(tmp_path, capsys):
    """A row labelled not applicable (null) is left out, but its context is read like any row's: a number there is
    an error, as it is in a labelled row. A blank passage holds nothing to judge (as a logged span without text):
    it is dropped, so a row whose only passage is blank has no passage (not applicable to the context judges)."""
    rows = _rows(tmp_path, [ROWS[0], {**ROWS[1], "label": None, "context": [1, 2]}])
    code, _, err = _cli(capsys, "judge-agreement", str(rows), "--judges", "faithfulness")
    _one_error(code, err, f"{rows}:2", "its item 1 is a number")
    from evaluations.cli.judge_common import load_answers

    blank = _rows(tmp_path, [{**ROWS[0], "context": ["", PASSAGE, "  "]}, {**ROWS[1], "context": [""]}], "blank.jsonl")
    assert [e.passages for e in load_answers((str(blank),), None, passages=True, judges=["context_relevance"])] == \
        [(PASSAGE,), ()]


def test_a_calibrate_out_path_that_cannot_be_written_is_refused_before_any_judging(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    rows = _rows(tmp_path, ROWS)
    code, stdout, err = _cli(capsys, "calibrate-judge", str(rows), "--judges", "faithfulness", "--out",
                             str(blocker / "p.json"))
    _one_error(code, err, "is a file, not a folder", str(blocker / "p.json"))
    assert stdout == ""  # refused before any table or judging (it was refused after all of it)
    assert blocker.read_text() == "x"


def test_a_judge_named_by_both_its_names_runs_once():
    from evaluations.cli.options import parse_judges

    assert parse_judges("faithfulness,groundedness,answer_relevance") == ["faithfulness", "answer_relevance"]
    assert parse_judges("groundedness,faithfulness") == ["groundedness"]
