"""A scored log is a run: its failed and unanswered queries are counted by every answer judge, and the folder of
``score --format log --out`` is gated, compared and reported like a run folder.

Real SQuAD 2.0 passages (each query's own paragraph ranked first), answered with the sentence of that paragraph that
holds the gold answer (a copy: supported); the other rows of each log are built to fail in a known way (an
``error``, a null answer, an empty answer, a refusal). The expected counts come from how the rows were built.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_error
from test_reports_reference_free import squad_articles

JUDGES = "faithfulness,answer_relevance"


def _rows(count: int) -> list[dict]:
    return [{"query_id": row["id"], "query": row["question"], "answer": row["sentence"],
             "retrieved": [{"id": row["paragraph_id"], "text": row["context"], "score": 2.0}]}
            for row in squad_articles(count)]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _score(cli, log: Path, out: Path) -> dict:
    code, stdout, err = cli(["score", str(log), "--format", "log", "--out", str(out), "--json"])
    assert code == 0, err
    return json.loads(stdout)


def test_failed_and_unanswered_queries_are_counted_by_every_answer_judge(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", JUDGES)
    rows = _rows(4)
    rows[1] = {**rows[1], "answer": None, "error": "HTTP 500"}  # failed
    rows[2] = {**rows[2], "answer": None}  # logged no answer, in a log of answers
    rows[3] = {**rows[3], "answer": ""}  # an empty answer
    summary = _score(cli, _write(tmp_path / "log.jsonl", rows), tmp_path / "out")

    metrics = summary["reference_free"]["metrics"]
    # answer relevance: the copied sentence addresses its question; no answer and "" do not; the failed query
    # is counted as failed, never left out
    assert {k: metrics["answer_relevance"][k] for k in ("n", "mean", "failed", "not_applicable")} == \
        {"n": 3, "mean": pytest.approx(1 / 3), "failed": 1, "not_applicable": 0}
    # faithfulness: nothing to check in no answer or "" (not applicable, never 1.0), the failed query failed
    assert metrics["faithfulness"]["n"] == 1 and metrics["faithfulness"]["failed"] == 1
    assert metrics["faithfulness"]["not_applicable"] == 2
    assert metrics["faithfulness"]["kinds"]["case failed"] == 1 and metrics["faithfulness"]["kinds"]["empty"] == 2

    lines = [json.loads(line) for line in (tmp_path / "out" / "cases.jsonl").read_text().splitlines()]
    assert [line["status"] for line in lines] == ["ok", "failed", "ok", "ok"]
    assert lines[1]["error"] == "HTTP 500" and lines[1]["qa"]["status"] == "failed"
    assert [line["scores"] for line in lines] == [[2.0]] * 4  # the spans' logged scores are kept
    assert [line["case"] for line in lines] == [r["query_id"] for r in rows]


def test_a_scored_log_folder_is_gated_compared_and_reported_like_a_run(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", JUDGES)
    rows = _rows(3)
    before = _score(cli, _write(tmp_path / "before.jsonl", rows), tmp_path / "before")
    assert before["reference_free"]["metrics"]["faithfulness"]["mean"] == 1.0, before  # copies: supported
    # the same system later refuses one question and answers another with nothing
    later = [rows[0], {**rows[1], "answer": "I don't know."}, {**rows[2], "answer": ""}]
    _score(cli, _write(tmp_path / "after.jsonl", later), tmp_path / "after")
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: faithfulness, min: 0.9}\nzero_tolerance: [faithfulness]\n")

    code, out, err = cli(["gate", str(tmp_path / "after"), "--baseline", str(tmp_path / "before"),
                          "--rules", str(rules)])
    # the mean over the one answer left is still 1.0, but the two that stopped answering are regressions
    assert code == 1, out + err
    assert "faithfulness >= 0.9: 1 (over 1 of 3 cases: 2 not applicable)" in out
    named = sorted([f"{rows[1]['query_id']} (now refusal)", f"{rows[2]['query_id']} (now empty)"])
    assert f"2 case(s) passed in the baseline and fail now: {', '.join(named)}" in out

    code, out, err = cli(["compare", str(tmp_path / "before"), str(tmp_path / "after"), "--json"])
    assert code == 0, err
    lapsed = {(r["case"], r["now"]) for r in json.loads(out)["regressions"] if r["metric"] == "faithfulness"}
    assert lapsed == {(rows[1]["query_id"], "refusal"), (rows[2]["query_id"], "empty")}

    code, out, err = cli(["report", str(tmp_path / "before")])
    assert code == 0, err
    page = (tmp_path / "before" / "report.md").read_text()
    assert "faithfulness 1.00 (n 3)" in page
    # no gold answers and no qrels: nothing is said about correct answers or perfect retrieval
    assert "correct answer" not in page and "perfect retrieval" not in page
    assert "no case failed, with every answer addresses its question; every claim supported" in page


def test_a_gate_on_a_log_whose_queries_all_failed_says_so(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", JUDGES)
    rows = [{**row, "answer": None, "error": "timeout"} for row in _rows(2)]
    summary = _score(cli, _write(tmp_path / "log.jsonl", rows), tmp_path / "out")
    assert summary["reference_free"]["metrics"]["faithfulness"] == {
        "mean": None, "n": 0, "not_applicable": 0, "failed": 2, "ci95": None, "kinds": {"case failed": 2}}
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: faithfulness, min: 0.9}\n")
    code, out, err = cli(["gate", str(tmp_path / "out"), "--rules", str(rules)])
    assert_one_error(code, out + err, "2 of 2 cases", "failed")
    assert "judge.reference_free" not in out + err  # the judges were on: that is not the fix


def test_a_question_longer_than_the_judge_models_window_is_a_failed_judge_naming_the_limit(tmp_path, cli,
                                                                                           monkeypatch):
    """A question of ~30,000 characters leaves no room for the passage in the embedded judge's 2,048-token window:
    each judge that asks the model fails on that query (counted, its error naming the window), the other query is
    judged, and the command exits 3 after writing the summary; never a llama.cpp error or a traceback."""
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "faithfulness,context_relevance")
    rows = _rows(2)
    rows[1] = {**rows[1], "query": " ".join([rows[1]["query"]] * 3000)}
    code, stdout, err = cli(["score", str(_write(tmp_path / "log.jsonl", rows)), "--format", "log", "--json"])
    assert code == 3, err
    assert "Traceback" not in err and "llama_decode" not in err
    assert "failed on 1 of 2 queries" in err and "2048-token window" in err
    metrics = json.loads(stdout)["reference_free"]["metrics"]
    for judge in ("faithfulness", "context_relevance"):
        assert (metrics[judge]["n"], metrics[judge]["failed"]) == (1, 1), metrics[judge]


def test_questions_or_answers_in_another_language_are_warned_about():
    """The judges read English; a right answer in French was judged off topic and unsupported without a word. The
    language test passes every SQuAD 2.0 question and paragraph of the first 300 rows, and flags translations."""
    import gzip

    from conftest import DATA
    from evaluations.judging.basics.text import looks_english
    from evaluations.results.records import CaseRecord
    from evaluations.results.reference_free import language_warning

    with gzip.open(DATA / "squad2_dev_cs224n" / "questions.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for _, line in zip(range(300), handle)]
    assert all(looks_english(r["question"]) and looks_english(r["context"]) for r in rows)
    translations = ["Les Normands ont donné leur nom à la Normandie, une région du nord de la France.",
                    "Die Normannen gaben der Normandie, einer Region in Frankreich, ihren Namen.",
                    "诺曼人是10世纪和11世纪将名字赋予法国诺曼底的人。",
                    "Норманны дали своё имя Нормандии, региону на севере Франции."]
    assert not any(looks_english(t) for t in translations)

    def record(i: int, answer: str) -> CaseRecord:
        return CaseRecord(name=f"q{i}", query=rows[i]["question"], answer={"answer": answer})

    english = [record(i, rows[i]["context"].split(". ")[0]) for i in range(4)]
    assert language_warning(english) is None
    mixed = english + [record(4 + i, t) for i, t in enumerate(translations)]
    assert language_warning(mixed).startswith("4 of 8 cases have a question or answer that is not English (e.g. 'q4')")


def test_answers_of_the_system_and_of_the_built_in_model_mixed_in_one_run_are_warned_about():
    """A system that returns no answer for some cases gets the built-in QA model's there (documented); the answer
    judges then mix two sources, and the run named one QA model only: said in the warnings."""
    from evaluations.results.records import SYSTEM_ANSWER, CaseRecord, QARecord
    from evaluations.results.summary import mixed_answers, summarize

    def record(name: str, mode: str | None) -> CaseRecord:
        return CaseRecord(name=name, query="Who wrote Dracula?", answer={"answer": "Bram Stoker"},
                          qa=QARecord(status="ok", mode=mode))

    own = [record(f"q{i}", SYSTEM_ANSWER) for i in range(3)]
    assert mixed_answers(own) is None and mixed_answers([record("a", "tool")]) is None
    warning = mixed_answers([*own, record("q3", "tool")])
    assert warning["cases"] == 1 and warning["examples"] == ["q3"]
    assert warning["message"].startswith("1 of 4 answers are the built-in QA model's")
    summary = summarize([*own, record("q3", "tool")], name="mixed", ks=[], scored=False, extra={})
    assert [w for w in summary.warnings if w["kind"] == "mixed_answers"] == [warning]
