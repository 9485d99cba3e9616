"""Reports tell the truth about judges: accuracy over every case to answer (failed, empty and unjudged answers are
incorrect), the answered rate beside it, the primary judge named with its validated accuracy, the cases on which
the judges disagree, and the default primary judge = the one that validates best on weak *and* strong answers.

Every expected number below is counted by hand from the records written out in the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluations.core.config import load_config
from evaluations.core.console import make_console
from evaluations.core.errors import EvaluationsError
from evaluations.judging.validation.validation import Validation, best_judge
from evaluations.pipeline.plan import build_qa_plan, choose_primary
from evaluations.reports.console import answer_lines, answers_table
from evaluations.reports import write_reports
from evaluations.results.records import CaseRecord, JudgeError, QARecord
from evaluations.results.rundata import RunSummary
from evaluations.results.summary import summarize

GOLD = ["Paris"]


def _ok(name: str, answer: str, judges: dict, **extra) -> CaseRecord:
    return CaseRecord(name=name, case=name, query=f"question {name}", qa=QARecord(status="ok", mode="tool"),
                      answer={"answer": answer}, judges=judges, **extra)


def records() -> list[CaseRecord]:
    """Ten cases to answer: seven with gold answers, two unanswerable, one answerable without gold answers."""
    return [
        _ok("g1", "Paris", {"offline_correct": True, "keyword_correct": True, "llm_judge": True,
                            "offline_p_correct": 0.93, "token_f1": 1.0}, gold_answers=GOLD, tags=["t"],
            judge_reasons={"offline_correct": "p(correct) = 0.93", "llm_judge": "same city"}),
        _ok("g2", "Lyon", {"offline_correct": False, "keyword_correct": False, "llm_judge": False}, gold_answers=GOLD),
        CaseRecord(name="g3", case="g3", query="question g3", gold_answers=GOLD, tags=["t"],
                   qa=QARecord(status="failed", error="ValueError: no output", raw_text="oops")),
        _ok("g4", "", {"offline_correct": False, "keyword_correct": False}, gold_answers=GOLD),  # empty answer
        _ok("g5", "Paris, France", {"offline_correct": True, "keyword_correct": True, "llm_judge": False},
            gold_answers=GOLD, judge_reasons={"offline_correct": "p(correct) = 0.71",
                                              "keyword_correct": "keyword overlap 1.00 > 0.7",
                                              "llm_judge": "adds a country"}),
        _ok("g6", "The capital", {"offline_correct": False, "keyword_correct": True}, gold_answers=GOLD,
            judge_errors=[JudgeError(evaluator="AnswerEquivalenceJudge", error="no judge output mode worked")],
            judge_reasons={"offline_correct": "p(correct) = 0.20", "keyword_correct": "keyword overlap 1.00 > 0.7"}),
        CaseRecord(name="g7", case="g7", query="question g7", gold_answers=GOLD, status="failed",
                   error="ConnectError: system down"),  # failed before its answer stage
        _ok("u1", "I don't know", {"offline_correct": True, "llm_judge": True}, answerable=False),  # a right refusal
        _ok("u2", "Berlin", {}, answerable=False),  # unanswerable, no verdict: left out
        _ok("n1", "something", {}),  # answerable but no gold answers: never counted
    ]


VALIDATION = {
    "judges": {
        "offline_correct": {"label": "offline judge (logistic regression)", "weak": {"accuracy": 0.81, "n": 400},
                            "strong": {"accuracy": 0.93, "n": 2000}},
        "llm_judge": {"label": "embedded LLM judge (Qwen2.5-Coder-1.5B)", "weak": {"accuracy": 0.97},
                      "strong": {"accuracy": 0.64}},
        "combined_correct": {"label": "combined judge", "weak": {"accuracy": 0.91}, "strong": {"accuracy": 0.88}},
        "keyword_correct": {"label": "keyword overlap > 0.7", "weak": {"accuracy": 0.99}},  # strong unknown
    },
    "date": "2025-01-01",
}


@pytest.fixture
def validation_file(tmp_path, monkeypatch) -> Path:
    """A validation file in a tmp judges folder (with the shipped fitted parameters beside it)."""
    from evaluations.judging.basics.shipped import shipped_path

    folder = tmp_path / "judges"
    folder.mkdir()
    for name in ("offline_judge.json", "embedded_judge.json", "combined_judge.json"):
        (folder / name).write_bytes(shipped_path(name).read_bytes())
    (folder / "validation.json").write_text(json.dumps(VALIDATION))
    monkeypatch.setenv("EVALUATIONS_JUDGES_DIR", str(folder))
    return folder / "validation.json"


def _validation(path: Path) -> Validation:
    return Validation.model_validate_json(path.read_text())


def _summary(primary: str = "offline_correct", validation: dict | None = None) -> dict:
    """summary.json of ``records()`` as a run writes it (the JSON, read by key: the oracle side)."""
    return summarize(records(), name="hand-counted", ks=[10], extra={}, primary_judge=primary,
                     primary_validation=validation, primary_chosen_by="judge.primary").to_dict()


def test_accuracy_counts_every_case_to_answer():
    answers = _summary()["answers"]
    assert answers["to_answer"] == 10  # g1-g7, u1, u2, n1 (g7 failed before answering: still to answer)
    assert answers["cases_to_answer"] == {"gold": 7, "unanswerable": 2, "no_gold": 1}
    assert answers["answered_non_empty"] == 7  # g1 g2 g5 g6 u1 u2 n1; not g3 (failed), g4 (empty), g7 (failed)
    assert answers["answered_rate"] == pytest.approx(7 / 10)
    judges = answers["judges"]
    # offline_correct: the 7 gold cases + u1 (it judged that refusal); correct: g1, g5, u1
    assert judges["offline_correct"] == {"accuracy": pytest.approx(3 / 8), "correct": 3, "n_cases": 8, "judged": 6,
                                         "unanswerable_included": 1, "unanswerable_left_out": 1,
                                         "mean": pytest.approx(3 / 6), "n": 6}
    # keyword_correct: never judges unanswerable cases; correct: g1, g5, g6
    assert judges["keyword_correct"]["accuracy"] == pytest.approx(3 / 7)
    assert (judges["keyword_correct"]["n_cases"], judges["keyword_correct"]["judged"]) == (7, 5)
    assert judges["keyword_correct"]["unanswerable_left_out"] == 2
    assert judges["keyword_correct"]["mean"] == pytest.approx(3 / 5)
    # llm_judge: failed on g6 (a judge failure is incorrect), no verdict on g3, g4, g7; correct: g1, u1
    assert judges["llm_judge"]["accuracy"] == pytest.approx(2 / 8) and judges["llm_judge"]["n_cases"] == 8
    assert judges["llm_judge"]["mean"] == pytest.approx(2 / 4)
    # scores and probabilities keep their mean only
    assert set(judges["token_f1"]) == {"mean", "n"} and set(judges["offline_p_correct"]) == {"mean", "n"}


def test_disagreements_and_segments():
    summary = _summary()
    # compared (two or more of the verdict judges present): g1, g2, g4, g5, g6, u1; split: g5 (llm), g6 (keyword)
    assert summary["answers"]["disagreements"]["n"] == 2 and summary["answers"]["disagreements"]["of"] == 6
    assert summary["answers"]["disagreements"]["cases"] == ["g5", "g6"]
    # the segment mean of a verdict is its accuracy there: tag t = g1 (correct) + g3 (QA failed)
    assert summary["segments"]["t"]["metrics"]["offline_correct"] == pytest.approx(1 / 2)


def test_headline_names_the_judge_and_its_validated_accuracy(validation_file, capsys):
    entry = _validation(validation_file).judges["combined_correct"].model_dump(mode="json")
    summary = _summary("llm_judge", None)
    expected = "answer accuracy 0.25 (primary judge: llm_judge — not validated) · answered 7/10"
    assert answer_lines(RunSummary.model_validate(summary).answers)[0] == expected
    summary["answers"]["judges"]["combined_correct"] = {"mean": 0.5, "n": 4, "accuracy": 0.22, "correct": 2,
                                                        "n_cases": 9}
    summary["answers"]["primary_judge"], summary["answers"]["primary_validation"] = "combined_correct", entry
    answers = RunSummary.model_validate(summary).answers
    expected = ("answer accuracy 0.22 (primary judge: combined_correct — combined judge; validated accuracy vs human "
                "labels: weak systems 0.91, strong systems 0.88) · answered 7/10")
    console = make_console(stderr=False)
    console.print(answers_table(answers))
    for line in answer_lines(answers):
        console.print(line, markup=False, highlight=False)
    out = capsys.readouterr().out
    assert expected in out.splitlines()  # one line, unwrapped, whatever $COLUMNS says
    assert "judges disagree on 2 of 6 answers" in out.splitlines()
    assert max(len(line) for line in out.splitlines() if "│" in line) <= 120


def hand_counted_run(tmp_path: Path, validation: dict | None = None) -> Path:
    """A run folder of ``records()`` (as a run writes it: cases.jsonl + summary.json)."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "cases.jsonl").write_text("".join(r.dump_line() for r in records()))
    (folder / "summary.json").write_text(json.dumps(_summary("offline_correct", validation)))
    return folder


def test_run_report_shows_accuracy_and_lists_disagreements(validation_file, tmp_path):
    entry = _validation(validation_file).judges["offline_correct"].model_dump(mode="json")
    written = write_reports(hand_counted_run(tmp_path, entry))
    headline = ("answer accuracy 0.38 (primary judge: offline_correct — offline judge (logistic regression); "
                "validated accuracy vs human labels: weak systems 0.81, strong systems 0.93) · answered 7/10")
    html, md = written.html.read_text(), written.markdown.read_text()
    assert f'<p class="headline-line">{headline}</p>' in html
    assert f"**{headline}**" in md
    # the judges table counted by hand above (summary.md had it; report.md has everything)
    assert "| offline_correct (primary) | verdict | 0.3750 | 3 / 8 | 0.5000 | 6 | 0 |" in md
    assert "Judges disagree on 2 of 6 answers" in md
    assert 'data-key="offline_correct"' in html and 'data-value="0.375"' in html  # the headline value: accuracy
    # the disagreement table lists g5 and g6 with each judge's verdict; their cards carry each judge's reason
    section = md[md.index("## Judges disagree"):md.index("## Worst cases")]
    assert "| g5 | correct | wrong | correct | Paris, France |" in section  # offline, llm, keyword
    assert "| g6 | wrong | — | correct | The capital |" in section
    assert "- **llm_judge**: wrong — adds a country" in section
    assert "- **keyword_correct**: correct — keyword overlap 1.00 > 0.7" in section
    # in the worst cases, the disagreeing ones are marked (and filterable in the page)
    worst = md[md.index("## Worst cases"):]
    assert "<b>g6</b> [judges disagree]" in worst and "<b>g3</b>:" in worst
    assert '<details class="case" data-flags="judges disagree">' in html


def test_best_judge_maximises_the_worse_of_weak_and_strong():
    validation = Validation.model_validate({"judges": {
        "a": {"label": "best on weak", "weak": {"accuracy": 0.95}, "strong": {"accuracy": 0.60}},
        "b": {"label": "best on strong", "weak": {"accuracy": 0.62}, "strong": {"accuracy": 0.96}},
        "c": {"label": "best on both", "weak": {"accuracy": 0.80}, "strong": {"accuracy": 0.79}},
        "d": {"label": "weak only", "weak": {"accuracy": 0.99}},
    }})
    assert best_judge(["a", "b", "c", "d"], validation) == "c"  # min: a 0.60, b 0.62, c 0.79, d unknown
    assert best_judge(["a", "b", "d"], validation) == "b"
    assert best_judge(["d", "x"], validation) is None


def test_default_primary_is_the_best_validated_judge_the_run_computes(validation_file):
    validation = _validation(validation_file)
    embedded = load_config(overrides={"judge.model": {"provider": "embedded"}})
    choice = choose_primary(embedded, validation)
    # min(weak, strong): offline 0.81, llm 0.64, combined 0.88 -> the combined judge
    assert choice.name == "combined_correct"
    assert choice.validation["weak"]["accuracy"] == 0.91 and choice.validation["label"] == "combined judge"
    assert choose_primary(load_config(), validation).name == "offline_correct"  # no LLM judge: offline only
    # a served LLM judge shares the verdict name, not the validation: not a candidate, and "not validated"
    served = load_config(overrides={"judge.model": {"provider": "ollama", "name": "qwen3"}})
    strong_llm = Validation.model_validate({"judges": {**VALIDATION["judges"], "llm_judge": {
        "label": "embedded LLM judge", "weak": {"accuracy": 0.99}, "strong": {"accuracy": 0.99}}}})
    assert choose_primary(served, strong_llm).name == "offline_correct"
    forced = load_config(overrides={"judge.model": {"provider": "ollama", "name": "qwen3"}, "judge.primary": "llm_judge"})
    assert (choose_primary(forced, strong_llm).name, choose_primary(forced, strong_llm).validation) == ("llm_judge", None)
    # nothing validated: today's rule
    assert choose_primary(embedded, Validation()).name == "llm_judge"
    assert choose_primary(load_config(), Validation()).name == "offline_correct"
    assert choose_primary(load_config(), Validation()).validation is None


def test_judge_primary_is_checked(validation_file):
    plan = build_qa_plan(load_config(overrides={"judge.primary": "exact_match"}))
    assert (plan.primary_judge, plan.primary_chosen_by) == ("exact_match", "judge.primary")
    with pytest.raises(EvaluationsError) as missing:
        build_qa_plan(load_config(overrides={"judge.primary": "llm_judge"}))
    assert missing.value.where == "judge.primary" and "judge.model" in missing.value.fix
    with pytest.raises(EvaluationsError) as unknown:
        load_config(overrides={"judge.primary": "vibes"})
    assert "judge.primary" in str(unknown.value) and "offline_correct" in str(unknown.value)
