"""A bad environment for a run's judges is found before any case: one error naming the variable (or the file) and
the fix, exit 2, no traceback and no run folder. Before, each of these ran every case and failed its judges one
case at a time (exit 3, a full run folder of failed cases), or was taken silently.

The commands run in-process (``evaluations.cli.root``, as the console script does) so the environment can be set
with monkeypatch; each run is a real ``run`` of a Python-callable system over a one-question dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_error, write_scifact_subset

from evaluations.cli.root import main

QUESTION = "When was the Eiffel Tower completed?"
PASSAGE = "The Eiffel Tower was completed in 1889."
SYSTEM_MODULE = f"""
def search(request):
    return {{"retrieved": [{{"id": "d1", "text": {PASSAGE!r}}}], "answer": "In 1889."}}
"""


def run_cli(capsys, *args: str) -> tuple[int, str]:
    """(exit code, stdout + stderr) of ``evaluations ARGS`` run in this process (0 when it returns)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exited:
        code = exited.code
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _system_run(tmp_path: Path, monkeypatch, *extra: str, query: str = QUESTION) -> list[str]:
    """``run`` of one question with a gold answer through a Python-callable system (imported from tmp_path, the
    working folder), so the answer judges (semantic similarity, the offline judge) and the reference-free judges
    the environment asks for judge it."""
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "query": query, "relevant_doc_ids": ["d1"],
                                                  "answers": ["1889"]}) + "\n", encoding="utf-8")
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": PASSAGE}) + "\n")
    (tmp_path / "env_bad_rag.py").write_text(SYSTEM_MODULE)
    monkeypatch.chdir(tmp_path)
    return ["run", str(tmp_path / "q.jsonl"), "--corpus", str(tmp_path / "corpus.jsonl"), "--system",
            "env_bad_rag:search", "--out", str(tmp_path / "out"), "--no-progress", *extra]


# -- D1: the judges' cache folder ------------------------------------------------------------------------------

@pytest.mark.parametrize("cache_dir", ["/proc/evaluations-bad-env-test/x", "__FILE__/sub",
                                       "/sys/evaluations-bad-env-test/x"], ids=["procfs", "below-a-file", "sysfs"])
def test_a_judges_cache_folder_that_cannot_be_made_stops_the_run_before_any_case(capsys, monkeypatch, tmp_path,
                                                                                  cache_dir):
    """procfs and sysfs refuse new folders even to root; a path below a file cannot be a folder."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    cache_dir = cache_dir.replace("__FILE__", str(blocker))
    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", cache_dir)
    args = _system_run(tmp_path, monkeypatch)
    code, output = run_cli(capsys, *args)
    assert_one_error(code, output, f"environment variable EVALUATIONS_CACHE_DIR ({cache_dir}/",
                     "fix: point EVALUATIONS_CACHE_DIR at a path you can write", "--no-cache")
    assert not (tmp_path / "out").exists()
    assert blocker.read_text() == "not a folder\n"
    # without the cache the judges keep nothing there: the same run goes ahead
    code, output = run_cli(capsys, *args, "--no-cache")
    assert code == 0, output
    assert (tmp_path / "out" / "summary.json").is_file()


# -- D2: a judge's parameters file in $EVALUATIONS_JUDGES_DIR ----------------------------------------------------

BAD_PARAMS = {
    "not-json": (b"garbage\n", "offline judge parameters are not valid JSON"),
    "missing-key": (b'{"weights": "x"}\n', "missing key 'features'"),
    "latin-1": (b'{"a": "\xe9"}\n', "not valid UTF-8 (byte 0xe9"),
    "an-array": (b"[1, 2, 3]\n", "must be a JSON object, got a list"),
    "a-number-as-text": (None, "invalid offline judge parameters"),
}


@pytest.mark.parametrize("kind", list(BAD_PARAMS))
def test_an_unusable_offline_judge_file_stops_the_run_before_any_case(capsys, monkeypatch, tmp_path, kind):
    content, said = BAD_PARAMS[kind]
    judges = tmp_path / "judges"
    judges.mkdir()
    if content is None:  # the shipped file with one coefficient spelt as a word
        shipped = json.loads((Path(__file__).resolve().parents[1] / "judges" / "offline_judge.json").read_text())
        shipped["coef"][0] = "high"
        content = json.dumps(shipped).encode()
    params = judges / "offline_judge.json"
    params.write_bytes(content)
    (judges / "faithfulness.json").write_text("garbage\n")  # a judge this run does not use: never read
    monkeypatch.setenv("EVALUATIONS_JUDGES_DIR", str(judges))
    args = _system_run(tmp_path, monkeypatch)
    code, output = run_cli(capsys, *args)
    assert_one_error(code, output, str(params), said, "fix: move it out of $EVALUATIONS_JUDGES_DIR")
    assert "faithfulness.json" not in output
    assert not (tmp_path / "out").exists()
    # a run that judges no answer does not read it
    code, output = run_cli(capsys, *args, "--skip-qa")
    assert code == 0, output


def test_an_unusable_answer_relevance_probe_stops_the_run_before_any_case(capsys, monkeypatch, tmp_path):
    """The naming screen's probe (``judges/answer_relevance_probe.json``) in $EVALUATIONS_JUDGES_DIR, with a feature
    list that is not the hidden state's: one error naming the file, before any case, when a run judges answer
    relevance."""
    judges = tmp_path / "judges"
    judges.mkdir()
    probe = judges / "answer_relevance_probe.json"
    shipped = json.loads((Path(__file__).resolve().parents[1] / "judges" / probe.name).read_text())
    shipped["params"]["features"] = shipped["params"]["features"][::-1]
    probe.write_text(json.dumps(shipped))
    monkeypatch.setenv("EVALUATIONS_JUDGES_DIR", str(judges))
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "answer_relevance")
    args = _system_run(tmp_path, monkeypatch)
    code, output = run_cli(capsys, *args)
    assert_one_error(code, output, str(probe), "invalid answer-relevance probe parameters",
                     "fix: move it out of $EVALUATIONS_JUDGES_DIR")
    assert not (tmp_path / "out").exists()


# -- D10: $EVALUATIONS_JUDGE_GGUF ----------------------------------------------------------------------------------

def test_a_judge_gguf_that_is_not_a_gguf_file_stops_the_run_before_any_case(capsys, monkeypatch, tmp_path):
    fake = tmp_path / "judge.gguf"
    fake.write_text("a text file, not a model\n")
    monkeypatch.setenv("EVALUATIONS_JUDGE_GGUF", str(fake))
    monkeypatch.setenv("EVALUATIONS_LLM_THREADS", "1")
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "faithfulness")  # the embedded checker loads the file
    args = _system_run(tmp_path, monkeypatch)
    code, output = run_cli(capsys, *args)
    assert_one_error(code, output, f"environment variable EVALUATIONS_JUDGE_GGUF ({fake}): not a GGUF model file",
                     "fix: point EVALUATIONS_JUDGE_GGUF at a GGUF model file")
    assert not (tmp_path / "out").exists()
    # answer relevance's naming screen reads the embedded judge model too
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "answer_relevance")
    code, output = run_cli(capsys, *args)
    assert_one_error(code, output, f"environment variable EVALUATIONS_JUDGE_GGUF ({fake}): not a GGUF model file")
    assert not (tmp_path / "out").exists()
    # no judge of this run loads a model: the variable does not matter
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "none")
    code, output = run_cli(capsys, *args)
    assert code == 0, output


def test_a_judge_gguf_the_answer_relevance_probe_was_not_fitted_on_stops_the_run_before_any_case(capsys, monkeypatch,
                                                                                                  tmp_path):
    """$EVALUATIONS_JUDGE_GGUF naming a real model other than the one the shipped probe read (the 0.5B Qwen): the
    probe reads hidden states of its own model, so the run stops at start-up with the variable in the fix, not at
    its first answer-relevance case."""
    from evaluations.models.llamacpp import gguf_path

    monkeypatch.setenv("EVALUATIONS_JUDGE_GGUF", str(gguf_path("qwen2.5-coder-0.5b")))
    monkeypatch.setenv("EVALUATIONS_LLM_THREADS", "1")
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "answer_relevance")
    args = _system_run(tmp_path, monkeypatch)
    code, output = run_cli(capsys, *args)
    assert_one_error(code, output, "the answer-relevance probe was fitted on another judge model or prompt",
                     "unset EVALUATIONS_JUDGE_GGUF")
    assert not (tmp_path / "out").exists()


# -- D4: HF_HUB_OFFLINE ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["abc", "2"])
def test_hf_hub_offline_that_is_not_a_boolean_stops_every_run(capsys, monkeypatch, tmp_path, value):
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    code, output = run_cli(capsys, *_system_run(tmp_path, monkeypatch))
    assert_one_error(code, output, "environment variable HF_HUB_OFFLINE", repr(value), "must be a boolean")
    assert not (tmp_path / "out").exists()
    beir = write_scifact_subset(tmp_path / "beir", 2, 2)
    code, output = run_cli(capsys, "beir", str(beir), "--search-mode", "fts", "--skip-qa", "--db",
                           str(tmp_path / "db"), "--out", str(tmp_path / "out"), "--no-progress")
    assert_one_error(code, output, "environment variable HF_HUB_OFFLINE", repr(value), "must be a boolean")
    assert not (tmp_path / "out").exists() and not (tmp_path / "db").exists()
    # the commands that judge labelled rows load MiniLM too
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "q1", "query": "Who wrote Dracula?", "context": ["Bram Stoker wrote Dracula."],
                                "generated_answer": "Bram Stoker", "label": True}) + "\n")
    code, output = run_cli(capsys, "judge-agreement", str(rows), "--judges", "answer_relevance")
    assert_one_error(code, output, "environment variable HF_HUB_OFFLINE", repr(value), "must be a boolean")


# -- D9: a relative cache path; a query of invisible characters -----------------------------------------------------

def test_a_relative_cache_path_is_refused_as_the_other_path_variables_are(capsys, monkeypatch, tmp_path):
    """(It was taken, and the cache made in whatever folder the command ran in.)"""
    monkeypatch.setenv("EVALUATIONS_CACHE_PATH", "rel.sqlite")
    args = _system_run(tmp_path, monkeypatch)
    for extra in ([], ["--skip-qa"]):
        code, output = run_cli(capsys, *args, *extra)
        assert_one_error(code, output, "environment variable EVALUATIONS_CACHE_PATH", "'rel.sqlite'",
                         "must be an absolute path", f"EVALUATIONS_CACHE_PATH={tmp_path / 'rel.sqlite'}")
        assert not (tmp_path / "out").exists()
        assert not (tmp_path / "rel.sqlite").exists()  # refused when the config is read: no cache made anywhere


@pytest.mark.parametrize("query", ["\u200b\u00a0", "\ufeff \u2060", "\u3000\u200d"],
                         ids=["zero-width-and-no-break-space", "bom-and-word-joiner", "ideographic-space-and-zwj"])
def test_a_query_of_invisible_characters_is_blank(capsys, monkeypatch, tmp_path, query):
    code, output = run_cli(capsys, *_system_run(tmp_path, monkeypatch, query=query))
    assert_one_error(code, output, f"{tmp_path / 'q.jsonl'}:1: field 'query': empty")
    assert not (tmp_path / "out").exists()
