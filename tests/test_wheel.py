"""The built wheel works on its own: installed (not editable) in a new venv that cannot see this checkout,
it reads its rubric and fitted judge parameters as package data and runs ``judge-agreement`` and a small
``beir`` run.

The new venv reuses the big dependencies of ``.venv`` through a ``.pth`` line (``.pth`` files inside that
folder, such as the editable install's, are not processed), so nothing is downloaded.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from conftest import DATA, write_scifact_subset
from sklearn.metrics import accuracy_score, cohen_kappa_score

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("answer_equivalence.md", "offline_judge.json")


def _run(args: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
         ) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)
    assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """(the new venv, an empty working folder, the environment to run it in)."""
    root = tmp_path_factory.mktemp("wheel")
    # build from a copy holding only what a clone has for the package (symlinks kept), not in the checkout
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("evaluations", "judges"):
        shutil.copytree(REPO / name, src / name, symlinks=True, ignore=ignore)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", str(root / "dist"), str(src)], cwd=root)
    (wheel,) = (root / "dist").glob("evaluations-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for name in SHIPPED:
            assert archive.read(f"evaluations/judging/resources/{name}") == (REPO / "judges" / name).read_bytes()

    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=root).stdout.strip())
    shared = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "reuse_dev_venv.pth").write_text("".join(f"{p}\n" for p in sorted(shared)))
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
          str(wheel)], cwd=root)
    work = root / "work"
    work.mkdir()
    # the judges' cache of the suite (EVALUATIONS_CACHE_DIR) is not passed on: the wheel's is in its data home
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and k not in ("VIRTUAL_ENV", "EVALUATIONS_CACHE_DIR")}
    env.update(XDG_DATA_HOME=str(root / "data"), EVALUATIONS_LLM_THREADS="1", HF_HUB_OFFLINE="1")
    return venv, work, env


def test_installed_wheel_reads_its_package_data(wheel_venv):
    venv, work, env = wheel_venv
    probe = ("import json, evaluations; "
             "from evaluations.judging.correctness import llm; from evaluations.judging.basics import fitted, shipped; "
             "print(json.dumps({'package': evaluations.__file__, 'params': str(fitted.default_params_path()), "
             "'rubric': llm.load_rubric(), 'checkout': str(shipped.checkout_judges_dir()), "
             "'calibrate_out': str(fitted.default_output_path())}))")
    found = json.loads(_run([str(venv / "bin" / "python"), "-c", probe], cwd=work, env=env).stdout)
    site = venv.resolve()
    assert Path(found["package"]).resolve().is_relative_to(site)  # the wheel, not this checkout
    assert Path(found["params"]).resolve().is_relative_to(site)
    assert found["rubric"] == (REPO / "judges" / "answer_equivalence.md").read_text(encoding="utf-8").strip()
    assert found["checkout"] == "None"
    assert found["calibrate_out"] == str(work / "offline_judge.json")  # never into site-packages

    # in this checkout (editable install) the same code reads and writes the repository's judges/
    from evaluations.judging.basics.fitted import default_output_path, default_params_path

    assert default_params_path() == default_output_path() == REPO / "judges" / "offline_judge.json"


def test_judge_agreement_from_the_wheel(wheel_venv, tmp_path):
    """The offline judge with the packaged parameters agrees with the checkout's, checked by scikit-learn."""
    from evaluations.judging.labels.data import load_labelled
    from evaluations.judging.correctness.offline import OfflineJudgeModel

    venv, work, env = wheel_venv
    labelled = tmp_path / "evouna_nq_12.jsonl"  # 12 questions, each with the answers of several systems
    with gzip.open(DATA / "evouna" / "NQ.jsonl.gz", "rt", encoding="utf-8") as handle:
        labelled.write_text("".join(next(handle) for _ in range(12)), encoding="utf-8")
    proc = _run([str(venv / "bin" / "evaluations"), "judge-agreement", str(labelled), "--judges", "em,offline",
                 "--json", "--resamples", "20"], cwd=work, env=env)
    result = {j["judge"]: j for j in json.loads(proc.stdout)["judges"]}

    examples = load_labelled(labelled)
    labels = np.array([e.label for e in examples])
    # the checkout's parameters on the MiniLM embeddings the wheel's run cached (no second model load)
    cache = Path(env["XDG_DATA_HOME"]) / "evaluations" / "cache" / "judge_embeddings.sqlite"
    assert cache.is_file()
    _, verdicts = OfflineJudgeModel.load(REPO / "judges" / "offline_judge.json").judge_batch(
        [e.references for e in examples], [e.answer for e in examples], cache_path=cache,
        questions=[e.question for e in examples], answerable=[e.answerable for e in examples])
    assert result["offline"]["n"] == len(examples) >= 30 and 0 < labels.mean() < 1
    assert result["offline"]["accuracy"]["value"] == pytest.approx(accuracy_score(labels, verdicts), abs=1e-6)
    assert result["offline"]["kappa"]["value"] == pytest.approx(cohen_kappa_score(labels, verdicts), abs=1e-6)


def test_beir_fts_run_from_the_wheel(wheel_venv, tmp_path):
    venv, work, env = wheel_venv
    folder = write_scifact_subset(tmp_path / "scifact", 5, 20)
    out = tmp_path / "out"
    proc = _run([str(venv / "bin" / "evaluations"), "beir", str(folder), "--search-mode", "fts", "--skip-qa",
                 "--db", str(tmp_path / "db"), "--out", str(out), "--no-progress", "--json", "--k", "1,10"],
                cwd=work, env=env)
    summary = json.loads(proc.stdout)
    assert summary == json.loads((out / "summary.json").read_text())
    assert summary["counts"]["cases"] == 5 and summary["counts"]["failed"] == 0
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    qrels = {r["name"]: r["relevant"] for r in records}
    run = {r["name"]: dict(zip(r["retrieved"], r["scores"])) for r in records}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    expected = sum(v["ndcg_cut_10"] for v in oracle.values()) / len(oracle)
    assert summary["metrics"]["ndcg@10"] == pytest.approx(expected, abs=1e-9) and expected > 0.3
