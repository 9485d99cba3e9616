"""`evaluations score` on input that is wrong or unusual: classic answers that are not text, TREC qrels and runs
that cannot be scored as written, and production logs whose fields are written another way (OpenAI's usage names,
integer query ids, an empty error, passage texts as context). Real SQuAD 2.0 questions and SciFact qrels; every
expected figure is computed here from the rows written."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from conftest import DATA, SCIFACT, assert_one_error


@pytest.fixture(scope="module")
def squad() -> list[dict]:
    """The answerable SQuAD 2.0 dev questions, in file order."""
    with gzip.open(DATA / "squad2_dev_cs224n" / "questions.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [row for line in handle if not (row := json.loads(line))["is_impossible"]]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _golden(tmp_path: Path, questions: list[dict], ids: list | None = None) -> Path:
    """A dataset file of ``questions``: the paragraph as the relevant document, SQuAD's answers as gold."""
    return _jsonl(tmp_path / "golden.jsonl", [
        {"id": qid, "query": q["question"], "relevant_doc_ids": [q["paragraph_id"]], "answers": q["answers"]["text"]}
        for qid, q in zip(ids or [q["id"] for q in questions], questions)])


def _scored(cli, *args: str) -> tuple[dict, str]:
    """The --json summary of ``score ARGS`` (exit 0) and its stderr."""
    code, out, err = cli(["score", *args, "--json"])
    assert code == 0, err
    return json.loads(out), err


def _scored_log(cli, *args: str) -> tuple[dict, str]:
    return _scored(cli, *args, "--no-reference-free")  # no judge model: these tests are about the log's figures


# -- classic --------------------------------------------------------------------------------------------------------

def test_a_classic_answer_that_is_not_text_is_one_error_naming_the_line(tmp_path, cli, squad):
    """SQuAD's "When was the Duchy of Normandy founded?" (911) answered with the number 911, true, or ["911"]: one
    error naming file:line and the field (it was an AttributeError traceback, exit 1); null is no answer, scored."""
    question = next(q for q in squad if q["answers"]["text"][0] == "911")
    row = {"query": question["question"], "context": question["context"], "reference_answer": "911"}
    errors = {}
    for kind, value in (("int", 911), ("bool", True), ("list", ["911"]), ("float", 911.5)):
        path = _jsonl(tmp_path / f"{kind}.jsonl", [{**row, "generated_answer": "911"},
                                                   {**row, "generated_answer": value}])
        code, out, errors[kind] = cli(["score", str(path)])
        assert_one_error(code, out + errors[kind], f"{path}:2", "field 'generated_answer' must be a string",
                         f"got {kind}")
    assert '(e.g. "911")' in errors["int"] and '(e.g. "911.5")' in errors["float"]  # a number: the fix as text
    assert "e.g." not in errors["list"] + errors["bool"]
    summary, _ = _scored(cli, str(_jsonl(tmp_path / "good.jsonl", [{**row, "generated_answer": "911"}])))
    assert summary["correctness"]["correct"] == 1
    unanswered, _ = _scored(cli, str(_jsonl(tmp_path / "null.jsonl", [{**row, "generated_answer": None}])))
    assert unanswered["correctness"]["correct"] == 0 and unanswered["rows"] == 1


# -- TREC -----------------------------------------------------------------------------------------------------------

def _scifact_qrels() -> list[tuple[str, str, int]]:
    """(query, document, grade) of SciFact's test qrels (BEIR TSV with a header)."""
    lines = (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:]
    return [(q, d, int(g)) for q, d, g in (line.split("\t") for line in lines)]


def test_a_qrels_pair_graded_twice_differently_is_an_error_and_the_same_grade_is_accepted(tmp_path, cli):
    rows = _scifact_qrels()[:20]
    qid, doc, grade = rows[5]
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q} Q0 {d} 1 1.0 x\n" for q, d, _ in rows))
    clean = tmp_path / "clean.qrels"
    clean.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows))
    regraded = tmp_path / "regraded.qrels"
    regraded.write_text(clean.read_text() + f"{qid} 0 {doc} {1 - grade}\n")  # line 21 grades line 6's pair again
    code, out, err = cli(["score", str(run), "--qrels", str(regraded)])
    assert_one_error(code, out + err, f"{regraded}:21", repr(doc), repr(qid), f"graded {1 - grade} here and {grade} "
                     "at line 6")
    repeated = tmp_path / "repeated.qrels"
    repeated.write_text(clean.read_text() + f"{qid} 0 {doc} {grade}\n")
    with_repeat, _ = _scored(cli, str(run), "--qrels", str(repeated))
    assert with_repeat["metrics"] == _scored(cli, str(run), "--qrels", str(clean))[0]["metrics"]
    assert with_repeat["metrics"]["p@1"] == 1.0  # each query's one retrieved document is relevant


def test_a_run_with_no_relevant_document_for_any_query_is_warned_about(tmp_path, cli):
    """SciFact qrels graded 0 (or a run of other query ids): the metrics are empty or 0 and a warning says why
    (it was exit 0, an empty table and no word)."""
    rows = _scifact_qrels()[:10]
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q} Q0 {d} 1 1.0 x\n" for q, d, _ in rows))
    unjudged = tmp_path / "unjudged.qrels"
    unjudged.write_text("".join(f"{q} 0 {d} 0\n" for q, d, _ in rows))
    queries = len({q for q, _, _ in rows})
    summary, err = _scored(cli, str(run), "--qrels", str(unjudged))
    assert summary["metrics"] == {} and summary["counts"]["judged_without_relevant"] == queries
    expected = (f"no query of the run has a relevant document in the qrels (of its {queries} queries, 0 are not in "
                f"the qrels and {queries} have no grade above 0)")
    assert len(summary["warnings"]) == 1 and summary["warnings"][0].startswith(expected)
    assert err.count(expected) == 1, err
    code, out, err = cli(["score", str(run), "--qrels", str(unjudged)])  # the table: once on stderr too
    assert code == 0 and err.count(expected) == 1, err
    other = tmp_path / "other.run"
    other.write_text("".join(f"x{q} Q0 {d} 1 1.0 x\n" for q, d, _ in rows))
    graded = tmp_path / "graded.qrels"
    graded.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows))
    summary, err = _scored(cli, str(other), "--qrels", str(graded))
    assert f"of its {queries} queries, {queries} are not in the qrels and 0 have no grade above 0" in err
    assert summary["metrics"]["ndcg@10"] == 0.0  # every judged query missing from the run: all 0
    assert "warnings" not in _scored(cli, str(run), "--qrels", str(graded))[0]


def test_a_nan_score_in_a_run_names_the_file_and_line(tmp_path, cli):
    rows = _scifact_qrels()[:3]
    run = tmp_path / "run.txt"
    run.write_text(f"{rows[0][0]} Q0 {rows[0][1]} 1 2.5 x\n{rows[1][0]} Q0 {rows[1][1]} 1 nan x\n")
    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows))
    code, out, err = cli(["score", str(run), "--qrels", str(qrels)])
    assert_one_error(code, out + err, f"{run}:2", repr(rows[1][1]), "NaN score")


# -- logs -----------------------------------------------------------------------------------------------------------

def test_a_log_warning_is_printed_once_and_ids_are_not_read_as_markup(tmp_path, cli, squad):
    """Retrieved ids the corpus does not hold, '[/x]' and 'app/[slug]/page.md': the warning comes once, the ids as
    written, in the table's and --json's output (it came twice, and the second copy raised rich's MarkupError after
    everything was written, or printed 'app//page.md'); an --out folder whose name holds '[/x]' is named as is."""
    question = squad[0]
    corpus = _jsonl(tmp_path / "corpus.jsonl", [{"id": question["paragraph_id"], "text": question["context"]}])
    log = _jsonl(tmp_path / "log.jsonl", [{"query_id": question["id"], "query": question["question"],
                                           "retrieved": [question["paragraph_id"], "[/x]", "app/[slug]/page.md"],
                                           "answer": question["answers"]["text"][0]}])
    args = ["score", str(log), "--golden", str(_golden(tmp_path, [question])), "--corpus", str(corpus),
            "--no-reference-free"]
    warning = "warning: 2 of 3 retrieved ids are not in the corpus (e.g. '[/x]', 'app/[slug]/page.md')"
    out_dir = tmp_path / "out[" / "x]"
    for extra in ([], ["--json"], ["--out", str(out_dir)]):
        code, out, err = cli([*args, *extra])
        assert code == 0, err
        assert err.count("warning:") == 1 and warning in err, err
    assert f"wrote {out_dir / 'cases.jsonl'} (1 case record) and {out_dir / 'summary.json'}" in err
    assert json.loads((out_dir / "summary.json").read_text())["log"]["warnings"] == [warning.removeprefix("warning: ")]


def test_a_log_reads_openai_usage_and_a_usage_without_counts_is_unreported(tmp_path, cli, squad):
    """Three SQuAD questions answered by a priced model: two report OpenAI's prompt/completion tokens, one only a
    total. The first two are counted and priced (they were 0 tokens and 0 USD); the third's tokens and cost are
    unknown, never 0."""
    questions = squad[:3]
    usages = [{"prompt_tokens": 120, "completion_tokens": 8}, {"prompt_tokens": 95, "completion_tokens": 12},
              {"total_tokens": 140}]
    rows = [{"query_id": q["id"], "query": q["question"], "retrieved": [q["paragraph_id"]],
             "answer": q["answers"]["text"][0], "model": "openai:priced", "usage": usage}
            for q, usage in zip(questions, usages)]
    config = tmp_path / "prices.yaml"
    config.write_text("prices:\n  openai:priced: {input: 2.0, output: 8.0}\n")
    golden = str(_golden(tmp_path, questions))
    log = _jsonl(tmp_path / "log.jsonl", rows)
    summary, _ = _scored_log(cli, str(log), "--golden", golden, "--config", str(config))
    assert summary["tokens"] == {"input": 120 + 95, "output": 8 + 12, "per_query": None, "per_correct_answer": None,
                                 "unreported_attempts": 1}
    assert summary["cost_usd"] == {"total": pytest.approx((120 + 95) * 2.0 / 1e6 + (8 + 12) * 8.0 / 1e6),
                                   "per_query": None, "unpriced_attempts": 1}
    assert summary["tiers"]["attempts"]["(none)"]["tokens"] == 120 + 95 + 8 + 12
    reported, _ = _scored_log(cli, str(_jsonl(tmp_path / "two.jsonl", rows[:2])), "--golden", golden, "--config",
                          str(config))
    assert reported["tokens"]["per_query"] == (120 + 8 + 95 + 12) / 2
    assert reported["tokens"]["per_correct_answer"] == (120 + 8 + 95 + 12) / 2  # both answers are SQuAD's own
    assert reported["cost_usd"]["per_query"] == pytest.approx(((120 + 95) * 2.0 + (8 + 12) * 8.0) / 1e6 / 2)
    table = cli(["score", str(log), "--golden", golden, "--config", str(config),
                 "--no-reference-free"])[1]
    assert re.search(r"tokens\.input\s*│\s*215\s", table) and re.search(r"tokens\.per_query\s*│\s*unknown", table)


def test_an_empty_error_is_no_error(tmp_path, cli, squad):
    """A logger that always writes "error": "" (or blanks): those answers are correct, not failed (they were both);
    an attempt that did fail is wrong, though it carries the right answer's text."""
    questions = squad[:3]
    rows = [{"query_id": q["id"], "query": q["question"], "retrieved": [q["paragraph_id"]],
             "answer": q["answers"]["text"][0], "error": error} for q, error in zip(questions, ["", "  ", "HTTP 500"])]
    log = _jsonl(tmp_path / "log.jsonl", rows)
    summary, _ = _scored_log(cli, str(log), "--golden", str(_golden(tmp_path, questions)))
    assert summary["answers"] == {"judged": 3, "correct": 2, "accuracy": pytest.approx(2 / 3), "failed": 1,
                                  "unanswered": 0}


def test_context_items_that_are_not_retrieved_ids_are_warned_about(tmp_path, cli, squad):
    """Two of three rows give the paragraph's text as ``context`` where its id belongs: their context waste is 1.0
    (the text is no relevant id), and a warning counts the rows and names the first with its line (it was silent)."""
    questions = squad[:3]
    rows = [{"query_id": q["id"], "query": q["question"], "retrieved": [q["paragraph_id"], "elsewhere"],
             "context": [q["context"] if i < 2 else q["paragraph_id"]], "answer": q["answers"]["text"][0]}
            for i, q in enumerate(questions)]
    log = _jsonl(tmp_path / "log.jsonl", rows)
    summary, err = _scored_log(cli, str(log), "--golden", str(_golden(tmp_path, questions)))
    assert summary["context_waste"]["mean"] == pytest.approx((1.0 + 1.0 + 0.0) / 3)
    example = questions[0]["context"][:57] + "..."
    expected = (f"2 of 3 log rows name context items that are not among their retrieved ids (e.g. {example!r} at "
                f"{log}:1)")
    assert len(summary["warnings"]) == 1 and summary["warnings"][0].startswith(expected), summary.get("warnings")
    assert err.count(expected) == 1
    ids = _jsonl(tmp_path / "ids.jsonl", [{**r, "context": [q["paragraph_id"]]} for r, q in zip(rows, questions)])
    assert "warnings" not in _scored_log(cli, str(ids), "--golden", str(_golden(tmp_path, questions)))[0]


def test_integer_query_ids_match_a_golden_set_of_integer_ids_and_floats_are_refused(tmp_path, cli, squad):
    """Query ids 1 and 2 in the log and in the golden set (a dataset file accepts integer ids): matched as "1" and
    "2" (the log was refused with 'Input should be a valid string'); 1.0 or true is one error per line."""
    questions = squad[:2]
    golden = str(_golden(tmp_path, questions, ids=[1, 2]))
    rows = [{"query_id": i, "query": q["question"], "retrieved": [q["paragraph_id"]], "answer": q["answers"]["text"][0]}
            for i, q in enumerate(questions, 1)]
    summary, _ = _scored_log(cli, str(_jsonl(tmp_path / "log.jsonl", rows)), "--golden", golden)
    assert "not_in_golden" not in summary and summary["retrieval"]["queries"] == 2
    assert summary["retrieval"]["metrics"]["hit@1"] == 1.0 and summary["answers"]["correct"] == 2
    bad = _jsonl(tmp_path / "bad.jsonl", [{**rows[0], "query_id": 1.0}, {**rows[1], "query_id": True}])
    code, out, err = cli(["score", str(bad), "--golden", golden, "--no-reference-free"])
    assert_one_error(code, out + err, f"{bad}:1: field 'query_id': must be a string or an integer",
                     "got float 1.0", f"{bad}:2: field 'query_id'", "got bool true")


def test_a_logged_item_whose_id_has_another_name_is_told_to_rename_it(tmp_path, cli):
    """``{"doc_id": ...}`` in ``retrieved`` was "field 'retrieved.0.id': Field required", naming no rename."""
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"query_id": "q1", "query": "Where is the Eiffel Tower?", "answer": "Paris",
                               "retrieved": [{"doc_id": "d1", "text": "The Eiffel Tower is in Paris."}]}) + "\n")
    code, out, err = cli(["score", str(log), "--format", "log", "--no-reference-free"])
    assert_one_error(code, out + err, f"{log}:1: field 'retrieved.0.doc_id' is not read: rename it 'id'")
