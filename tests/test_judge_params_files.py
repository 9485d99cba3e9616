"""A fitted judge's parameters file that cannot be used (a user's refit in $EVALUATIONS_JUDGES_DIR, damaged or
hand-edited) is one clear error naming the file and the fix: from the loaders, and from a run before any case or
model, leaving no run folder behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evaluations.core.errors import EvaluationsError
from evaluations.judging.grounded import context_relevance as cr
from evaluations.judging.grounded import faithfulness as fa
from inprocess import run_evaluations

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = {name: json.loads((ROOT / "judges" / f"{name}.json").read_text()) for name in ("faithfulness",
                                                                                          "context_relevance")}


def _params(name: str) -> dict:
    """The shipped file's parameters object (context relevance keeps them under "params")."""
    doc = json.loads(json.dumps(SHIPPED[name]))
    return doc["params"] if name == "context_relevance" else doc


def _with(name: str, **changes) -> str:
    doc = json.loads(json.dumps(SHIPPED[name]))
    (doc["params"] if name == "context_relevance" else doc).update(changes)
    return json.dumps(doc)


def _damages(name: str) -> list[tuple[str, bytes | str | None, str]]:
    n = len(_params(name)["features"])
    return [
        ("bad utf-8", b'{"features": "caf\xe9"}', "not valid UTF-8 (byte 0xe9 at offset 17)"),
        ("not json", '{"features": [', "not valid JSON"),
        ("a list", "[1, 2]", "must be a JSON object, got a list"),
        ("short coef", _with(name, coef=[0.1] * (n - 1)), f"{n} features but {n} means, {n} scales and {n - 1} coef"),
        ("NaN coef", _with(name, coef=[float("nan")] * n), "not a finite number"),
        ("zero scale", _with(name, scale=[0.0] * n), "a scale is not positive"),
        ("unknown feature", _with(name, features=["nonsense_feature"] * n), "unknown features ['nonsense_feature'"),
        ("threshold 2", _with(name, threshold=2), "threshold 2"),
        ("string intercept", _with(name, intercept="high"), "intercept: Input should be a valid number"),
        ("a folder", None, "a folder, not a file"),
    ]


def _write(path: Path, content: bytes | str | None) -> None:
    if content is None:
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


LOADERS = {"faithfulness": lambda path: fa.load_params(path), "context_relevance": lambda path: cr.params(path)}


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_every_damage_is_one_error_naming_the_file_and_a_fix_for_a_users_own_fit(tmp_path, name):
    for label, content, needle in _damages(name):
        folder = tmp_path / label.replace(" ", "_")
        folder.mkdir()
        path = folder / f"{name}.json"
        _write(path, content)
        with pytest.raises(EvaluationsError) as err:
            LOADERS[name](path)
        assert needle in err.value.message, (label, err.value.message)
        assert str(path) in str(err.value.where), label
        # a user's file is re-written by calibrate-judge or moved aside, never "restore it from the repository"
        assert f"calibrate-judge FILE --judges {name}" in err.value.fix and "EVALUATIONS_JUDGES_DIR" in err.value.fix


def test_context_relevance_wording_needs_the_question(tmp_path):
    path = tmp_path / "context_relevance.json"
    path.write_text(_with("context_relevance", wording="Is this passage relevant? Answer yes or no."))
    with pytest.raises(EvaluationsError, match="no {question} placeholder"):
        cr.params(path)


def test_the_conversation_form_needs_the_passage_id_and_a_served_checker(tmp_path):
    """``judges/context_relevance_served.json`` (what served checkers read) asks about ``[{id}]`` in the QA
    conversation: a wording without the id is one error naming the file; parameters of that form given to the
    embedded model (which reads each passage alone) are one error naming judge.model."""
    served = json.loads((ROOT / "judges" / "context_relevance_served.json").read_text())
    assert served["params"]["form"] == "conversation" and cr.params(served=True).wording == served["params"]["wording"]
    path = tmp_path / "context_relevance_served.json"
    path.write_text(json.dumps({**served, "params": {**served["params"], "wording": "Needed? Answer yes or no."}}))
    with pytest.raises(EvaluationsError, match="conversation form's wording has no {id} placeholder") as err:
        cr.params(path)
    assert str(path) in str(err.value.where) and "--judge PROVIDER:MODEL" in err.value.fix
    from evaluations.judging.basics.passages import Passage

    with pytest.raises(EvaluationsError, match="need a served checker") as err:
        cr.judge_context_relevance("When?", [Passage(id="1", text="In 1889.")], params=cr.params(served=True),
                                   scorer=object())
    assert err.value.where == "judge.model"


def test_served_faithfulness_reads_the_conversation_form_that_needs_a_served_checker(tmp_path):
    """``judges/faithfulness_served.json`` (what served checkers read) is the conversation form; its parameters
    given to the embedded model (which reads windows of a passage) are one error naming judge.model; a served file
    with an unknown ask is one error naming the file and the served refit."""
    served = json.loads((ROOT / "judges" / "faithfulness_served.json").read_text())
    assert served["form"] == "conversation" and fa.load_params(served=True).form == "conversation"
    assert fa.load_params().form == "window" and fa.params_for(object()).form == "window"
    from evaluations.judging.basics.passages import Passage

    with pytest.raises(EvaluationsError, match="need a served checker") as err:
        fa.judge_faithfulness("When did it open?", "The tower opened in 1889.", [Passage(id="1", text="In 1889.")],
                              params=fa.load_params(served=True), scorer=object())
    assert err.value.where == "judge.model"
    path = tmp_path / "faithfulness_served.json"
    path.write_text(json.dumps({**served, "ask": "whatever"}))
    with pytest.raises(EvaluationsError, match="unknown ask 'whatever'") as err:
        fa.load_params(path)
    assert str(path) in str(err.value.where) and "--judge PROVIDER:MODEL" in err.value.fix


def test_faithfulness_ask_must_be_one_the_judge_has(tmp_path):
    path = tmp_path / "faithfulness.json"
    path.write_text(_with("faithfulness", ask="whatever"))
    with pytest.raises(EvaluationsError, match="unknown ask 'whatever'"):
        fa.load_params(path)


def test_the_shipped_files_load_and_their_fix_is_to_restore_them():
    assert fa.load_params().features == _params("faithfulness")["features"]
    assert cr.params().coef == _params("context_relevance")["coef"]
    from evaluations.judging.basics.fitted import params_fix
    from evaluations.judging.basics.shipped import shipped_path

    assert "restore judges/faithfulness.json" in params_fix(shipped_path("faithfulness.json"), "faithfulness.json", "x")


SYSTEM = '''
def answer(request):
    return {"retrieved": [{"id": "d1"}], "answer": "The tower opened in 1889."}
'''


@pytest.mark.parametrize("name,content", [("faithfulness", "[1, 2]"), ("context_relevance", b"\xff\xfe{")])
def test_a_run_with_a_bad_parameters_file_stops_before_any_case(tmp_path, name, content):
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "query": "When did the tower open?"}) + "\n")
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "The tower opened in 1889."}) + "\n")
    (tmp_path / "badparams_sys.py").write_text(SYSTEM)
    judges = tmp_path / "judges"
    judges.mkdir()
    _write(judges / f"{name}.json", content)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
           "EVALUATIONS_JUDGES_DIR": str(judges), "EVALUATIONS_CACHE_DIR": str(tmp_path / "cache"),
           "EVALUATIONS_CACHE_PATH": str(tmp_path / "calls.sqlite")}
    out = tmp_path / "run"
    proc = run_evaluations(["run", str(tmp_path / "q.jsonl"), "--corpus",
                           str(tmp_path / "corpus.jsonl"), "--system", "badparams_sys:answer", "--reference-free",
                           "--out", str(out), "--no-progress"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert "Traceback" not in output
    assert [line.startswith("error: ") for line in output.splitlines()].count(True) == 1, output
    assert str(judges / f"{name}.json") in output and "fix:" in output
    assert not out.exists(), sorted(p.name for p in out.iterdir())
