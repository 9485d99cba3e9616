"""Every bad input is one clear error through the CLI: exit code 2, the file:line / key / variable and the fix
named, no traceback, nothing half-written. README "Bad input" lists exactly these cases.

The commands run in-process (``evaluations.cli.root``, as the console script does) so environment variables
and a full disk can be simulated with monkeypatch; the unwrapped-text check runs real subprocesses.
"""

from __future__ import annotations

import csv
import errno
import gzip
import io
import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import DATA, REPLIQA_20, WIX_SAMPLE, assert_one_error, write_scifact_subset

from evaluations.cli.root import main
from evaluations.core.fsutil import DurableAppender, atomic_write_text
from inprocess import run_evaluations

REPO = Path(__file__).resolve().parents[1]
EVOUNA_NQ = DATA / "evouna" / "NQ.jsonl.gz"


def run_cli(capsys, *args: str) -> tuple[int, str]:
    """(exit code, stdout + stderr) of ``evaluations ARGS`` run in this process."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    captured = capsys.readouterr()
    return exited.value.code, captured.out + captured.err


class _no_exit:
    """The command must finish without exiting (main() only exits on errors)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if isinstance(exc, SystemExit):
            raise AssertionError(f"the command exited with {exc.code}")
        return False


@pytest.fixture(scope="module")
def beir_small(tmp_path_factory) -> Path:
    """3 real SciFact test queries over their relevant documents + 5 others."""
    return write_scifact_subset(tmp_path_factory.mktemp("beir_small"), 3, 5)


@pytest.fixture
def beir_copy(beir_small, tmp_path) -> Path:
    return Path(shutil.copytree(beir_small, tmp_path / "beir"))


def _beir_args(folder: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["beir", str(folder), "--search-mode", "fts", "--db", str(tmp_path / "db"), "--out", str(tmp_path / "out"),
            "--no-progress", *extra]


def _replace_line(path: Path, number: int, new: bytes) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[number - 1] = new
    path.write_bytes(b"".join(lines))


# -- files ---------------------------------------------------------------------------------------------------

def test_undecodable_bytes_in_jsonl_name_file_and_line(capsys, beir_copy, tmp_path):
    corpus = beir_copy / "corpus.jsonl"
    line3 = json.loads(corpus.read_bytes().splitlines()[2])
    # the same row saved as Latin-1 by some other tool: "é" becomes the lone byte 0xe9
    _replace_line(corpus, 3, json.dumps({**line3, "title": line3["title"] + " (café)"}, ensure_ascii=False)
                  .encode("latin-1") + b"\n")
    code, output = run_cli(capsys, *_beir_args(beir_copy, tmp_path))
    assert_one_error(code, output, f"{corpus}:3", "not valid UTF-8", "e9", "iconv")
    assert not (tmp_path / "out").exists()


def test_undecodable_bytes_in_csv_name_file_and_line(capsys, tmp_path):
    """A labelled-answers CSV (real EVOUNA rows) saved as Latin-1: the first non-ASCII row is named."""
    with gzip.open(EVOUNA_NQ, "rt", encoding="utf-8") as handle:
        records = [r for r in map(json.loads, handle) if isinstance(r["judge_fid"], bool) and r["answer_fid"]][:30]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["query", "generated_answer", "reference_answer", "label"])
    for r in records:
        writer.writerow([r["question"], r["answer_fid"], r["golden_answer"], r["judge_fid"]])
    text = buffer.getvalue()
    first_non_ascii = next(i for i, line in enumerate(text.splitlines(), 1) if not line.isascii())
    path = tmp_path / "labels.csv"
    path.write_bytes(text.encode("latin-1"))
    code, output = run_cli(capsys, "judge-agreement", str(path), "--judges", "em")
    assert_one_error(code, output, f"{path}:{first_non_ascii}", "not valid UTF-8")
    # the same file as UTF-8 is accepted (the error is about the bytes, not the rows)
    path.write_bytes(text.encode("utf-8"))
    with _no_exit():
        main(["judge-agreement", str(path), "--judges", "em", "--json", "--resamples", "10"])
    assert json.loads(capsys.readouterr().out)["examples"] == 30


def test_undecodable_bytes_in_tsv_qrels(capsys, beir_copy, tmp_path):
    qrels = beir_copy / "qrels" / "test.tsv"
    row = qrels.read_bytes().splitlines()[1]
    _replace_line(qrels, 2, row + b"\xff\n")
    code, output = run_cli(capsys, *_beir_args(beir_copy, tmp_path))
    assert_one_error(code, output, f"{qrels}:2", "not valid UTF-8", "ff")


def test_truncated_gzip(capsys, beir_copy, tmp_path):
    corpus = beir_copy / "corpus.jsonl"
    packed = gzip.compress(corpus.read_bytes())
    gz = beir_copy / "corpus.jsonl.gz"
    gz.write_bytes(packed[: len(packed) * 2 // 3])  # a download or copy cut short
    corpus.unlink()
    code, output = run_cli(capsys, *_beir_args(beir_copy, tmp_path))
    assert_one_error(code, output, str(gz), "truncated", "gzip -t")
    assert not (tmp_path / "out").exists()


def _repliqa_parquet(path: Path) -> Path:
    with gzip.open(REPLIQA_20, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("damage", ["truncated", "overwritten footer"])
def test_corrupt_parquet(capsys, tmp_path, damage):
    path = _repliqa_parquet(tmp_path / "repliqa.parquet")
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:  # the footer's metadata (just before the 4-byte length and "PAR1") overwritten
        data[-200:-8] = b"\x00" * 192
    path.write_bytes(bytes(data))
    code, output = run_cli(capsys, "repliqa", "--source", str(path), "--skip-qa", "--search-mode", "fts",
                           "--db", str(tmp_path / "db"), "--out", str(tmp_path / "out"), "--no-progress")
    assert_one_error(code, output, str(path), "not a readable parquet file")
    assert not (tmp_path / "out").exists()


def test_undecodable_config_file(capsys, beir_small, tmp_path):
    config = tmp_path / "haiku.rag.yaml"
    config.write_bytes("search:\n  mode: fts  # schnell für BM25\n".encode("latin-1"))
    code, output = run_cli(capsys, *_beir_args(beir_small, tmp_path, "--config", str(config)))
    assert_one_error(code, output, str(config), "not valid UTF-8")


def test_corrupt_index_state(capsys, beir_small, tmp_path):
    """The index's state table (meta.lance) is damaged: --skip-db names it and says how to rebuild."""
    db = tmp_path / "db"
    with _no_exit():
        main(["beir", str(beir_small), "--search-mode", "fts", "--db", str(db), "--out", str(tmp_path / "first"),
              "--no-progress"])
    capsys.readouterr()
    meta = db / "meta.lance"
    for manifest in (meta / "_versions").iterdir():
        manifest.write_bytes(b"\x00garbage\xff" * 3)
    code, output = run_cli(capsys, *_beir_args(beir_small, tmp_path, "--skip-db"))
    assert_one_error(code, output, str(meta), "the index is unreadable", f"delete {db}")
    assert not (tmp_path / "out").exists()


# -- rows of the wrong type -----------------------------------------------------------------------------------

def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _real_rows(path: Path, n: int) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(next(handle)) for _ in range(n)]


def test_wrong_type_rows(capsys, beir_copy, tmp_path):
    # BEIR: a document's text is a list (line 2), a row is an array (line 4), a qrels grade is a word
    corpus = beir_copy / "corpus.jsonl"
    docs = [json.loads(line) for line in corpus.read_text().splitlines()]
    cases: list[tuple[list[str], tuple[str, ...]]] = []
    bad = [dict(d) for d in docs]
    bad[1]["text"] = [bad[1]["text"]]
    _jsonl(corpus, bad)
    cases.append((_beir_args(beir_copy, tmp_path), (f"{corpus}:2", "field 'text' must be str, got list")))
    code, output = run_cli(capsys, *cases[-1][0])
    assert_one_error(code, output, *cases[-1][1])

    _jsonl(corpus, [*docs[:3], list(docs[3].values()), *docs[4:]])
    code, output = run_cli(capsys, *_beir_args(beir_copy, tmp_path))
    assert_one_error(code, output, f"{corpus}:4", "a row must be a JSON object, got an array")

    _jsonl(corpus, docs)
    qrels = beir_copy / "qrels" / "test.tsv"
    lines = qrels.read_text().splitlines()
    qid, did, _ = lines[2].split("\t")
    qrels.write_text("\n".join([*lines[:2], f"{qid}\t{did}\thigh", *lines[3:]]) + "\n")
    code, output = run_cli(capsys, *_beir_args(beir_copy, tmp_path))
    assert_one_error(code, output, f"{qrels}:3", "field 'score' must be an integer, got 'high'")

    # RepliQA: a question that is an object; WixQA: article_ids that is a string
    rows = _real_rows(REPLIQA_20, 5)
    rows[3]["question"] = {"text": rows[3]["question"]}
    repliqa = _jsonl(tmp_path / "repliqa.jsonl", rows)
    code, output = run_cli(capsys, "repliqa", "--source", str(repliqa), "--skip-qa", "--search-mode", "fts",
                           "--db", str(tmp_path / "db"), "--out", str(tmp_path / "out"), "--no-progress")
    assert_one_error(code, output, f"{repliqa}:4", "field 'question' must be str, got dict")

    rows = _real_rows(WIX_SAMPLE, 5)
    rows[1]["article_ids"] = rows[1]["article_ids"][0]
    wix = _jsonl(tmp_path / "wix.jsonl", rows)
    code, output = run_cli(capsys, "wix", "--source", str(wix), "--skip-qa", "--search-mode", "fts",
                           "--db", str(tmp_path / "db"), "--out", str(tmp_path / "out"), "--no-progress")
    assert_one_error(code, output, f"{wix}:2", "field 'article_ids' must be list, got str")
    assert not (tmp_path / "out").exists()


def test_a_value_of_the_wrong_shape_is_named_by_the_users_key_not_pydantics_union_tags(capsys, beir_small, tmp_path):
    """A value that fits no member of a union (a config list of names or 'auto'; a log item that is an id or an
    object) is one problem at the key the user wrote, not one per member under tags like ``literal['auto']``."""
    config = tmp_path / "bad.yaml"
    config.write_text("judge:\n  reference_free: [faithfulnes]\n")
    code, output = run_cli(capsys, *_beir_args(beir_small, tmp_path, "--config", str(config)))
    assert_one_error(code, output, str(config), "key 'judge.reference_free.0': Input should be 'faithfulness'")
    assert "literal" not in output and output.count("key '") == 1
    config.write_text("judge:\n  reference_free: 7\n")
    code, output = run_cli(capsys, *_beir_args(beir_small, tmp_path, "--config", str(config)))
    assert_one_error(code, output, "key 'judge.reference_free': Input should be a valid list, or input should be "
                                   "'auto' (got 7)")
    query = json.loads(gzip.open(DATA / "scifact" / "queries.jsonl.gz", "rt").readline())
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"query_id": query["_id"], "query": query["text"],
                               "retrieved": [{"id": "4983", "text": 5}], "answer": "yes"}) + "\n")
    code, output = run_cli(capsys, "score", "--format", "log", str(log))
    assert_one_error(code, output, f"{log}:1: field 'retrieved.0.text': Input should be a valid string")
    assert "LoggedSpan" not in output and "retrieved.0.str" not in output
    # a key the user wrote stays, also when it looks like a class name
    dataset = tmp_path / "queries.jsonl"
    dataset.write_text(json.dumps({"id": query["_id"], "query": query["text"],
                                   "graded_relevance": {"DocA": "high"}}) + "\n")
    code, output = run_cli(capsys, "run", str(dataset), "--corpus", str(beir_small / "corpus.jsonl"), "--skip-qa",
                           "--out", str(tmp_path / "out"), "--no-progress")
    assert_one_error(code, output, f"{dataset}:1: field 'graded_relevance.DocA': Input should be a valid integer")


# -- environment variables ------------------------------------------------------------------------------------

ENV_CASES = [
    # (variable, value, command, expected text)
    ("EVALUATIONS_LLM_THREADS", "abc", "repliqa-qa", "must be a whole number from 0 to "),
    ("EVALUATIONS_LLM_THREADS", "-2", "repliqa-qa", "must be a whole number from 0 to "),
    ("EVALUATIONS_LLM_THREADS", "99999", "repliqa-qa", "must be a whole number from 0 to "),
    ("OLLAMA_BASE_URL", "not a url", "beir", "must be an http:// or https:// URL with a host"),
    ("OPENAI_BASE_URL", "localhost:8080/v1", "beir", "must be an http:// or https:// URL with a host"),
    ("OLLAMA_BASE_URL", "http://localhost:99999", "beir", "has an invalid port"),
    ("HAIKU_RAG_CONFIG_PATH", "/nonexistent/haiku.rag.yaml", "beir", "config file not found"),
    ("XDG_DATA_HOME", "relative/data", "beir-default-db", "must be an absolute path"),
    ("EVALUATIONS_JUDGES_DIR", "/nonexistent/judges", "agreement-offline", "the folder does not exist"),
    ("EVALUATIONS_CACHE_DIR", "__FILE__", "agreement-semantic", "is a file, not a folder"),
    ("HF_HUB_OFFLINE", "maybe", "repliqa-hub", "must be a boolean"),
]


@pytest.mark.parametrize("variable, value, command, expected", ENV_CASES,
                         ids=[f"{c[0]}={c[1]}" for c in ENV_CASES])
def test_invalid_environment_variable(capsys, monkeypatch, beir_small, tmp_path, variable, value, command, expected):
    if value == "__FILE__":
        value = str(tmp_path / "a-file")
        Path(value).write_text("not a folder")
    monkeypatch.setenv(variable, value)
    out = tmp_path / "out"
    labelled = tmp_path / "labelled.jsonl"
    _jsonl(labelled, _real_rows(EVOUNA_NQ, 5))
    args = {
        "repliqa-qa": ["repliqa", "--source", str(REPLIQA_20), "--limit", "1", "--search-mode", "fts",
                       "--db", str(tmp_path / "db"), "--out", str(out), "--no-progress"],
        "repliqa-hub": ["repliqa", "--skip-qa", "--search-mode", "fts", "--out", str(out), "--no-progress"],
        "beir": _beir_args(beir_small, tmp_path),
        "beir-default-db": ["beir", str(beir_small), "--search-mode", "fts", "--out", str(out), "--no-progress"],
        "agreement-offline": ["judge-agreement", str(labelled), "--judges", "offline", "--resamples", "10"],
        "agreement-semantic": ["judge-agreement", str(labelled), "--judges", "semantic", "--resamples", "10"],
    }[command]
    code, output = run_cli(capsys, *args)
    assert_one_error(code, output, variable, repr(value) if variable != "HAIKU_RAG_CONFIG_PATH" else value, expected)
    assert not out.exists()


def test_llm_threads_bounds(monkeypatch):
    """0 (or unset) is one thread per core, at most 4; the largest accepted value is 4 x the cores."""
    from evaluations.core.errors import EvaluationsError
    from evaluations.models.llamacpp import n_threads

    cores = len(os.sched_getaffinity(0))
    for value, expected in (("0", min(cores, 4)), ("", min(cores, 4)), ("1", 1), (str(4 * cores), 4 * cores)):
        monkeypatch.setenv("EVALUATIONS_LLM_THREADS", value)
        assert n_threads() == expected
    monkeypatch.setenv("EVALUATIONS_LLM_THREADS", str(4 * cores + 1))
    with pytest.raises(EvaluationsError, match=f"must be a whole number from 0 to {4 * cores}"):
        n_threads()


# -- a value from an environment variable: the error names the variable --------------------------------------------

UNMAKEABLE = "/proc/evaluations-bad-input-test/x"  # procfs refuses new folders, even to root
SYSTEM_MODULE = """
def search(request):
    return {"retrieved": [{"id": "d1", "text": "The Eiffel Tower was completed in 1889."}], "answer": "In 1889."}
"""


def _system_run(tmp_path: Path, monkeypatch, *extra: str) -> list[str]:
    """``run`` of one question through a Python-callable system (imported from tmp_path, the working folder)."""
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "query": "When was the Eiffel Tower completed?"}) + "\n")
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": "The Eiffel Tower was completed in 1889."})
                                           + "\n")
    (tmp_path / "env_named_rag.py").write_text(SYSTEM_MODULE)
    monkeypatch.chdir(tmp_path)
    return ["run", str(tmp_path / "q.jsonl"), "--corpus", str(tmp_path / "corpus.jsonl"), "--system",
            "env_named_rag:search", "--out", str(tmp_path / "out"), "--no-progress", *extra]


def test_cache_variables_naming_a_folder_that_cannot_be_made(capsys, monkeypatch, tmp_path):
    labelled = _jsonl(tmp_path / "labelled.jsonl", [
        {"query": "When was the Eiffel Tower completed?", "context": ["The Eiffel Tower was completed in 1889."],
         "generated_answer": answer, "label": label} for answer, label in (("In 1889.", True), ("In 1925.", False))])
    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", UNMAKEABLE)
    code, output = run_cli(capsys, "judge-agreement", str(labelled), "--judges", "faithfulness,answer_relevance",
                           "--resamples", "10")
    assert_one_error(code, output, f"environment variable EVALUATIONS_CACHE_DIR ({UNMAKEABLE}/",
                     "point EVALUATIONS_CACHE_DIR at a path you can write")
    monkeypatch.delenv("EVALUATIONS_CACHE_DIR")

    # the model-call cache (a system's replies are kept there): the variable, or the config key, that set its path
    args = _system_run(tmp_path, monkeypatch)
    monkeypatch.setenv("EVALUATIONS_CACHE_PATH", f"{UNMAKEABLE}/calls.sqlite")
    code, output = run_cli(capsys, *args)
    assert_one_error(code, output, f"environment variable EVALUATIONS_CACHE_PATH ({UNMAKEABLE}/calls.sqlite)",
                     "point EVALUATIONS_CACHE_PATH at a path you can write")
    assert not (tmp_path / "out").exists()
    monkeypatch.delenv("EVALUATIONS_CACHE_PATH")
    monkeypatch.setenv("XDG_DATA_HOME", UNMAKEABLE)
    code, output = run_cli(capsys, *args)
    assert_one_error(code, output, f"environment variable XDG_DATA_HOME ({UNMAKEABLE}/evaluations/cache/",
                     "point XDG_DATA_HOME at a path you can write")
    assert not (tmp_path / "out").exists()
    monkeypatch.setenv("EVALUATIONS_CACHE_PATH", str(tmp_path / "fine.sqlite"))  # overridden by the config
    config = tmp_path / "cache.yaml"
    config.write_text(f"cache:\n  path: {UNMAKEABLE}/calls.sqlite\n")
    code, output = run_cli(capsys, *args, "--config", str(config))
    assert_one_error(code, output, f"cache.path ({UNMAKEABLE}/calls.sqlite)", "point cache.path at")
    assert "EVALUATIONS_CACHE_PATH" not in output and not (tmp_path / "out").exists()


@pytest.mark.parametrize("data_home", [UNMAKEABLE, "__FILE__/data"], ids=["procfs", "under-a-file"])
def test_a_data_folder_that_cannot_be_made_without_the_cache_is_one_error_before_any_case(
        capsys, monkeypatch, tmp_path, data_home):
    """--no-cache opens no cache, but faithfulness and context relevance still need the embedded judge model,
    assembled under $XDG_DATA_HOME/evaluations/models: checked before any case, not a failed judge in every case."""
    if data_home.startswith("__FILE__"):
        (tmp_path / "a-file").write_text("not a folder")
        data_home = data_home.replace("__FILE__", str(tmp_path / "a-file"))
    monkeypatch.setenv("XDG_DATA_HOME", data_home)
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "faithfulness,context_relevance")
    monkeypatch.delenv("EVALUATIONS_JUDGE_GGUF", raising=False)
    code, output = run_cli(capsys, *_system_run(tmp_path, monkeypatch, "--no-cache"))
    assert_one_error(code, output, f"environment variable XDG_DATA_HOME ({data_home}/evaluations/models)",
                     "fix: point XDG_DATA_HOME at a folder you can write")
    assert not (tmp_path / "out").exists()


def test_the_judges_model_is_assembled_under_storage_data_dir(capsys, monkeypatch, tmp_path):
    """The reference-free judges' model lives under the config's storage.data_dir, as every other model does: an
    unmakeable one is one error before any case (before, the judges ignored it and used the default folder)."""
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "faithfulness,context_relevance")
    monkeypatch.delenv("EVALUATIONS_JUDGE_GGUF", raising=False)
    args = _system_run(tmp_path, monkeypatch, "--no-cache")
    config = tmp_path / "data.yaml"
    config.write_text(f"storage:\n  data_dir: {UNMAKEABLE}\n")
    code, output = run_cli(capsys, *args, "--config", str(config))
    assert_one_error(code, output, f"{UNMAKEABLE}/models", "fix: set storage.data_dir to a folder you can write")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("provider, variable", [("ollama", "OLLAMA_BASE_URL"), ("openai", "OPENAI_BASE_URL")])
def test_an_unreachable_server_names_where_its_url_came_from(capsys, monkeypatch, tmp_path, provider, variable):
    from fake_llm_server import closed_port_url

    url = closed_port_url() + ("/v1" if provider == "openai" else "")
    monkeypatch.setenv(variable, url)
    args = _system_run(tmp_path, monkeypatch)
    config = tmp_path / "judge.yaml"
    config.write_text(f"judge:\n  model: {{provider: {provider}, name: some-model}}\n")
    code, output = run_cli(capsys, *args, "--config", str(config))
    assert_one_error(code, output, f"environment variable {variable}: cannot reach the model server",
                     f"fix: start the server, or correct {variable};")
    assert "base_url" not in output
    config.write_text(f"judge:\n  model: {{provider: {provider}, name: some-model}}\n"
                      f"providers:\n  {provider}: {{base_url: '{url}'}}\n")
    code, output = run_cli(capsys, *args, "--config", str(config))
    assert_one_error(code, output, f"providers.{provider}.base_url: cannot reach the model server",
                     f"correct providers.{provider}.base_url;")
    assert variable not in output and not (tmp_path / "out").exists()


def test_a_judge_gguf_that_does_not_load(capsys, monkeypatch, tmp_path):
    """$EVALUATIONS_JUDGE_GGUF naming a file that exists but is not a model: the variable, the file and a fix."""
    fake = tmp_path / "judge.gguf"
    fake.write_text("not a model\n")
    monkeypatch.setenv("EVALUATIONS_JUDGE_GGUF", str(fake))
    monkeypatch.setenv("EVALUATIONS_LLM_THREADS", "1")
    labelled = _jsonl(tmp_path / "labelled.jsonl", _real_rows(EVOUNA_NQ, 2))
    code, output = run_cli(capsys, "judge-agreement", str(labelled), "--judges", "llm", "--judge", "embedded",
                           "--resamples", "10")
    assert_one_error(code, output, f"environment variable EVALUATIONS_JUDGE_GGUF ({fake}): llama-cpp-python could not "
                                   "load the model", "fix: point EVALUATIONS_JUDGE_GGUF at a GGUF model file")


# -- the output folder: unwritable or full ---------------------------------------------------------------------

def test_output_folder_below_a_file(capsys, beir_small, tmp_path):
    blocker = tmp_path / "results.txt"
    blocker.write_text("a file where the output folder should go\n")
    out = blocker / "run"
    code, output = run_cli(capsys, "beir", str(beir_small), "--search-mode", "fts", "--db", str(tmp_path / "db"),
                           "--out", str(out), "--no-progress")
    assert_one_error(code, output, str(out), "is a file, not a folder")
    assert blocker.read_text().startswith("a file")


def test_output_folder_not_writable(capsys, beir_small, tmp_path):
    """sysfs refuses new folders even to root (chmod does not stop root, this does)."""
    out = Path("/sys/evaluations-bad-input-test/run")
    code, output = run_cli(capsys, "beir", str(beir_small), "--search-mode", "fts", "--db", str(tmp_path / "db"),
                           "--out", str(out), "--no-progress")
    assert_one_error(code, output, str(out), "not permitted")
    assert not out.parent.exists()


def _disk_full(monkeypatch, when=lambda target: True) -> None:
    """os.fsync raises ENOSPC (what a full disk reports when the data reaches it) for targets ``when`` selects."""
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if when(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_full_disk_before_the_run(capsys, monkeypatch, beir_small, tmp_path):
    _disk_full(monkeypatch)
    out = tmp_path / "out"
    code, output = run_cli(capsys, *_beir_args(beir_small, tmp_path))
    assert_one_error(code, output, str(out), "no space left on the device")
    assert not out.exists()


def test_full_disk_at_the_summary_keeps_finished_cases(capsys, monkeypatch, beir_small, tmp_path):
    """The disk fills while the final files are written: no half summary, no temporary files; the finished
    cases are intact, and once there is space again --resume finishes the run without re-running them."""
    _disk_full(monkeypatch, when=lambda target: ".summary.json." in target)
    out = tmp_path / "out"
    code, output = run_cli(capsys, *_beir_args(beir_small, tmp_path))
    assert_one_error(code, output, str(out / "summary.json"), "no space left on the device")
    assert not (out / "summary.json").exists()
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    records = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert len(records) == 3 and all(r["status"] == "ok" for r in records)

    monkeypatch.undo()  # space again
    with _no_exit():
        main(["beir", str(beir_small), "--search-mode", "fts", "--db", str(tmp_path / "db"), "--resume", str(out),
              "--no-progress"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["cases"] == 3


def test_fsutil_writes_are_all_or_nothing(monkeypatch, tmp_path):
    target = tmp_path / "summary.json"
    target.write_text('{"old": true}\n')
    real_write = os.write

    def write_half_then_fail(fd, data):  # the disk fills in the middle of the file
        if len(data) > 10:
            real_write(fd, bytes(data[:10]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write_half_then_fail)
    with pytest.raises(Exception) as info:
        atomic_write_text(target, json.dumps({"new": list(range(100))}))
    assert "no space left" in str(info.value) and str(target) in str(info.value)
    assert target.read_text() == '{"old": true}\n' and [p.name for p in tmp_path.iterdir()] == ["summary.json"]

    log = tmp_path / "cases.jsonl"
    monkeypatch.undo()
    with DurableAppender(log) as appender:
        appender.append('{"case": 1}')
        monkeypatch.setattr(os, "write", write_half_then_fail)
        with pytest.raises(Exception, match="no space left"):
            appender.append(json.dumps({"case": 2, "text": "x" * 50}))
    assert log.read_text() == '{"case": 1}\n'  # the cut line was taken back: the file ends with a whole line



def test_a_paced_appender_writes_each_line_at_once_and_fsyncs_later(monkeypatch, tmp_path):
    """``sync_every``: every line is in the file when ``append`` returns (a reader, or a resume after a kill,
    sees it), the fsync waits for the interval or ``close``; a paced fsync that fails takes back the lines it
    did not make durable, so the file ends with lines that reached the disk, and the error names the file."""
    real_fsync, synced = os.fsync, []

    def counting(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    log = tmp_path / "cases.jsonl"
    appender = DurableAppender(log, sync_every=3600.0)
    for i in range(3):
        appender.append(json.dumps({"case": i}))
    assert [json.loads(line)["case"] for line in log.read_text().splitlines()] == [0, 1, 2]
    assert synced == []  # within the interval: written, not yet fsynced
    appender.close()
    assert len(synced) == 1  # close makes them durable, with one fsync

    every = DurableAppender(tmp_path / "every.jsonl")  # no interval: one fsync per line, as before
    every.append("{}")
    every.append("{}")
    assert len(synced) == 3
    every.close()
    assert len(synced) == 3  # nothing pending at close

    paced = DurableAppender(log, sync_every=0.0)  # every append past its interval: each line fsynced
    paced.append(json.dumps({"case": 3}))
    paced.sync_every = 3600.0
    paced.append(json.dumps({"case": 4}))
    paced.append(json.dumps({"case": 5}))
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(Exception, match="no space left") as info:
        paced.close()
    assert str(log) in str(info.value)
    assert [json.loads(line)["case"] for line in log.read_text().splitlines()] == [0, 1, 2, 3]

# -- text for people on a non-terminal is never wrapped ---------------------------------------------------------

def test_text_on_a_pipe_is_never_wrapped(tmp_path):
    """Whatever $COLUMNS says: an error with a long path stays on one line, a table is 120 columns wide."""
    missing = tmp_path / ("a-folder-name-long-enough-to-be-wrapped-at-forty-or-eighty-columns-" * 2) / "beir"
    labelled = _jsonl(tmp_path / "labelled.jsonl", _real_rows(EVOUNA_NQ, 10))
    errors, tables = [], []
    for columns in ("40", "300"):
        env = {**os.environ, "COLUMNS": columns}
        proc = run_evaluations(["beir", str(missing), "--no-progress"],
                              capture_output=True, cwd=tmp_path, timeout=120, env=env)
        assert proc.returncode == 2
        errors.append(proc.stderr)
        proc = run_evaluations(["judge-agreement", str(labelled), "--judges",
                               "em,keyword", "--resamples", "10"], capture_output=True, cwd=tmp_path, timeout=120,
                              env=env)
        assert proc.returncode == 0, proc.stderr
        tables.append(proc.stdout)
    assert errors[0] == errors[1] and tables[0] == tables[1]
    lines = errors[0].decode().splitlines()
    assert lines[0] == f"error: {missing}: not a folder" and lines[1].startswith("  fix: ")
    table = tables[0].decode().splitlines()
    assert any("Judge agreement with human labels" in line for line in table)  # the title is not cut
    assert max(map(len, table)) <= 120 and any(line.split()[:1] == ["em"] for line in table)


def test_a_reference_free_row_without_the_answer(capsys, tmp_path):
    """A row that lacks ``generated_answer`` is malformed for the judges that read the answer (faithfulness,
    answer relevance): one error naming file:line and the key, before any model call, nothing written. It is not
    an empty answer counted as not applicable. Context relevance does not read the answer, so the same rows load
    for it. An answer that is not text is an error too."""
    from evaluations.judging.labels.passage_rows import load_passage_rows

    rows = _jsonl(tmp_path / "rows.jsonl", [
        {"query": "Who wrote Hamlet?", "context": ["Hamlet is a tragedy by William Shakespeare."],
         "generated_answer": "William Shakespeare", "label": True},
        {"query": "Who wrote Macbeth?", "context": ["Macbeth is a tragedy by William Shakespeare."], "label": True},
    ])
    for judges in ("faithfulness", "groundedness,context_relevance", "answer_relevance"):
        assert_one_error(*run_cli(capsys, "judge-agreement", str(rows), "--judges", judges), f"{rows}:2",
                         "'generated_answer'")
    out = tmp_path / "faithfulness.json"
    assert_one_error(*run_cli(capsys, "calibrate-judge", str(rows), "--judges", "faithfulness", "--out", str(out)),
                     f"{rows}:2", "'generated_answer'")
    assert not out.exists()
    loaded = load_passage_rows(rows)
    assert [e.question for e in loaded] == ["Who wrote Hamlet?", "Who wrote Macbeth?"] and loaded[1].answer == ""

    listed = _jsonl(tmp_path / "listed.jsonl", [{"query": "q", "context": ["p"], "generated_answer": ["a"],
                                                 "label": True}])
    assert_one_error(*run_cli(capsys, "judge-agreement", str(listed), "--judges", "faithfulness"), f"{listed}:1",
                     "must be a string")


def test_a_reference_free_row_in_another_tools_names_says_which_field_to_rename(capsys, tmp_path):
    """Rows written with RAGAS's or DeepEval's names, or a misspelt key, lack a required field: the one error names
    the row's field meant for it and the rename. Fields of one's own beside the required ones are ignored."""
    from evaluations.judging.labels.passage_rows import load_passage_rows

    hamlet = {"context": ["Hamlet is a tragedy by William Shakespeare."], "label": True}
    cases = [
        ({"question": "Who wrote Hamlet?", **hamlet, "generated_answer": "Shakespeare"}, "'query'", "'question'"),
        ({"query": "Who wrote Hamlet?", "contexts": hamlet["context"], "label": True, "generated_answer": "x"},
         "'context'", "'contexts'"),
        ({"query": "Who wrote Hamlet?", "context": hamlet["context"], "lable": True, "generated_answer": "x"},
         "'label'", "'lable'"),
        ({"query": "Who wrote Hamlet?", **hamlet, "actual_output": "Shakespeare"}, "'generated_answer'",
         "'actual_output'"),
    ]
    for n, (row, missing, present) in enumerate(cases):
        rows = _jsonl(tmp_path / f"rows{n}.jsonl", [row])
        assert_one_error(*run_cli(capsys, "judge-agreement", str(rows), "--judges", "faithfulness"), f"{rows}:1",
                         f"missing field {missing}", f"the row has {present}", f"rename {present} to {missing}")
    own = _jsonl(tmp_path / "own.jsonl", [{"query": "Who wrote Hamlet?", **hamlet, "generated_answer": "Shakespeare",
                                           "labeller": "me", "note": "copied", "dataset": "plays"}])
    assert [e.answer for e in load_passage_rows(own, needs_answer=True)] == ["Shakespeare"]


def test_a_lone_surrogate_escape_in_a_row_is_named_with_its_field(capsys, tmp_path):
    """JSON may escape half a UTF-16 pair (``"\\ud800"``); the text it parses to cannot be encoded as UTF-8, so a judge
    reading it (the model tokenizes UTF-8) or a run writing it failed with a traceback. It is one error naming the
    file:line and the field, before any model call or run folder: in a reference-free judge's row, in a log's
    retrieved text, in a corpus written as a JSON array. A pair of escapes (a real character) still reads."""
    row = {"query": "Who wrote Hamlet?", "context": ["Hamlet is a tragedy by William Shakespeare."],
           "generated_answer": "William Shakespeare", "label": True}
    rows = _jsonl(tmp_path / "rows.jsonl", [row, {**row, "context": ["Hamlet \ud800 by William Shakespeare."]}])
    assert json.loads(rows.read_text().splitlines()[1])["context"][0][7] == "\ud800"  # written as the escape \ud800
    assert_one_error(*run_cli(capsys, "judge-agreement", str(rows), "--judges", "faithfulness,context_relevance"),
                     f"{rows}:2: field 'context.0'", "lone surrogate '\\ud800' at index 7")

    log = _jsonl(tmp_path / "log.jsonl", [{"query_id": "q1", "query": "Who wrote Hamlet?", "answer": "Shakespeare",
                                           "retrieved": [{"id": "d1", "text": "Hamlet, by Shakespeare \udc00"}]}])
    assert_one_error(*run_cli(capsys, "score", "--format", "log", str(log)), f"{log}:1: field 'retrieved.0.text'",
                     "'\\udc00' at index 23")

    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"id": "d1", "text": "Hamlet is a tragedy."}, {"id": "d2", "text": "\udbff x"}]),
                      encoding="utf-8")
    questions = _jsonl(tmp_path / "questions.jsonl", [{"id": "q1", "query": "Who wrote Hamlet?"}])
    out = tmp_path / "out"
    assert_one_error(*run_cli(capsys, "run", str(questions), "--corpus", str(corpus), "--skip-qa", "--search-mode",
                              "fts", "--db", str(tmp_path / "db"), "--out", str(out), "--no-progress"),
                     f"{corpus}:2: field 'text'", "'\\udbff' at index 0")
    assert not out.exists()

    paired = _jsonl(tmp_path / "paired.jsonl", [{**row, "generated_answer": "Shakespeare \U0001f600"}])
    assert "\\ud83d\\ude00" in paired.read_text()
    from evaluations.judging.labels.passage_rows import load_passage_rows
    assert load_passage_rows(paired)[0].answer == "Shakespeare \U0001f600"


def test_a_lone_surrogate_escape_in_a_csv_cells_json_list_is_named(capsys, tmp_path):
    """A reference-free row in CSV writes its passages as a JSON list in the ``context`` cell; an escape of half a
    UTF-16 pair there parsed to text the judge's tokenizer could not encode (traceback). One error naming
    file:line and the passage."""
    path = tmp_path / "rows.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["query", "context", "generated_answer", "label"])
        writer.writerow(["Who wrote Hamlet?", json.dumps(["Hamlet is a tragedy.", "Hamlet \ud800 by Shakespeare."]),
                         "Shakespeare", "true"])
    assert "\\ud800" in path.read_text(encoding="utf-8")  # the cell holds the escape, the file is valid UTF-8
    assert_one_error(*run_cli(capsys, "judge-agreement", str(path), "--judges", "context_relevance"),
                     f"{path}:2: field 'context.1'", "lone surrogate '\\ud800' at index 7")


def test_a_lone_surrogate_escape_in_a_classic_csvs_gold_list_is_named(capsys, tmp_path):
    """Classic labelled answers in CSV write alternative gold answers as a JSON list in the ``reference_answer``
    cell; half a UTF-16 pair escaped there reached the semantic judge's encoder (a traceback). judge-agreement and
    score both give one error naming file:line and the alternative."""
    path = tmp_path / "classic.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["query", "context", "generated_answer", "reference_answer", "label"])
        writer.writerow(["What is the capital of France?", "Paris is the capital of France.", "Paris",
                         json.dumps(["Paris", "Par\ud800is"]), "true"])
    assert "\\ud800" in path.read_text(encoding="utf-8")
    for command in (["judge-agreement", str(path), "--judges", "keyword,semantic"], ["score", str(path), "--json"]):
        assert_one_error(*run_cli(capsys, *command), f"{path}:2: field 'reference_answer.1'",
                         "lone surrogate '\\ud800' at index 3")
