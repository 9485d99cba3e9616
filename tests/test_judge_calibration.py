"""The offline calibrated judge: shipped parameters vs the human labels of EVOUNA (NQ + TQ).

Every accuracy here is measured on rows the scored parameters were not fitted on: a refit on 3/4 of a fortieth
of the EVOUNA questions scored on the other quarter (compared with the cross-validated accuracy the shipped file
records), and the shipped parameters on the README main job's hand-labelled answers, which no fit ever sees
(compared with the figure judges/validation.json records for them). The refit on 7/8 of every EVOUNA question (it
embeds ~47k texts) is a benchmark: ``benchmarks/judge_accuracy.py --only offline_heldout``.

Embedding the sample's texts with MiniLM is nearly all of this module's time: every test on EVOUNA rows takes them
from ``sample`` (its texts embedded once, by the first fit, then read from the session's judge cache).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from evaluations.core.errors import EvaluationsError
from evaluations.judging.validation.calibrate import calibrate
from evaluations.cli.judges import commands
from evaluations.judging.labels.data import load_labelled
from evaluations.judging.correctness.nonanswer import screen
from evaluations.judging.correctness.offline import FEATURES, OfflineJudgeModel, feature_matrix
from evaluations.judging.basics.fitted import default_params_path

EVOUNA = Path(__file__).resolve().parents[2] / "shared" / "data" / "evouna"
NQ, TQ = EVOUNA / "NQ.jsonl.gz", EVOUNA / "TQ.jsonl.gz"
SHIPPED = Path(__file__).resolve().parents[1] / "judges" / "offline_judge.json"
VALIDATION = SHIPPED.with_name("validation.json")
MAIN_JOB = SHIPPED.parents[1] / "datasets" / "labels" / "main_job_answers.jsonl"


@pytest.fixture(scope="module")
def everything():
    return load_labelled(NQ) + load_labelled(TQ)


@pytest.fixture(scope="module")
def sample(everything):
    """Every 40th question of NQ + TQ with all its labelled answers (590 answers)."""
    questions = sorted({e.group for e in everything})[::40]
    keep = set(questions)
    return [e for e in everything if e.group in keep]


def test_shipped_params_file_describes_itself():
    assert default_params_path() == SHIPPED
    data = json.loads(SHIPPED.read_text())
    assert data["features"] == list(FEATURES)
    cv = data["cross_validation"]
    assert "GroupKFold" in cv["method"] and cv["accuracy"] >= 0.85
    assert cv["accuracy"] > cv["baselines_same_rows"]["keyword>0.7"] > cv["baselines_same_rows"]["exact_match"]
    weak = sum(1 for line in (SHIPPED.parents[1] / "datasets" / "labels" / "weak_answers.jsonl").open() if line.strip())
    assert data["training_data"]["examples"] == 13809 + 9690 + weak  # EVOUNA NQ + TQ (their README), weak labels
    controls = {c["category"]: c for c in data["controls"]["categories"]}
    assert set(controls) >= {"echo", "restatement", "heading", "refusal", "other_gold", "empty", "gold_bare",
                             "gold_sentence", "gold_detail", "paraphrase"}
    assert all(c["pass"] and c["rate"] >= 0.95 for c in controls.values())


def test_shipped_params_on_labelled_answers_they_were_never_fitted_on():
    """The README main job's answers (SmolLM2 on RepliQA, labelled by hand) are in no fit: the shipped parameters'
    accuracy on them, computed here against the labels, is the main-job figure judges/validation.json records."""
    shipped = json.loads(SHIPPED.read_text())
    assert MAIN_JOB.name not in shipped["training_data"]["files"]
    rows = load_labelled(MAIN_JOB)
    labels = np.array([e.label for e in rows])
    assert len(rows) >= 15 and 0 < labels.sum() < len(rows)  # both kinds of answer
    _, verdicts = OfflineJudgeModel.load().judge_batch([e.references for e in rows], [e.answer for e in rows],
                                                       questions=[e.question for e in rows],
                                                       answerable=[e.answerable for e in rows])
    recorded = json.loads(VALIDATION.read_text())["judges"]["offline_correct"]["main_job"]
    assert recorded["n"] == len(rows)
    assert recorded["accuracy"] == pytest.approx(float(np.mean(verdicts == labels)))


def test_calibrate_cross_validates_by_question_like_scikit_learn(sample):
    model = calibrate(sample, folds=5)
    cv = model.info["cross_validation"]
    assert cv["accuracy"] >= 0.85 and cv["accuracy"] > cv["baselines_same_rows"]["keyword>0.7"]
    assert model.info["training_data"]["examples"] == len(sample)
    # oracle: scikit-learn's own pipeline in the same question-grouped folds, fitted on the rows the non-answer
    # screen passes (one population here, so equal weights), the screen's verdict kept where it decided
    x = feature_matrix([e.references for e in sample], [e.answer for e in sample],
                       questions=[e.question for e in sample])
    y = np.array([e.label for e in sample])
    groups = np.array([e.group for e in sample])
    decided = np.array([screen(e.question, e.references, e.answer).decided for e in sample], dtype=object)
    passed = np.array([d is None for d in decided])
    assert 0 < (~passed).sum() < len(sample) / 4, "the screen decides some EVOUNA rows, not most"
    oof = np.empty(len(y), bool)
    for train, test in GroupKFold(n_splits=5).split(x, y, groups):
        train = train[passed[train]]
        pipe = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)).fit(x[train], y[train])
        oof[test] = np.where(passed[test], pipe.predict(x[test]), decided[test] == True)  # noqa: E712
    assert cv["accuracy"] == pytest.approx(float(np.mean(oof == y)), abs=2e-3)
    # final model = fit on every screened-in row; its probabilities agree with scikit-learn's
    reference = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)).fit(x[passed], y[passed])
    assert model.probability(x) == pytest.approx(reference.predict_proba(x)[:, 1], abs=1e-4)


def _first_of(sample, path: Path, n: int = 200) -> list:
    """The first ``n`` labelled answers of ``sample`` read from ``path`` (NQ or TQ): their embeddings were computed
    once, for the fits on ``sample`` above, and cached (the session's judge cache)."""
    return [e for e in sample if e.source.startswith(f"{path}:")][:n]


def test_calibrate_judge_cli_writes_a_loadable_file(tmp_path, sample):
    """200 labelled NQ answers and 200 TQ answers of ``sample`` through calibrate-judge."""
    out = tmp_path / "judge.json"
    files = []
    for name, rows in (("nq.jsonl", _first_of(sample, NQ)), ("tq.jsonl", _first_of(sample, TQ))):
        assert len(rows) == 200
        path = tmp_path / name
        path.write_text(
            "".join(
                json.dumps({"query": e.question, "generated_answer": e.answer, "reference_answer": list(e.references),
                            "label": e.label, "id": e.group}) + "\n"
                for e in rows
            )
        )
        files.append(str(path))
    command = {c.name: c for c in commands}["calibrate-judge"]
    result = CliRunner().invoke(command, [*files, "--out", str(out), "--folds", "4"])
    assert result.exit_code == 0, result.output
    assert "offline judge (CV)" in result.stdout and "keyword>0.7" in result.stdout
    model = OfflineJudgeModel.load(out)
    assert model.info["training_data"]["examples"] == 400
    assert model.info["training_data"]["files"] == ["nq.jsonl", "tq.jsonl"]
    prob, verdict = model.judge(["Wilhelm Conrad Röntgen"], "The first Nobel Prize in Physics went to Wilhelm Röntgen.")
    assert verdict and prob > 0.5
    prob, verdict = model.judge(["Scorpio"], "I'm sorry, I could not find any information about that.")
    assert not verdict and prob < 0.5


def test_missing_or_broken_params_file(tmp_path):
    with pytest.raises(EvaluationsError, match="not found") as err:
        OfflineJudgeModel.load(tmp_path / "absent.json")
    assert "calibrate-judge" in err.value.fix
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"features": ["containment", "magic"], "mean": [0, 0], "scale": [1, 1],
                                  "coef": [1, 1], "intercept": 0}))
    with pytest.raises(EvaluationsError, match="unknown features"):
        OfflineJudgeModel.load(broken)


def test_offline_and_semantic_evaluators_in_a_pydantic_evals_run():
    from pydantic_evals import Case, Dataset

    from evaluations.evaluators.answers import JudgeAgreement, OfflineJudge, SemanticSimilarity
    from evaluations.judging.correctness.semantic import semantic_similarity
    from evaluations.core.types import Answer, CaseMetadata, CaseOutput, RetrievalInputs

    rows = [e for e in load_labelled(TQ, limit=40) if e.system == "gpt4"]
    answers = {e.question: e.answer for e in rows}

    async def task(inputs: RetrievalInputs) -> CaseOutput:
        return CaseOutput(answer=Answer(answer=answers[inputs.query]))

    dataset = Dataset(
        name="evouna-tq-gpt4",
        cases=[
            Case(name=e.group, inputs=RetrievalInputs(query=e.question),
                 metadata=CaseMetadata(query_id=e.group, answers=list(e.references), label=e.label))
            for e in rows
        ],
        evaluators=[OfflineJudge(), SemanticSimilarity(threshold=0.6)],
        report_evaluators=[JudgeAgreement(resamples=100)],
    )
    report = dataset.evaluate_sync(task, progress=False)
    model = OfflineJudgeModel.load()
    judged = {e.group: model.judge(e.references, e.answer, question=e.question) for e in rows}  # once per answer
    for case, e in zip(sorted(report.cases, key=lambda c: c.name), sorted(rows, key=lambda e: e.group)):
        probability, verdict = judged[e.group]
        assert case.scores["offline_p_correct"].value == pytest.approx(probability, abs=1e-5)
        assert case.assertions["offline_correct"].value is verdict
        similarity = semantic_similarity(e.references, e.answer)
        assert case.scores["semantic_similarity"].value == pytest.approx(similarity, abs=1e-5)
        assert case.assertions["semantic_correct"].value is (similarity >= 0.6)
    table = next(a for a in report.analyses if a.type == "table")
    assert [r[0] for r in table.rows] == ["semantic_correct", "offline_correct"]
    offline_accuracy = float(table.rows[1][3].split()[0])
    expected = np.mean([judged[e.group][1] == e.label for e in rows])
    assert offline_accuracy == pytest.approx(expected, abs=5e-4)


def test_too_few_labels_to_calibrate_are_one_error_with_its_fix(tmp_path):
    """Labels of one kind, or fewer questions than folds: one error naming the file and what to do (it had no fix
    line)."""
    from conftest import assert_one_error
    from test_cli_retrieval import run_cli

    rows = load_labelled(NQ, limit=60)
    right = [e for e in rows if e.label][:12]
    path = tmp_path / "labels.jsonl"

    def write(examples):
        path.write_text("".join(json.dumps({"query": e.question, "generated_answer": e.answer, "label": e.label,
                                            "reference_answer": list(e.references), "id": e.group}) + "\n"
                                for e in examples))

    write(right)
    proc = run_cli("calibrate-judge", str(path), "--out", str(tmp_path / "judge.json"))
    assert_one_error(proc.returncode, proc.stderr, "labels.jsonl: calibration needs both correct and incorrect "
                     f"labelled answers (all {len(right)} are correct)",
                     "fix: add labelled answers of the other kind")
    mixed = [g for g in dict.fromkeys(e.group for e in rows) if len({e.label for e in rows if e.group == g}) == 2]
    picked = [e for e in rows if e.group in mixed[:3]]  # both kinds of label, three questions
    questions = len({e.group for e in picked})
    assert 2 <= questions < 5
    write(picked)
    proc = run_cli("calibrate-judge", str(path), "--out", str(tmp_path / "judge.json"))
    assert_one_error(proc.returncode, proc.stderr, f"only {questions} questions for 5-fold CV",
                     f"--folds {max(questions, 2)} or fewer")
    assert not (tmp_path / "judge.json").exists()


def _write_labelled(path: Path, examples) -> Path:
    """``examples`` (EVOUNA rows) as a labelled-answers JSONL file of calibrate-judge, the question id kept."""
    path.write_text("".join(json.dumps({"query": e.question, "generated_answer": e.answer, "label": e.label,
                                        "reference_answer": list(e.references), "id": e.group}) + "\n"
                            for e in examples))
    return path


def _passes_screen(e) -> bool:
    return screen(e.question, e.references, e.answer, answerable=e.answerable).passed


def test_one_class_left_after_the_non_answer_screen_is_one_error(tmp_path):
    """EVOUNA's right answers beside its wrong answers that the screen decides (non-answers): both labels are in
    the file, but the fit sees only the right ones. It was a scikit-learn traceback ("needs samples of at least 2
    classes"), exit 1; now one error with the rows left and their class, exit 2, nothing written."""
    from conftest import assert_one_error
    from test_cli_retrieval import run_cli

    rows = load_labelled(NQ, limit=3000)
    right = [e for e in rows[:200] if e.label and _passes_screen(e)]
    wrong = [e for e in rows if not e.label and not _passes_screen(e)]  # wrong answers the screen decides
    assert len({e.group for e in right}) >= 2 and len(wrong) >= 1
    out = tmp_path / "judge.json"
    proc = run_cli("calibrate-judge", str(_write_labelled(tmp_path / "labels.jsonl", right + wrong)),
                   "--out", str(out), "--folds", "2")
    assert_one_error(proc.returncode, proc.stderr,
                     f"labels.jsonl: after the non-answer screen, {len(right)} labelled answer(s) are left to fit on, "
                     f"all correct (the screen decided the other {len(wrong)}:",
                     "fix: add labelled wrong answers (label false) that are not refusals, empty answers or echoes")
    assert not out.exists()


def test_a_fold_whose_training_part_is_one_class_is_one_error(tmp_path):
    """Both labels overall, but leave-one-question-out on three questions, two answered only right and one only
    wrong: the fold testing the wrong one trains on right answers only. One error naming that fold's questions
    (it was a scikit-learn traceback), exit 2, nothing written."""
    from conftest import assert_one_error
    from test_cli_retrieval import run_cli

    rows = [e for e in load_labelled(NQ, limit=200) if _passes_screen(e)]
    by_question: dict[str, list] = {}
    for e in rows:
        by_question.setdefault(e.group, []).append(e)
    only_right = [g for g, es in by_question.items() if all(e.label for e in es)][:2]
    only_wrong = [g for g, es in by_question.items() if not any(e.label for e in es)][:1]
    assert len(only_right) == 2 and len(only_wrong) == 1
    picked = [e for g in only_right + only_wrong for e in by_question[g]]
    n_right = sum(len(by_question[g]) for g in only_right)
    out = tmp_path / "judge.json"
    proc = run_cli("calibrate-judge", str(_write_labelled(tmp_path / "labels.jsonl", picked)),
                   "--out", str(out), "--folds", "3")
    assert_one_error(proc.returncode, proc.stderr,
                     "labels.jsonl: question-grouped 3-fold CV: the training part of fold",
                     f"has {n_right} labelled answer(s) the non-answer screen passes, all correct "
                     f"(questions {', '.join(sorted(only_right))})",
                     "fix: add labelled answers of both kinds (label true and false) to more questions")
    assert not out.exists()


def test_calibrate_judge_writes_to_the_working_directory_not_the_shipped_file(tmp_path, monkeypatch, sample):
    """Without --out the offline judge's parameters go to ./offline_judge.json (they went to the checkout's
    judges/offline_judge.json, which every run reads, from any directory), or into $EVALUATIONS_JUDGES_DIR; the
    command says which file runs read. The labelled answers: 200 NQ answers of ``sample``."""
    shipped = SHIPPED.read_bytes()
    data = _write_labelled(tmp_path / "labels.jsonl", _first_of(sample, NQ))
    work, own = tmp_path / "work", tmp_path / "own"
    work.mkdir()
    own.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("EVALUATIONS_JUDGES_DIR", raising=False)
    command = {c.name: c for c in commands}["calibrate-judge"]
    result = CliRunner().invoke(command, [str(data), "--folds", "2", "--force"])
    assert result.exit_code == 0, result.output
    assert SHIPPED.read_bytes() == shipped
    assert OfflineJudgeModel.load(work / "offline_judge.json").info["training_data"]["examples"] == 200
    assert f"wrote {work / 'offline_judge.json'}\nruns read {SHIPPED}, not this file; to use it: set " \
           f"EVALUATIONS_JUDGES_DIR={work.resolve()}" in result.stdout
    monkeypatch.setenv("EVALUATIONS_JUDGES_DIR", str(own))
    result = CliRunner().invoke(command, [str(data), "--folds", "2", "--force"])
    assert result.exit_code == 0, result.output
    assert SHIPPED.read_bytes() == shipped
    assert (own / "offline_judge.json").is_file()
    assert f"wrote {own / 'offline_judge.json'}\nruns read this file" in result.stdout


def test_rows_without_gold_are_refused_before_the_offline_fit(tmp_path):
    """The offline judge compares the answer with the gold: labelled EVOUNA answers with their gold removed from
    some rows were fitted on as if those answers matched nothing. Now one error naming the rows, exit 2, nothing
    written (as judge-agreement refuses correctness judges on such rows)."""
    from conftest import assert_one_error
    from test_cli_retrieval import run_cli

    rows = [e for e in load_labelled(NQ, limit=200) if _passes_screen(e)][:40]
    path = _write_labelled(tmp_path / "labels.jsonl", rows)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for row in lines[3:5]:
        del row["reference_answer"]
    path.write_text("".join(json.dumps(row) + "\n" for row in lines))
    out = tmp_path / "judge.json"
    proc = run_cli("calibrate-judge", str(path), "--out", str(out), "--folds", "2")
    assert_one_error(proc.returncode, proc.stderr,
                     f"labels.jsonl:4: 2 of {len(lines)} rows have no gold answer ('reference_answer'), which the "
                     "judge(s) offline compare the answer with",
                     "fix: give each row 'reference_answer'")
    assert not out.exists()
