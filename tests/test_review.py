"""``evaluations review``: a person's labels of a sample correct a run's judged figure (issue 45).

The estimator is checked against ``ppi_py`` (the PPI++ authors' implementation) and against the textbook
stratified estimator written out here; the design, the sheets and the CLI on a real run folder: EVOUNA answers
judged by the real offline judge (``answers_run``), whose human labels play the person.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA


@pytest.fixture(scope="module")
def evouna_predictions(answers_run):
    """The real offline judge's P(correct) and verdicts on 80 EVOUNA NQ answers (the session's ``answers_run``),
    with their human labels."""
    records = [json.loads(line) for line in (answers_run / "cases.jsonl").read_text().splitlines()]
    p = np.array([r["judges"]["offline_p_correct"] for r in records], float)
    v = np.array([r["judges"]["offline_correct"] for r in records], float)
    return p, v, np.array([r["label"] for r in records], float)


@pytest.mark.parametrize("soft", [True, False], ids=["probabilities", "verdicts (ties)"])
def test_one_stratum_is_ppi_py_exactly(evouna_predictions, soft):
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    from evaluations.review.estimate import Stratum, stratified_ppi

    p, v, y = evouna_predictions
    f = p if soft else v
    labelled = np.random.default_rng(3).choice(len(y), 30, replace=False)
    ours = stratified_ppi([Stratum.of(f, f[labelled], y[labelled])], finite=False, ddof=0)
    point = float(np.squeeze(ppi_mean_pointestimate(y[labelled], f[labelled], f)))
    low, high = (float(np.squeeze(x)) for x in ppi_mean_ci(y[labelled], f[labelled], f, alpha=0.05))
    assert ours.estimate == pytest.approx(point, abs=1e-12)
    assert ours.ci95 == pytest.approx((max(0.0, low), min(1.0, high)), abs=1e-12)
    assert 0.0 <= ours.lam <= 1.0


def test_stratified_estimate_is_the_textbook_one(evouna_predictions):
    """λ = 0: the stratified mean of the labels, with the finite-population variance of stratified sampling."""
    from scipy.stats import norm

    from evaluations.review.estimate import Stratum, stratified_ppi

    p, v, y = evouna_predictions
    rng = np.random.default_rng(5)
    groups = [np.arange(0, 40), np.arange(40, len(y))]  # any split is a stratification; these have mixed labels
    strata, parts = [], []
    for members, n in zip(groups, (15, 15)):
        picked = rng.choice(members, n, replace=False)
        assert 0 < y[picked].mean() < 1  # labels that differ: the sample variance itself, no floor
        strata.append(Stratum.of(p[members], p[picked], y[picked]))
        parts.append((len(members), y[picked]))
    total = sum(size for size, _ in parts)
    mean = sum(size / total * labels.mean() for size, labels in parts)
    var = sum((size / total) ** 2 * (1 - len(labels) / size) * labels.var(ddof=1) / len(labels)
              for size, labels in parts)
    ours = stratified_ppi(strata, lam=0.0)
    assert ours.estimate == pytest.approx(mean, abs=1e-12)
    assert ours.se == pytest.approx(np.sqrt(var), abs=1e-12)
    half = norm.ppf(0.975) * np.sqrt(var)
    assert ours.ci95 == pytest.approx((max(0, mean - half), min(1, mean + half)), abs=1e-12)


def test_a_stratum_whose_labels_all_agree_still_has_a_variance():
    from evaluations.review.estimate import Stratum, stratified_ppi

    est = stratified_ppi([Stratum.of([1.0] * 100, [1.0] * 5, [1.0] * 5), Stratum.of([0.0] * 100, [0.0] * 5, [0.0] * 5)])
    assert est.estimate == 0.5
    assert est.ci95[0] < 0.5 < est.ci95[1]  # 10 labels that agree with the judge are no proof it is never wrong
    census = stratified_ppi([Stratum.of([1.0, 0.0], [1.0, 0.0], [1.0, 1.0])])
    assert census.estimate == 1.0 and census.ci95 == (1.0, 1.0)  # every case labelled: nothing left to estimate


def _run(answers_run: Path, tmp_path: Path, name: str = "run") -> Path:
    folder = tmp_path / name
    shutil.copytree(answers_run, folder)
    return folder


def _truth(folder: Path) -> dict[str, bool]:
    """The human labels EVOUNA gives these answers (the person of the simulation)."""
    return {json.loads(line)["name"]: json.loads(line)["label"]
            for line in (folder / "cases.jsonl").read_text().splitlines()}


def test_design_leans_to_unsure_cases_and_each_stratum_is_a_random_sample(answers_run, tmp_path):
    from evaluations.results.rundata import load_run
    from evaluations.review.design import MIN_LABELS, draw
    from evaluations.review.measures import MEASURES

    run = load_run(_run(answers_run, tmp_path))
    measure = MEASURES["accuracy"]
    design = draw(measure, run, seed=1)
    chosen = design.chosen(30)
    assert len(chosen) == len(set(chosen)) == 30
    sizes = {h: len(o) for h, o in design.orders.items()}
    taken = {h: sum(design.strata[c] == h for c in chosen) for h in sizes}
    assert all(taken[h] >= min(MIN_LABELS, sizes[h]) for h in sizes)
    rates = {h: taken[h] / sizes[h] for h in sizes}
    sure = [h for h in (0, 3) if h in rates]
    unsure = [h for h in (1, 2) if h in rates]
    assert unsure and max(rates[h] for h in unsure) > min(rates[h] for h in sure)
    # the judge's verdict splits the strata: yes-strata hold the judge's "correct" answers only
    for record in run.records:
        if (f := measure.predict(record, run)) is not None:
            assert (design.strata[record.name] in (0, 1)) == (f == 1.0)
    assert draw(measure, run, seed=1).chosen(30) == chosen
    assert draw(measure, run, seed=2).chosen(30) != chosen
    skipped = chosen[0]
    design.skipped.append(skipped)
    again = design.chosen(30)
    assert skipped not in again and len(again) == 30
    replaced = set(again) - set(chosen)
    assert {design.strata[c] for c in replaced} == {design.strata[skipped]}


def test_review_sheet_labels_back_corrected_summary_gate_history_compare(answers_run, tmp_path, cli):
    folder = _run(answers_run, tmp_path)
    sheet = tmp_path / "sheet.jsonl"
    config = tmp_path / "config.yaml"
    config.write_text(f"history:\n  path: {tmp_path / 'history.sqlite'}\n")
    code, out, err = cli(["review", str(folder), "--measure", "accuracy", "--n", "24", "--seed", "4",
                          "--out", str(sheet)])
    assert code == 0, err
    rows = [json.loads(line) for line in sheet.read_text().splitlines()]
    assert len(rows) == 24 and all(r["label"] is None and r["measure"] == "accuracy" for r in rows)
    assert {"case_id", "question", "context", "answer", "judge_verdict", "judge_p", "evidence"} <= set(rows[0])
    assert rows[0]["evidence"]["judge"] == "offline_correct" and rows[0]["evidence"]["gold_answers"]
    with sheet.with_suffix(".csv").open(newline="") as handle:
        assert [r["case_id"] for r in csv.DictReader(handle)] == [r["case_id"] for r in rows]

    truth = _truth(folder)
    half = len(rows) // 2
    sheet.write_text("".join(json.dumps({**r, "label": truth[r["case_id"]]}) + "\n" for r in rows[:half]) +
                     "".join(json.dumps(r) + "\n" for r in rows[half:]))
    code, out, err = cli(["review", str(folder), "--labels", str(sheet), "--config", str(config), "--json"])
    assert code == 0, err
    # the rest of the sheet, labelled in CSV (yes/no words), read back as well
    csv_sheet = tmp_path / "rest.csv"
    with csv_sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["case_id", "measure", "label"])
        writer.writeheader()
        for r in rows[half:]:
            writer.writerow({"case_id": r["case_id"], "measure": "accuracy", "label": "yes" if truth[r["case_id"]] else "no"})
    code, out, err = cli(["review", str(folder), "--labels", str(csv_sheet), "--config", str(config), "--json"])
    assert code == 0, err
    summary = json.loads((folder / "summary.json").read_text())
    entry = summary["corrected"]["accuracy"]
    assert json.loads(out)["corrected"]["accuracy"] == entry
    assert entry["n_labels"] == 24

    # the oracle: with a 0/1 judge inside strata split by its verdict, θ̂ = Σ_h W_h · (mean label in h) for every λ
    design = json.loads((folder / "review_design.json").read_text())["accuracy"]
    strata = design["strata"]
    estimate = 0.0
    for h in set(strata.values()):
        members = [c for c, s in strata.items() if s == h]
        labelled = [truth[r["case_id"]] for r in rows if strata[r["case_id"]] == h]
        estimate += len(members) / len(strata) * float(np.mean(labelled))
    if entry["strata"] == len(set(strata.values())):  # no stratum was merged for want of labels
        assert entry["estimate"] == pytest.approx(estimate, abs=1e-9)
    assert entry["ci95"][0] <= entry["estimate"] <= entry["ci95"][1]
    judged = [json.loads(line)["judges"]["offline_correct"] for line in (folder / "cases.jsonl").read_text().splitlines()]
    assert entry["judge_only"]["estimate"] == pytest.approx(np.mean(judged))
    labels = [truth[r["case_id"]] for r in rows]
    verdicts = [r["judge_verdict"] for r in rows]
    from sklearn.metrics import accuracy_score, cohen_kappa_score, recall_score

    assert entry["agreement"]["accuracy"] == pytest.approx(accuracy_score(labels, verdicts))
    assert entry["agreement"]["kappa"] == pytest.approx(cohen_kappa_score(labels, verdicts))
    assert entry["agreement"]["sensitivity"] == pytest.approx(recall_score(labels, verdicts))
    assert entry["agreement"]["specificity"] == pytest.approx(recall_score(labels, verdicts, pos_label=False))
    assert entry["labels_only"]["estimate"] == pytest.approx(np.mean(labels))

    # gate on the corrected lower bound; history keeps both figures; compare gives the corrected difference
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: corrected.accuracy.lo, min: 0.01}\n")
    assert cli(["gate", str(folder), "--rules", str(rules)])[0] == 0
    rules.write_text("rules:\n  - {metric: corrected.accuracy.lo, min: 0.999}\n")
    code, out, err = cli(["gate", str(folder), "--rules", str(rules)])
    assert code == 1 and "corrected.accuracy.lo" in out
    code, out, err = cli(["gate", str(answers_run), "--rules", str(rules)])
    assert code == 2 and "evaluations review" in err
    import sqlite3

    with sqlite3.connect(tmp_path / "history.sqlite") as db:
        stored = json.loads(db.execute("SELECT metrics FROM runs").fetchone()[0])
    assert stored["corrected.accuracy"] == pytest.approx(entry["estimate"])
    assert stored["corrected.accuracy.lo"] == pytest.approx(entry["ci95"][0])
    assert stored["offline_correct"] == pytest.approx(entry["judge_only"]["estimate"])
    other = _run(answers_run, tmp_path, "other")
    (other / "human_labels.jsonl").write_text((folder / "human_labels.jsonl").read_text())
    (other / "review_design.json").write_text((folder / "review_design.json").read_text())
    cli(["review", str(other), "--labels", str(csv_sheet), "--config", str(config)])
    code, out, err = cli(["compare", str(folder), str(other), "--json"])
    assert code == 0, err
    row = json.loads(out)["corrected"][0]
    assert row["measure"] == "accuracy" and row["difference"] == pytest.approx(0.0, abs=1e-12)
    assert row["ci95"][0] < 0 < row["ci95"][1]


def test_a_changed_label_is_said_and_bad_sheets_are_one_error(answers_run, tmp_path, cli):
    folder = _run(answers_run, tmp_path)
    sheet = tmp_path / "s.jsonl"
    assert cli(["review", str(folder), "--n", "5", "--out", str(sheet)])[0] == 0
    rows = [json.loads(line) for line in sheet.read_text().splitlines()]
    sheet.write_text("".join(json.dumps({**r, "label": True}) + "\n" for r in rows))
    assert cli(["review", str(folder), "--labels", str(sheet)])[0] == 0
    flipped = tmp_path / "flip.jsonl"
    flipped.write_text(json.dumps({**rows[0], "label": False}) + "\n")
    code, out, err = cli(["review", str(folder), "--labels", str(flipped)])
    assert code == 0 and "changed" in err and rows[0]["case_id"] in err
    lines = (folder / "human_labels.jsonl").read_text().splitlines()
    assert len(lines) == 6  # nothing is deleted: the change is a new line
    before = (folder / "human_labels.jsonl").read_bytes()
    for text, where in ((json.dumps({**rows[1], "label": "maybe"}) + "\n", ":1"),
                        (json.dumps(rows[1]) + "\n{not json\n", ":2"),
                        (json.dumps({**rows[1], "case_id": "no-such-case", "label": True}) + "\n", "")):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text)
        code, out, err = cli(["review", str(folder), "--labels", str(bad)])
        assert code == 2 and f"bad.jsonl{where}" in err and "fix:" in err and "Traceback" not in err
    assert (folder / "human_labels.jsonl").read_bytes() == before
    from evaluations.core.errors import EvaluationsError
    from evaluations.results.folder import RunFolder

    with pytest.raises(EvaluationsError, match="human_labels.jsonl"):  # a re-run never replaces a person's labels
        RunFolder.open(out=folder, resume=None, overwrite=True, name="again", identity={})
    code, out, err = cli(["review", str(folder), "--seed", "9", "--out", str(tmp_path / "x.jsonl")])
    assert code == 2 and "--seed 0" in err
    code, out, err = cli(["review", str(folder), "--measure", "faithfulness", "--out", str(tmp_path / "y.jsonl")])
    assert code == 2 and "no case" in err


def test_later_reviews_extend_the_same_sample(answers_run, tmp_path, cli):
    folder = _run(answers_run, tmp_path)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert cli(["review", str(folder), "--n", "10", "--out", str(first)])[0] == 0
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    first.write_text("".join(json.dumps({**r, "label": True}) + "\n" for r in rows))
    assert cli(["review", str(folder), "--labels", str(first)])[0] == 0
    assert cli(["review", str(folder), "--n", "10", "--out", str(second)])[0] == 0
    assert not second.exists()  # the sample of 10 is labelled: nothing to write
    assert cli(["review", str(folder), "--n", "20", "--out", str(second)])[0] == 0
    more = [json.loads(line)["case_id"] for line in second.read_text().splitlines()]
    assert len(more) == 10 and not set(more) & {r["case_id"] for r in rows}
    from evaluations.results.rundata import load_run
    from evaluations.review.design import Design

    design = Design.model_validate(json.loads((folder / "review_design.json").read_text())["accuracy"])
    assert set(design.chosen(20)) == set(more) | {r["case_id"] for r in rows}
    assert load_run(folder).summary.corrected is not None


def test_a_terminal_session_labels_skips_stops_and_goes_on(answers_run, tmp_path):
    """The session as a person has it: a real terminal (a pty), keys y / s / n / q, then a second session."""
    import os
    import pty
    import select
    import subprocess
    import sys
    import time

    from evaluations.review.labels import read_labels

    folder = _run(answers_run, tmp_path)
    env = {**os.environ, "COLUMNS": "60", "EVALUATIONS_HISTORY_PATH": str(tmp_path / "h.sqlite")}
    config = tmp_path / "config.yaml"
    config.write_text(f"history:\n  path: {tmp_path / 'history.sqlite'}\n")

    def session(keys: list[str]) -> str:
        leader, follower = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "evaluations", "review", str(folder), "--n", "4",
                                 "--config", str(config)], stdin=follower, stdout=follower, stderr=follower, env=env)
        os.close(follower)
        seen, pending, deadline, asked = b"", list(keys), time.monotonic() + 120, 0
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if pending and seen.count(b"label (y, n, s, q):") > asked:  # click's prompt: one key each time
                asked += 1
                os.write(leader, (pending.pop(0) + "\n").encode())
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
        assert proc.wait(timeout=60) == 0, seen.decode(errors="replace")
        return seen.decode(errors="replace")

    first = session(["y", "s", "n", "q"])
    assert "1 of 4" in first and "question" in first and "offline_correct" not in first.split("1 of 4")[0]
    labels = read_labels(folder)
    assert [lab.label for lab in labels] == [True, False] and {lab.source for lab in labels} == {"session"}
    design = json.loads((folder / "review_design.json").read_text())["accuracy"]
    assert len(design["skipped"]) == 1 and design["skipped"][0] not in {lab.case_id for lab in labels}
    second = session(["y", "y"])  # goes on: two more complete the sample of 4, then the figures
    labels = read_labels(folder)
    assert len(labels) == 4 and len({lab.case_id for lab in labels}) == 4
    assert "corrected" in second and "a person read 4" in second
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["corrected"]["accuracy"]["n_labels"] == 4


def test_a_re_run_after_labelling_keeps_the_corrected_figures_and_calls_no_model(tmp_path, cli):
    """A real run of a user's system (three questions, offline judge), labelled with review, then --resume: the
    summary written anew keeps ``corrected`` and no model is called."""
    import os

    from inprocess import run_evaluations

    root = Path(__file__).resolve().parents[1]
    rows = [{"id": "q1", "query": "Who wrote Dracula?", "answers": ["Bram Stoker"]},
            {"id": "q2", "query": "How many moons does Mars have?", "answers": ["two"]},
            {"id": "q3", "query": "What is the capital of Australia?", "answers": ["Canberra"]},
            {"id": "q4", "query": "Who painted the Mona Lisa?", "answers": ["Leonardo da Vinci"]}]
    answers = {"q1": "Bram Stoker wrote Dracula.", "q2": "Mars has no moons.", "q3": "Sydney.",
               "q4": "Leonardo da Vinci painted it."}
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": f"d{r['id']}", "text": r["query"]}) + "\n"
                                                   for r in rows))
    (tmp_path / "revsys.py").write_text(f"ANSWERS = {answers!r}\n\ndef answer(request):\n"
                                        "    return {'retrieved': [], 'answer': ANSWERS[request['case_id']]}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(tmp_path)]),
           "EVALUATIONS_CACHE_DIR": str(tmp_path / "cache")}
    run = ["run", str(tmp_path / "questions.jsonl"), "--corpus", str(tmp_path / "corpus.jsonl"), "--system",
           "revsys:answer", "--no-progress", "--name", "rev"]
    out = tmp_path / "out"
    proc = run_evaluations([*run, "--out", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sheet = tmp_path / "sheet.jsonl"
    assert cli(["review", str(out), "--n", "4", "--out", str(sheet)])[0] == 0
    truth = {"q1": True, "q2": False, "q3": False, "q4": True}  # read by hand against the gold answers
    sheet.write_text("".join(json.dumps({**json.loads(line), "label": truth[json.loads(line)["case_id"]]}) + "\n"
                             for line in sheet.read_text().splitlines()))
    config = tmp_path / "config.yaml"
    config.write_text(f"history:\n  path: {tmp_path / 'history.sqlite'}\n")
    assert cli(["review", str(out), "--labels", str(sheet), "--config", str(config)])[0] == 0
    before = json.loads((out / "summary.json").read_text())["corrected"]["accuracy"]
    judged = json.loads((out / "summary.json").read_text())["judging"]
    assert before["estimate"] == 0.5 and before["ci95"] == [0.5, 0.5]  # every case labelled: the labels' share
    proc = run_evaluations([*run, "--resume", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["corrected"]["accuracy"] == before
    calls = summary["model_calls"]
    assert calls["chat"]["live"] == 0 and calls["embed"]["live"] == 0
    assert summary["judging"] == judged  # no case judged again: the judges' figures are those of the first session
