"""A score is compared only with a score of the same judge: compare warns, gate breaks a relative rule or zero
tolerance, and a history trend does not count a change, when a model-judged measure (faithfulness, context
relevance, the LLM judge) was judged by another model in one of the runs.

One real questions-only run (a user's system copying a sentence of its top passage; faithfulness and context
relevance by the embedded judge), and the same folder with its summary saying the reference-free judges asked a
served model, as a run judged through a server records it (``run.reference_free_judge``)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from evaluations.experiments.history import list_runs, record_run, trend
from inprocess import run_evaluations

ROOT = Path(__file__).resolve().parents[1]
SYSTEM = '''
DOCS = {"d1": "The Eiffel Tower in Paris was completed in 1889. It is 330 metres tall.",
        "d2": "Tokyo is the capital of Japan. It has about 14 million people.",
        "d3": "Hamlet was written by William Shakespeare around 1600."}


def answer(request):
    doc = {"q1": "d1", "q2": "d2", "q3": "d3"}[request["case_id"]]
    return {"retrieved": [{"id": doc}, {"id": "d2" if doc != "d2" else "d1"}], "answer": DOCS[doc].split(". ")[0] + "."}
'''
#: two questions over the three documents: the tests read which judge judged, not how many cases it judged
QUESTIONS = {"q1": "When was the Eiffel Tower completed?", "q2": "What is the capital of Japan?"}
SERVED = "openai:qwen15"
#: how a run names it: the shipped parameters were fitted through the embedded checker, not this one
SERVED_JUDGE = f"{SERVED} (parameters fitted through embedded)"


@pytest.fixture(scope="module")
def judged_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("judges")
    (tmp / "q.jsonl").write_text("".join(json.dumps({"id": q, "query": t}) + "\n" for q, t in QUESTIONS.items()))
    namespace: dict = {}
    exec(SYSTEM, namespace)
    (tmp / "corpus.jsonl").write_text("".join(json.dumps({"id": d, "text": t}) + "\n"
                                              for d, t in namespace["DOCS"].items()))
    (tmp / "judgesys.py").write_text(SYSTEM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp)]), "NO_COLOR": "1", "HF_HUB_OFFLINE": "1",
           "EVALUATIONS_CACHE_DIR": str(tmp / "cache")}
    embedded = tmp / "embedded"
    proc = run_evaluations(["run", str(tmp / "q.jsonl"), "--corpus",
                           str(tmp / "corpus.jsonl"), "--system", "judgesys:answer", "--reference-free", "--out",
                           str(embedded), "--no-progress"], capture_output=True, text=True, env=env, cwd=tmp,
                          timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((embedded / "summary.json").read_text())
    assert summary["run"]["reference_free_judge"].startswith("embedded:")
    assert summary["reference_free"]["metrics"]["faithfulness"]["n"] == len(QUESTIONS)
    served = tmp / "served"
    shutil.copytree(embedded, served)
    summary["run"]["reference_free_judge"] = SERVED
    (served / "summary.json").write_text(json.dumps(summary))
    return {"tmp": tmp, "embedded": embedded, "served": served, "judge": summary["run"]["reference_free_judge"],
            "embedded_judge": json.loads((embedded / "summary.json").read_text())["run"]["reference_free_judge"]}


def test_compare_warns_when_a_model_judged_score_had_another_judge(judged_runs, cli):
    code, out, err = cli(["compare", str(judged_runs["embedded"]), str(judged_runs["served"]), "--json"])
    assert code == 0, err
    result = json.loads(out)
    changed = {row["metric"]: row for row in result["judges_differ"]}
    assert set(changed) == {"faithfulness", "context_relevance"}  # answer relevance reads no model of the run's
    assert changed["faithfulness"]["judge_a"] == judged_runs["embedded_judge"]
    assert changed["faithfulness"]["judge_b"] == SERVED_JUDGE
    code, out, err = cli(["compare", str(judged_runs["embedded"]), str(judged_runs["served"]), "--no-cases"])
    assert code == 0, err
    text = " ".join(out.split())
    assert f"faithfulness was judged by {judged_runs['embedded_judge']} in" in text
    assert f"but by {SERVED_JUDGE} in" in text
    # the comparison's report says it first, in its headline
    code, out, err = cli(["compare", str(judged_runs["embedded"]), str(judged_runs["served"]), "--out",
                          str(judged_runs["tmp"] / "cmp")])
    assert code == 0, err
    code, out, err = cli(["report", str(judged_runs["tmp"] / "cmp")])
    assert code == 0, err
    page = " ".join((judged_runs["tmp"] / "cmp" / "report.md").read_text().split())
    assert f"faithfulness was judged by {judged_runs['embedded_judge']} in" in page, page[:3000]
    # the same judge on both sides: no warning
    code, out, err = cli(["compare", str(judged_runs["embedded"]), str(judged_runs["embedded"]), "--json"])
    assert code == 0 and json.loads(out)["judges_differ"] == [], err


def test_gate_breaks_a_relative_rule_across_judges_and_keeps_absolute_ones(judged_runs, cli, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: faithfulness, max_drop: 0.05}\n  - {metric: faithfulness, min: 0.0}\n"
                     "zero_tolerance: [context_relevance]\n")
    code, out, err = cli(["gate", str(judged_runs["served"]), "--rules", str(rules), "--baseline",
                          str(judged_runs["embedded"]), "--json"])
    assert code == 1, out + err
    result = json.loads(out)
    relative, absolute, zero = result["checks"]
    # the values are the same files: only the judges differ, and that alone breaks the comparisons
    assert relative["change"] == 0.0 and not relative["holds"] and relative["judges"]["run"] == SERVED_JUDGE
    assert any(f"judged by {SERVED_JUDGE} in this run" in p for p in relative["problems"])
    assert absolute["holds"] and "judges" not in absolute
    assert not zero["holds"] and zero["regressed_cases"] == [] and zero["judges"]["baseline"] == \
        judged_runs["embedded_judge"]
    code, out, err = cli(["gate", str(judged_runs["served"]), "--rules", str(rules), "--baseline",
                          str(judged_runs["served"])])
    assert code == 0, out + err


def test_a_history_trend_does_not_count_a_change_across_judges(judged_runs, tmp_path, cli):
    store = tmp_path / "h.sqlite"
    for name in ("embedded", "served", "embedded"):  # the last: the first folder recorded again, replacing its row
        record_run(judged_runs[name], None, path=store, cwd=tmp_path)
    copy = tmp_path / "served-again"
    shutil.copytree(judged_runs["served"], copy)
    record_run(copy, None, path=store, cwd=tmp_path)
    rows = list_runs(store)
    assert [Path(r["run_dir"]).name for r in rows] == ["served", "embedded", "served-again"]
    assert rows[0]["judges"] == {"faithfulness": SERVED_JUDGE, "context_relevance": SERVED_JUDGE}
    points = trend(rows, "faithfulness")
    assert [p["judge"] for p in points] == [SERVED_JUDGE, judged_runs["embedded_judge"], SERVED_JUDGE]
    assert [p["judge_changed"] for p in points] == [False, True, True]
    assert [p["change"] for p in points] == [None, None, None]
    same = trend([rows[0], rows[2]], "faithfulness")
    assert same[1]["judge_changed"] is False and same[1]["change"] == 0.0
    assert all(p["judge"] is None for p in trend(rows, "answer_relevance"))  # no model of the run's choosing
    code, out, err = cli(["history", "--history", str(store), "--metric", "faithfulness"])
    assert code == 0, err
    assert out.count("judge changed") == 2 and SERVED in out, out
    # the trend drawn as a history report says where the judge changed
    code, out, err = cli(["history", "--history", str(store), "--metric", "faithfulness", "--json"])
    assert code == 0, err
    (tmp_path / "hist").mkdir()
    (tmp_path / "hist" / "history.json").write_text(out)
    code, _, err = cli(["report", str(tmp_path / "hist")])
    assert code == 0, err
    page = " ".join((tmp_path / "hist" / "report.md").read_text().split())
    assert f"changed at run #{rows[1]['id']} ({judged_runs['embedded_judge']}), #{rows[2]['id']}" in page, page[:2000]


def test_a_store_from_before_judges_were_recorded_gets_the_column(judged_runs, tmp_path):
    """A store whose runs table lacks ``judges`` (made by an earlier version) is read as rows without judges, and
    recording a run adds the column."""
    store = tmp_path / "old.sqlite"
    record_run(judged_runs["embedded"], None, path=store, cwd=tmp_path)
    with sqlite3.connect(store) as db:
        db.execute("ALTER TABLE runs DROP COLUMN judges")
    (old,) = list_runs(store)
    assert old["judges"] == {}
    record_run(judged_runs["served"], None, path=store, cwd=tmp_path)
    rows = list_runs(store)
    assert rows[0]["judges"] == {} and rows[1]["judges"]["faithfulness"] == SERVED_JUDGE
    points = trend(rows, "faithfulness")
    assert points[1]["judge_changed"] is False and points[1]["change"] == 0.0  # unknown judge: no change claimed


def test_the_llm_judge_is_named_by_its_provider_and_model():
    """``llm_judge`` is judged by the run's judge_model (the metadata ``describe_judge`` writes); a run without an
    LLM judge names none, and a measure no model judges has no judge."""
    from evaluations.results.measures import judged_by, judges_differ
    from evaluations.results.rundata import RunData, RunSummary

    def run(judge):
        return RunData(summary=RunSummary.model_validate({"run": {"judge_model": judge}}))

    served = run({"provider": "ollama", "name": "qwen2.5:7b", "base_url": "http://127.0.0.1:11434/v1"})
    embedded = run({"provider": "embedded", "name": "qwen2.5-coder-1.5b", "threshold": 0.5})
    assert judged_by("llm_judge", served) == judged_by("combined_correct", served) == "ollama:qwen2.5:7b"
    assert judges_differ("llm_judge", embedded, served) == ("embedded:qwen2.5-coder-1.5b", "ollama:qwen2.5:7b")
    assert judged_by("llm_judge", run(None)) is None and judges_differ("llm_judge", run(None), served) is None
    assert judged_by("ndcg@10", served) is None and judged_by("offline_correct", served) is None
