"""Judge-agreement statistics (scikit-learn as the oracle), the loaders, malformed input, and the CLI."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import accuracy_score, cohen_kappa_score, precision_recall_fscore_support

from evaluations.core.errors import EvaluationsError
from evaluations.judging.correctness import lexical
from evaluations.judging.validation.agreement import agreement, bootstrap_ci, confusion, metrics, run_judges
from evaluations.cli.judges import commands
from evaluations.judging.labels.data import load_labelled
from inprocess import run_evaluations

EVOUNA = Path(__file__).resolve().parents[2] / "shared" / "data" / "evouna"
NQ, TQ = EVOUNA / "NQ.jsonl.gz", EVOUNA / "TQ.jsonl.gz"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def nq_2000():
    return load_labelled(NQ, limit=2000)


def _oracle(labels, verdicts) -> dict[str, float]:
    """scikit-learn's statistics; a 0/0 is undefined (NaN), as ours: never the 0 of ``zero_division=0``."""
    p, r, f, _ = precision_recall_fscore_support(labels, verdicts, average="binary", pos_label=True,
                                                 zero_division=np.nan)
    return {
        "accuracy": accuracy_score(labels, verdicts),
        "precision": p,
        "recall": r,
        "f1": f,
        "kappa": cohen_kappa_score(labels, verdicts),
    }


@pytest.mark.parametrize("rule", ["keyword", "containment", "em", "f1"])
def test_statistics_match_scikit_learn_on_real_verdicts(nq_2000, rule):
    judge = {
        "keyword": lexical.keyword_correct,
        "containment": lexical.containment,
        "em": lexical.exact_match,
        "f1": lambda r, a: lexical.token_f1(r, a) >= 0.5,
    }[rule]
    labels = [e.label for e in nq_2000]
    verdicts = [judge(e.references, e.answer) for e in nq_2000]
    ours = {k: float(v) for k, v in metrics(confusion(labels, verdicts)).items()}
    assert ours == pytest.approx(_oracle(labels, verdicts), abs=1e-12)


def test_statistics_edge_cases_match_scikit_learn():
    labels = [True, False, True, False, True]
    for verdicts in ([False] * 5, [True] * 5, [True, False, True, False, True], [False, True, False, True, False]):
        ours = {k: float(v) for k, v in metrics(confusion(labels, verdicts)).items()}
        assert ours == pytest.approx(_oracle(labels, verdicts), abs=1e-12, nan_ok=True)
    # nobody says correct: precision, recall, F1 and κ are all 0/0, undefined
    ours = {k: float(v) for k, v in metrics(confusion([False] * 4, [False] * 4)).items()}
    assert ours == pytest.approx(_oracle([False] * 4, [False] * 4), nan_ok=True) and np.isnan(ours["f1"])


def test_bootstrap_resamples_whole_questions(nq_2000):
    labels = np.array([e.label for e in nq_2000])
    verdicts = np.array([lexical.keyword_correct(e.references, e.answer) for e in nq_2000])
    groups = np.array([e.group for e in nq_2000])
    result = agreement("keyword", labels, verdicts, groups, resamples=1000, seed=7)
    for m in ("accuracy", "precision", "recall", "f1", "kappa"):
        lo, hi = result.ci[m]
        assert lo <= result.values[m] <= hi and hi - lo < 0.15
    assert result.ci == agreement("keyword", labels, verdicts, groups, resamples=1000, seed=7).ci  # seeded
    # one cluster: every resample is the whole data set, so the interval collapses onto the value
    one = bootstrap_ci(labels, verdicts, ["q"] * len(labels), resamples=50)
    assert one["accuracy"] == pytest.approx((result.values["accuracy"],) * 2)
    # answers of one question are correlated: the per-question interval is wider than the per-answer one
    per_answer = bootstrap_ci(labels, verdicts, np.arange(len(labels)).astype(str), resamples=1000, seed=7)
    width = lambda ci: ci["accuracy"][1] - ci["accuracy"][0]  # noqa: E731
    assert width(result.ci) > width(per_answer)


def test_evouna_loader_counts_and_filters():
    nq, tq = load_labelled(NQ), load_labelled(TQ)
    assert len(tq) == 9690 and sum(e.label for e in tq) == 8221  # the README's counts
    assert len(nq) == 13809 and sum(e.label for e in nq) == 10119
    assert all(e.references and e.group for e in nq + tq)
    empty = {(e.source.rsplit(":", 1)[1], e.system): e.label for e in nq if e.answer == ""}
    assert empty == {("1815", "fid"): False, ("2707", "newbing"): True, ("3266", "newbing"): True}  # 1815: null, kept


def _classic_rows(examples) -> list[dict]:
    return [
        {
            "query": e.question,
            "context": "",
            "generated_answer": e.answer,
            "reference_answer": list(e.references),
            "label": ["incorrect", "correct"][e.label] if i % 3 == 0 else (int(e.label) if i % 3 == 1 else e.label),
        }
        for i, e in enumerate(examples)
    ]


def test_classic_jsonl_and_csv_loaders(tmp_path, nq_2000):
    rows = _classic_rows(nq_2000[:50])
    jsonl = tmp_path / "labelled.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    csv_path = tmp_path / "labelled.csv"
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**r, "reference_answer": json.dumps(r["reference_answer"])} for r in rows)
    for path in (jsonl, csv_path):
        loaded = load_labelled(path)
        assert [(e.references, e.answer, e.label) for e in loaded] == [
            (e.references, e.answer, e.label) for e in nq_2000[:50]
        ]


@pytest.mark.parametrize(
    "content, where, what",
    [
        ('{"query": "q", "generated_answer": "a", "reference_answer": "a", "label": true}\n{"query": "q"}\n',
         ":2", "missing field 'generated_answer'"),
        ('{"query": "q", "generated_answer": "a", "reference_answer": "a", "label": "maybe"}\n', ":1: field 'label'",
         "'maybe' is not a correctness label"),
        ('{"query": "q", "generated_answer": "a", "reference_answer": "a", "label": 1}\n{"query": \n', ":2",
         "not valid JSON"),
        ('{"query": "q", "generated_answer": "a", "reference_answer": 3, "label": 1}\n', ":1",
         "field 'reference_answer' must be a string or a list"),
    ],
)
def test_malformed_classic_rows_name_file_line_and_field(tmp_path, content, where, what):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(EvaluationsError) as err:
        load_labelled(path)
    assert err.value.where == f"{path}{where}" and what in err.value.message


def test_malformed_evouna_row_and_missing_file(tmp_path):
    with gzip.open(TQ, "rt") as handle:
        rows = [json.loads(next(handle)) for _ in range(3)]
    rows[2]["judge_gpt4"] = "nan"  # the upstream TQ glitch the shared copy fixed
    path = tmp_path / "tq_bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(EvaluationsError) as err:
        load_labelled(path)
    assert err.value.where == f"{path}:3" and "'judge_gpt4'" in err.value.message
    with pytest.raises(EvaluationsError, match="file not found"):
        load_labelled(tmp_path / "nope.jsonl")


def test_cli_judge_agreement_json_matches_library(nq_2000):
    command = {c.name: c for c in commands}["judge-agreement"]
    result = CliRunner().invoke(
        command, [str(NQ), str(TQ), "--judges", "keyword,em,containment", "--limit", "300", "--json",
                  "--resamples", "100"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["examples"] == 600 and [j["judge"] for j in payload["judges"]] == ["keyword", "em", "containment"]
    examples = load_labelled(NQ, limit=300) + load_labelled(TQ, limit=300)
    expected = run_judges(examples, ["keyword"], resamples=100)[0].to_dict()
    assert payload["judges"][0] == {**expected, "failed": 0, "not_applicable": 0}  # every row judged
    labels = [e.label for e in examples]
    verdicts = [lexical.keyword_correct(e.references, e.answer) for e in examples]
    assert payload["judges"][0]["kappa"]["value"] == pytest.approx(cohen_kappa_score(labels, verdicts), abs=1e-6)


def test_cli_table_and_errors():
    command = {c.name: c for c in commands}["judge-agreement"]
    result = CliRunner().invoke(command, [str(TQ), "--judges", "keyword,f1", "--limit", "200", "--resamples", "50"])
    assert result.exit_code == 0 and "κ" in result.stdout
    rows = load_labelled(TQ, limit=200)
    accuracy = sum(lexical.keyword_correct(e.references, e.answer) == e.label for e in rows) / len(rows)
    keyword_line = next(line for line in result.stdout.splitlines() if line.strip().startswith("keyword"))
    assert keyword_line.split()[1] == f"{accuracy:.3f}"
    # through the real entry point: one message, exit code 2, no traceback
    bad = run_evaluations(["judge-agreement", str(TQ), "--judges", "keyword,llama"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert bad.returncode == 2 and "unknown judge(s) llama" in bad.stderr and "Traceback" not in bad.stderr


def test_passage_rows_nothing_to_compare_is_one_error_and_rows_not_judged_are_said(tmp_path):
    """An empty file or one whose labels are all null is an error (exit 2), not a table of zeros; rows a
    reference-free judge does not apply to (an empty answer, no passage) are n/a, never an accuracy of 0."""
    with gzip.open(TQ, "rt") as handle:
        question = json.loads(next(handle))["question"]
    empty, nulls, inapplicable = (tmp_path / f"{n}.jsonl" for n in ("empty", "nulls", "inapplicable"))
    empty.write_text("")
    nulls.write_text(json.dumps({"query": question, "context": ["a passage"], "generated_answer": "x",
                                 "label": None}) + "\n")
    inapplicable.write_text("".join(json.dumps(r) + "\n" for r in (
        {"query": question, "context": [], "generated_answer": "Paris", "label": True},
        {"query": question, "context": [], "generated_answer": "", "label": False})))
    for path, what in ((empty, "no labelled rows found"), (nulls, "all 1 rows are labelled null")):
        bad = run_evaluations(["judge-agreement", str(path), "--judges",
                              "faithfulness"], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert bad.returncode == 2 and what in bad.stderr and str(path) in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr
    command = {c.name: c for c in commands}["judge-agreement"]
    args = [str(inapplicable), "--judges", "faithfulness,context_relevance", "--resamples", "20"]
    table = CliRunner().invoke(command, args)
    assert table.exit_code == 0, table.output
    line = next(x for x in table.stdout.splitlines() if x.strip().startswith("faithfulness"))
    assert line.split()[1:] == ["n/a"] * 6 + ["0"]
    assert "faithfulness: 2 of 2 rows not judged" in table.stdout
    assert "2 answers, 1 questions" in " ".join(table.stdout.split())  # rows without an id: grouped by question
    assert "context_relevance: 2 of 2 rows not judged (not applicable: no passage)" in table.stdout
    payload = json.loads(CliRunner().invoke(command, [*args, "--json"]).stdout)
    for judge in payload["judges"]:
        assert judge["n"] == 0 and judge["accuracy"]["value"] is None and judge["judge_positive_rate"] is None
