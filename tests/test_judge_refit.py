"""calibrate-judge of the reference-free judges: a refit on labelled rows through the checker runs use.

Real model, real hand-labelled rows (``datasets/labels``, read from ``../shared/data``). The oracles:

* the refit's held-out accuracy is recomputed here with scikit-learn directly (GroupKFold, LogisticRegression on
  standardised features, the threshold of highest training accuracy) from the checker's P(yes);
* the "current" accuracy and the rows left out are what ``judge-agreement`` says on the same rows: the judges
  as runs apply them, a separate path;
* the labels and questions counted in the written file are read here from the label file with ``json``.

These are behaviour checks on a handful of labelled rows (4 context-relevance rows: the 2 questions of the file
with the shortest passages, two passages each; 4 faithfulness rows: the 2 supported and 2 unsupported ones of
the file with the shortest passages and answers, of 4 questions), not a measurement of a refit's accuracy: what
the fit on all the labelled rows scores is recorded in the shipped files (``judges/context_relevance.json`` and
``judges/faithfulness.json``, their ``validation``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import labels_beside_shared, short_context_labels

from evaluations.cli.judges import calibrate_judge, judge_agreement
from inprocess import run_evaluations

REPO = Path(__file__).resolve().parents[1]
FAITH_LABELS = REPO / "datasets" / "labels" / "faithfulness.jsonl"
N_CONTEXT = 4  # rows: conftest.short_context_labels, the 2 questions with the shortest passages, two passages each
CONTEXT_FOLDS = 2  # every training part of GroupKFold(2) on those 2 questions holds both labels
N_FAITH = 4  # labelled rows (short_faith_labels): 2 supported, 2 not, 4 questions
FAITH_FOLDS = 2  # every training part of the 2 folds holds both labels (a label's 2 questions spread over both)


def _agreement(path: Path, judge: str, limit: int, env: dict | None = None) -> dict:
    """judge-agreement's statistics of ``judge``, with ``examples``: the labelled rows it read."""
    result = CliRunner().invoke(judge_agreement, [str(path), "--judges", judge, "--limit", str(limit), "--json",
                                                  "--resamples", "0"], env=env)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    return {**payload["judges"][0], "examples": payload["examples"]}


def _oracle_threshold(p: np.ndarray, y: np.ndarray) -> float:
    grid = np.round(np.arange(0.01, 1.0, 0.01), 2)
    acc = np.array([((p >= t) == y).mean() for t in grid])
    best = grid[np.isclose(acc, acc.max())]
    return float(best[np.argmin(np.abs(best - 0.5))])


def _oracle_fit(x: np.ndarray, y: np.ndarray):
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=1.0, max_iter=2000).fit((x - mean) / scale, y.astype(int))

    def prob(z: np.ndarray) -> np.ndarray:
        return model.predict_proba((z - mean) / scale)[:, 1]

    return prob, _oracle_threshold(prob(x), y)


@pytest.fixture(scope="module")
def short_faith_labels(tmp_path_factory) -> Path:
    """The hand-labelled rows of ``datasets/labels/faithfulness.jsonl`` that cost the checker least: of the rows
    with a label, by the characters of their passages and answer (each prompt token costs the 1.5B model time), the
    first 2 supported and the first 2 unsupported rows of distinct questions (~1,500 characters of passages in all;
    the file's first 4 labelled rows read ~5,000). Copied verbatim as ``root/repo/datasets/labels/faithfulness.jsonl``
    beside ``root/shared`` (a link to the shared data), where a labels file finds the data its rows refer to."""
    from evaluations.judging.labels.passage_rows import load_passage_rows

    lines = FAITH_LABELS.read_text(encoding="utf-8").splitlines()
    rows = sorted(load_passage_rows(FAITH_LABELS), key=lambda r: sum(map(len, r.passages)) + len(r.answer or ""))
    kept: dict[bool, list] = {True: [], False: []}
    questions: set[str] = set()
    for row in rows:
        if len(kept[row.label]) < 2 and row.group not in questions:
            kept[row.label].append(row)
            questions.add(row.group)
    picked = sorted(int(r.source.rsplit(":", 1)[1]) for r in kept[True] + kept[False])  # 1-based file lines
    assert len(picked) == N_FAITH and len(questions) == N_FAITH, picked
    labels = labels_beside_shared(tmp_path_factory.mktemp("faith_labels"), "faithfulness.jsonl",
                                  [lines[n - 1] for n in picked])
    assert sorted(json.loads(lines[n - 1])["label"] for n in picked) == [False, False, True, True]
    return labels


@pytest.fixture(scope="module")
def context_labels(tmp_path_factory) -> Path:
    """``conftest.short_context_labels``: N_CONTEXT hand-labelled rows as a labels file of their own."""
    return short_context_labels(tmp_path_factory.mktemp("context_labels"))


@pytest.fixture(scope="module")
def context_rows(context_labels):
    """(questions, passages, labels, groups) of the N_CONTEXT labelled pairs, and the checker's P(yes)."""
    from evaluations.judging.grounded import context_relevance as cr
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.labels.passage_rows import load_passage_rows

    rows = load_passage_rows(context_labels, limit=N_CONTEXT)
    wording = cr.params().wording
    p = np.array([cr.ask(r.question, r.passages[0], wording, cache=VerdictCache())[0] for r in rows])
    x = np.array([cr.features(r.question, r.passages[0], pi) for r, pi in zip(rows, p)])
    raw = [json.loads(line) for line in context_labels.read_text().splitlines()]
    y = np.array([bool(r["label"]) for r in raw])
    groups = np.array([r["question_ref"]["key"] for r in raw])
    return x, y, groups


def test_context_relevance_refit_is_cross_validated_like_scikit_learn_and_runs_read_it(context_rows, context_labels,
                                                                                      tmp_path, monkeypatch):
    from sklearn.model_selection import GroupKFold

    from evaluations.judging.grounded import context_relevance as cr
    from evaluations.judging.grounded import faithfulness as fa

    x, y, groups = context_rows
    pooled = np.zeros(len(y), bool)
    for train, test in GroupKFold(n_splits=CONTEXT_FOLDS).split(x, groups=groups):
        prob, threshold = _oracle_fit(x[train], y[train])
        pooled[test] = prob(x[test]) >= threshold
    expected_cv = float((pooled == y).mean())
    current = _agreement(context_labels, "context_relevance", N_CONTEXT)

    folder = tmp_path / "judges"
    folder.mkdir()
    out = folder / "context_relevance.json"
    args = [str(context_labels), "--judges", "context_relevance", "--limit", str(N_CONTEXT), "--folds",
            str(CONTEXT_FOLDS), "--out", str(out)]
    first = CliRunner().invoke(calibrate_judge, args)
    better = expected_cv >= current["accuracy"]["value"]
    assert first.exit_code == (0 if better else 1), first.output
    assert out.exists() == better  # worse than the current parameters: nothing written without --force
    if not better:
        assert "nothing written" in first.stderr
        result = CliRunner().invoke(calibrate_judge, [*args, "--force"])
        assert result.exit_code == 0, result.output
        assert "WORSE" in result.stderr

    doc = json.loads(out.read_text())
    validation = doc["validation"]
    assert validation["refit_cv"]["accuracy"] == pytest.approx(expected_cv, abs=1e-4)
    assert validation["refit_cv"]["n"] == N_CONTEXT
    assert validation["previous_parameters_same_rows"]["accuracy"] == pytest.approx(
        current["accuracy"]["value"], abs=1e-4)
    assert doc["training_data"]["rows"] == N_CONTEXT
    assert doc["training_data"]["positive"] == int(y.sum())
    assert doc["training_data"]["questions"] == len(set(groups.tolist()))
    assert doc["checker"].startswith("embedded (checker id ")
    assert doc["written_by"] == "evaluations calibrate-judge --judges context_relevance"  # the default checker

    # runs read the refit from $EVALUATIONS_JUDGES_DIR; a file the folder does not hold is the shipped one
    prob, threshold = _oracle_fit(x, y)
    expected_in_sample = float(((prob(x) >= threshold) == y).mean())
    env = {"EVALUATIONS_JUDGES_DIR": str(folder)}
    refitted = _agreement(context_labels, "context_relevance", N_CONTEXT, env=env)
    assert refitted["accuracy"]["value"] == pytest.approx(expected_in_sample, abs=1e-6)
    assert cr.params(out).threshold == pytest.approx(threshold)
    fitted = cr.params(out)
    assert np.allclose(fitted.probability(x), prob(x), atol=1e-3)
    monkeypatch.setenv("EVALUATIONS_JUDGES_DIR", str(folder))
    assert cr.params().coef == fitted.coef
    assert fa.params_path().parent != folder  # the folder holds no faithfulness.json: the shipped one
    assert fa.load_params().coef == json.loads((REPO / "judges" / "faithfulness.json").read_text())["coef"]


def test_faithfulness_refit_leaves_out_what_judge_agreement_leaves_out(short_faith_labels, tmp_path):
    """``short_faith_labels`` and two rows the judge does not apply to: the refit trains on the rows
    judge-agreement counts, says how many it left out, and records the current parameters' accuracy on them."""
    from evaluations.judging.grounded.faithfulness import load_params

    # two labelled rows the judge does not apply to: an echo of the question, an answer with no passage
    extra = _rows(tmp_path / "extra.jsonl", [
        {"id": "x1", "query": "Who wrote the novel Middlemarch?", "context": ["Middlemarch is a novel by George "
         "Eliot, published in 1871."], "generated_answer": "Who wrote the novel Middlemarch?", "label": False},
        {"id": "x2", "query": "When was the Eiffel Tower finished?", "context": [],
         "generated_answer": "It was finished in 1889.", "label": True},
    ])
    files = [str(short_faith_labels), str(extra)]
    result = CliRunner().invoke(judge_agreement, [*files, "--judges", "faithfulness", "--limit", str(N_FAITH),
                                                  "--json", "--resamples", "0"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    current = payload["judges"][0]
    left_out = payload["examples"] - current["n"]
    assert left_out >= 2

    out = tmp_path / "faithfulness.json"
    result = CliRunner().invoke(calibrate_judge, [*files, "--judges", "groundedness", "--limit", str(N_FAITH),
                                                  "--folds", str(FAITH_FOLDS), "--out", str(out), "--force"])
    assert result.exit_code == 0, result.output
    info = json.loads(out.read_text())["info"]
    assert info["training_data"]["rows"] == current["n"]
    assert info["training_data"]["not_applicable_rows_left_out"] == left_out
    assert f"{left_out} labelled row(s) left out" in result.stdout
    assert info["validation"]["previous_parameters_same_rows"]["accuracy"] == pytest.approx(
        current["accuracy"]["value"], abs=1e-4)
    assert info["checker"].startswith("embedded")
    params = load_params(out)
    shipped = load_params()
    assert (params.ask, params.top_m, params.features) == (shipped.ask, shipped.top_m, shipped.features)
    assert params.coef != shipped.coef


def _rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_evaluations(["calibrate-judge", *args], capture_output=True,
                          text=True, timeout=300)


def test_bad_rows_are_one_error_before_any_model_call(tmp_path):
    many = _rows(tmp_path / "many.jsonl", [
        {"query": "q1", "context": ["a passage"], "label": True},
        {"query": "q2", "context": ["one passage", "and another"], "label": False},
    ])
    bad = _cli(str(many), "--judges", "context_relevance", "--out", str(tmp_path / "x.json"))
    assert bad.returncode == 2, bad.stderr
    assert f"{many}:2" in bad.stderr and "one row per passage" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (tmp_path / "x.json").exists()

    few = _rows(tmp_path / "few.jsonl", [{"query": f"q{i}", "context": [""], "label": i % 2 == 0} for i in range(8)])
    bad = _cli(str(few), "--judges", "context_relevance", "--out", str(tmp_path / "x.json"))
    assert bad.returncode == 2, bad.stderr
    assert "too few labelled rows" in bad.stderr and "8 not applicable" in bad.stderr
    assert not (tmp_path / "x.json").exists()


def test_a_run_is_told_when_parameters_belong_to_another_checker(tmp_path, monkeypatch):
    """The checker a refit records decides the note: parameters fitted through a served model, read by a run that
    asks the embedded model, get a note; the same checker gets none; the shipped files count as embedded."""
    from evaluations.judging.validation.refit import checker_note, fitted_through

    for name, checker in (("context_relevance", "openai:qwen15"), ("context_relevance_served", "openai:qwen3"),
                          ("faithfulness_served", "openai:qwen3")):
        doc = json.loads((REPO / "judges" / f"{name}.json").read_text())
        doc["checker"] = f"{checker} (checker id 0123456789abcdef)"
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    monkeypatch.setenv("EVALUATIONS_JUDGES_DIR", str(tmp_path))
    assert fitted_through("context_relevance") == "openai:qwen15"
    assert fitted_through("context_relevance", "context_relevance_served.json") == "openai:qwen3"
    assert fitted_through("faithfulness") == "embedded"  # not in the folder: the shipped file
    # a served checker reads context relevance's served file (the conversation form), the embedded one the other
    assert checker_note("context_relevance", "openai:qwen3") is None
    note = checker_note("context_relevance", "openai:qwen15")
    assert note is not None and "fitted through openai:qwen3, the verdicts come from openai:qwen15" in note
    note = checker_note("context_relevance", "embedded")
    assert note is not None and "fitted through openai:qwen15, the verdicts come from embedded" in note
    assert checker_note("faithfulness", "embedded") is None
    assert checker_note("faithfulness", "openai:qwen3") is None  # a served checker reads faithfulness_served.json
    assert "--judges faithfulness --judge ollama:llama3" in checker_note("faithfulness", "ollama:llama3")


def test_folds_spread_a_label_that_group_k_fold_gathers_in_one_fold():
    """GroupKFold (scikit-learn, the oracle here) puts both positive questions in one fold, so that fold's training
    rows hold negatives only and nothing can be fitted on them; the refit's folds then spread each label's questions
    (StratifiedGroupKFold), still keeping each question in one fold. A label given to one question only cannot be
    spread: one error naming the file."""
    from types import SimpleNamespace

    from sklearn.model_selection import GroupKFold

    from evaluations.core.errors import EvaluationsError
    from evaluations.judging.validation.refit import _folds

    sizes = {"a": 2, "b": 1, "c": 3, "d": 3, "e": 3, "f": 3, "g": 2, "h": 2, "i": 2, "j": 2}
    groups = np.array([g for g, n in sizes.items() for _ in range(n)])
    examples = [SimpleNamespace(source=f"labels.jsonl:{i}") for i in range(len(groups))]
    y = np.isin(groups, ["e", "g"])
    assert any(len(set(y[train].tolist())) < 2 for train, _ in GroupKFold(n_splits=5).split(groups, y, groups))

    trains = _folds("context_relevance", examples, y, groups, 5, seed=0)
    assert len(trains) == 5 and all(set(y[t].tolist()) == {True, False} for t in trains)
    held_out = np.sum([~t for t in trains], axis=0)
    assert (held_out == 1).all()  # every row is held out exactly once
    assert all(not set(groups[t].tolist()) & set(groups[~t].tolist()) for t in trains)  # questions kept whole

    with pytest.raises(EvaluationsError) as err:
        _folds("context_relevance", examples, np.isin(groups, ["c", "d"]) & (groups == "c"), groups, 5, seed=0)
    assert err.value.where == "labels.jsonl" and "lower --folds" in err.value.fix
