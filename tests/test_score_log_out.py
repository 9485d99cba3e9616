"""``score --format log --out DIR``: a scored log's per-query evidence as a run folder's case records.

A two-row log of real SQuAD 2.0 passages (each query's own paragraph ranked first, another article's paragraph
second, the answer a sentence of its own paragraph; each paragraph cut to that sentence and the next, as each prompt
token costs the model time), judged by the three reference-free judges with the embedded
judge model: every ``cases.jsonl`` line keeps the claims (taken from the answer), the chunk verdicts at the ranks
and with the span ids the log gave, and ``summary.json`` is a run summary holding what ``--json`` prints
(``log``). A bad ``--out`` is one error naming it (exit 2), and nothing is left half-written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_reports_reference_free import squad_articles
from inprocess import run_evaluations

ALL_JUDGES = "faithfulness,answer_relevance,context_relevance"


def _passage(row: dict) -> str:
    """The row's paragraph from the sentence holding its gold answer (``sentence``), that sentence and the next."""
    sentences = re.split(r"(?<=[.!?])\s+", row["context"])
    at = sentences.index(row["sentence"])
    return " ".join(sentences[at:at + 2])


def _squad_log() -> list[dict]:
    """Two log rows: answerable questions of distinct articles, answered with the sentence of their paragraph that
    holds the gold answer; retrieved: their paragraph, then the other row's paragraph (each cut by ``_passage``)."""
    picked = squad_articles(2)
    return [{"query_id": row["id"], "query": row["question"], "answer": row["sentence"],
             "retrieved": [{"id": row["paragraph_id"], "text": _passage(row)},
                           {"id": other["paragraph_id"], "text": _passage(other)}]}
            for row, other in zip(picked, reversed(picked))]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


@pytest.fixture(scope="module")
def squad_log(tmp_path_factory) -> tuple[list[dict], Path, Path]:
    """(the rows of ``_squad_log``, the log file, a judge cache folder of this module's own): the first test that
    scores the log judges it afresh (the folder starts empty), the next reads the verdicts back from the folder."""
    folder = tmp_path_factory.mktemp("squad_log")
    rows = _squad_log()
    log = folder / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows, log, folder / "judge_cache"


def test_cases_jsonl_keeps_claims_and_chunk_verdicts_and_summary_is_the_json(squad_log, tmp_path, cli, monkeypatch):
    rows, log, judge_cache = squad_log
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", ALL_JUDGES)
    monkeypatch.setenv("EVALUATIONS_CACHE_DIR", str(judge_cache))  # the module's verdicts, not the session's
    out = tmp_path / "evidence"
    code, stdout, err = cli(["score", str(log), "--format", "log", "--out", str(out), "--json"])
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["cases.jsonl", "summary.json"]  # no temporary file left
    summary = json.loads(stdout)
    written = json.loads((out / "summary.json").read_text())
    assert written["log"] == summary  # the log's summary, as --json prints it, inside the folder's run summary
    assert written["name"] == "evidence" and written["counts"]["cases"] == 2
    assert f"wrote {out / 'cases.jsonl'} (2 case records)" in err

    lines = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert [line["name"] for line in lines] == [r["query_id"] for r in rows]
    for line, row in zip(lines, rows):
        ids = [span["id"] for span in row["retrieved"]]
        assert line["query"] == row["query"] and line["answer"]["answer"] == row["answer"]
        assert line["retrieved"] == ids and line["context"] == ids
        # claims: the answer's own words, each checked against a logged passage
        assert line["claims"], line
        for claim in line["claims"]:
            assert _words(claim["claim"]) <= _words(row["answer"]), claim
            assert claim["passage"] in ids and 0.0 <= claim["p"] <= 1.0
        supported = sum(c["supported"] for c in line["claims"])
        assert line["judges"]["faithfulness"] == pytest.approx(supported / len(line["claims"]))
        assert line["judge_labels"]["faithfulness_kind"] == "claims"
        # chunk verdicts: one per logged span, at its rank, with its id
        chunks = line["chunk_relevance"]
        assert [(c["rank"], c["id"]) for c in chunks] == [(1, ids[0]), (2, ids[1])]
        relevant = [c["rank"] for c in chunks if c["relevant"]]
        assert line["first_relevant_rank"] == (relevant[0] if relevant else None)
        assert line["judges"]["context_relevance"] == pytest.approx(len(relevant) / len(chunks))
        # answer relevance: its verdict with its kind and reason
        assert line["judges"]["answer_relevance"] in (0.0, 1.0)
        assert line["judge_labels"]["answer_relevance_kind"] and line["judge_reasons"]["answer_relevance"]
    # the summary's means are those of the records written
    metrics = summary["reference_free"]["metrics"]
    for name in ("faithfulness", "context_relevance", "answer_relevance"):
        assert metrics[name]["n"] == 2
        assert metrics[name]["mean"] == pytest.approx(sum(line["judges"][name] for line in lines) / 2)

    # the records load as a run folder's do
    from evaluations.results.records import CaseRecord

    records = [CaseRecord.model_validate_json(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    assert [len(r.chunk_relevance or []) for r in records] == [2, 2]


def _tiny_log(tmp_path: Path) -> Path:
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"query_id": "q1", "query": "Who wrote Dracula?", "answer": "Bram Stoker",
                               "retrieved": [{"id": "d1", "text": "Dracula is a novel by Bram Stoker."}]}) + "\n")
    return log


def _one_error(err: str, where: Path) -> None:
    assert err.startswith(f"error: {where}:") and "fix:" in err and "Traceback" not in err, err


def test_a_bad_out_folder_is_one_error_and_nothing_is_written(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "answer_relevance")  # a judge to run (one short answer)
    log = _tiny_log(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")

    code, out, err = cli(["score", str(log), "--format", "log", "--out", str(blocker / "sub")])
    assert code == 2 and out == ""
    _one_error(err, blocker / "sub")
    assert blocker.read_text() == "x"

    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    for extra in ([], ["--overwrite"]):  # --overwrite replaces only the files of an earlier --out
        code, out, err = cli(["score", str(log), "--format", "log", "--out", str(full), *extra])
        assert code == 2 and out == ""
        _one_error(err, full)
        assert "notes.txt" in err and [p.name for p in full.iterdir()] == ["notes.txt"]

    # a log that fails to score leaves no --out folder behind
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({"query": "no id"}) + "\n")
    code, _, err = cli(["score", str(broken), "--format", "log", "--out", str(tmp_path / "new" / "out")])
    assert code == 2 and "query_id" in err and not (tmp_path / "new").exists()

    # an earlier --out is refused, then replaced with --overwrite
    done = tmp_path / "done"
    assert cli(["score", str(log), "--format", "log", "--out", str(done)])[0] == 0
    before = (done / "cases.jsonl").read_text()
    code, _, err = cli(["score", str(log), "--format", "log", "--out", str(done)])
    assert code == 2 and "--overwrite" in err
    _one_error(err, done)
    code, _, err = cli(["score", str(log), "--format", "log", "--out", str(done), "--overwrite"])
    assert code == 0, err
    assert (done / "cases.jsonl").read_text() == before and json.loads(before)["answer"] == {"answer": "Bram Stoker"}

    # --out is for logs only
    code, _, err = cli(["score", str(log), "--format", "classic", "--out", str(tmp_path / "c")])
    assert code == 2 and "--out is for logs" in err and not (tmp_path / "c").exists()


def test_a_full_disk_at_the_second_file_leaves_the_earlier_out_as_it_was(tmp_path, cli, monkeypatch):
    """cases.jsonl and summary.json are written together: the disk filling while the summary is written leaves
    neither new (the earlier --out's files stay, no temporary file remains) and is one error naming the file."""
    import errno
    import os

    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "answer_relevance")
    log = _tiny_log(tmp_path)
    done = tmp_path / "done"
    assert cli(["score", str(log), "--format", "log", "--out", str(done)])[0] == 0
    before = {p.name: p.read_text() for p in done.iterdir()}
    log.write_text(log.read_text().replace("q1", "q2"))  # another query: new files would differ from the old
    real_write = os.write

    def full_at_the_summary(fd, data):
        if bytes(data[:1]) == b"{" and b'"format": "log"' in bytes(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_at_the_summary)
    code, out, err = cli(["score", str(log), "--format", "log", "--out", str(done), "--overwrite"])
    monkeypatch.undo()
    assert code == 2 and out == ""
    _one_error(err, done / "summary.json")
    assert "no space left" in err
    assert {p.name: p.read_text() for p in done.iterdir()} == before


def _data_folder_config(tmp_path: Path, monkeypatch) -> tuple[Path, Path, Path]:
    """(a data home that should stay absent, the config's data folder, a config file setting it); the judge model
    as assembled already (``EVALUATIONS_JUDGE_GGUF``), no ``EVALUATIONS_CACHE_DIR``."""
    from evaluations.judging.correctness.embedded import embedded_judge_path

    monkeypatch.setenv("EVALUATIONS_JUDGE_GGUF", str(embedded_judge_path()))
    monkeypatch.delenv("EVALUATIONS_CACHE_DIR", raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    data = tmp_path / "data"
    config = tmp_path / "config.yaml"
    config.write_text(f"storage:\n  data_dir: {data}\n")
    return home, data, config


def test_the_judges_caches_live_under_the_configs_data_folder(tmp_path, cli, monkeypatch):
    """``storage.data_dir`` is where everything this tool writes goes (a read-only home needs it): the verdict store
    of faithfulness and context relevance and the embedding cache of answer relevance are written under
    ``<storage.data_dir>/cache``, nothing under the default data home."""
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", ALL_JUDGES)
    home, data, config = _data_folder_config(tmp_path, monkeypatch)
    log = _tiny_log(tmp_path)

    code, out, err = cli(["score", str(log), "--format", "log", "--config", str(config), "--json"])
    assert code == 0, err
    assert json.loads(out)["reference_free"]["metrics"]["faithfulness"]["n"] == 1
    assert sorted(p.name for p in (data / "cache").glob("*.sqlite")) == ["judge_embeddings.sqlite",
                                                                         "llm_verdicts.sqlite"]
    assert not home.exists()

    # the verdicts are read back from there: the same log again makes no forward pass, with the same figures
    first = json.loads(out)["reference_free"]
    assert first["model_calls"] > 0
    code, again, err = cli(["score", str(log), "--format", "log", "--config", str(config), "--json"])
    second = json.loads(again)["reference_free"]
    assert code == 0 and second["model_calls"] == 0, err
    assert second["metrics"] == first["metrics"]


def test_a_runs_judges_get_the_configs_cache_folder_and_reports_do_not_name_it(tmp_path, monkeypatch):
    """The evaluators a run is made of (``pipeline.plan``, ``reference_free_evaluators``, ``llm_judge``) keep their
    caches under ``<storage.data_dir>/cache``; the folder is not among the arguments a report records."""
    from evaluations.core.config import LLMModel, load_config
    from evaluations.evaluators.llm_judges import llm_judge
    from evaluations.evaluators.reference_free import reference_free_evaluators
    from evaluations.judging.correctness.embedded import embedded_judge_path

    monkeypatch.setenv("EVALUATIONS_JUDGE_GGUF", str(embedded_judge_path()))
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", ALL_JUDGES)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(f"storage:\n  data_dir: {tmp_path / 'data'}\n")
    config = load_config(str(config_file))
    made = [*reference_free_evaluators(config, answers=True, retrieval=True),
            llm_judge(LLMModel(provider="embedded"), config)]
    assert [type(e).__name__ for e in made] == ["Faithfulness", "ContextRelevance", "AnswerRelevance",
                                                "EmbeddedLLMJudge"]  # the judges' turns at a served model
    for evaluator in made:
        assert evaluator.cache_dir == str(tmp_path / "data" / "cache"), evaluator
        assert "cache_dir" not in evaluator.build_serialization_arguments()


def test_the_judge_commands_cache_under_the_configs_data_folder(tmp_path, cli, monkeypatch):
    """judge-agreement, judge-check and score's agreement block read ``--config``: their model judges' verdicts and
    embeddings go to ``<storage.data_dir>/cache``, not the data home, and are read back from there. The rows are
    ``_squad_log``'s questions with their own passage (``_passage``); the verdict store under the data folder is
    this test's own and starts empty."""
    home, data, config = _data_folder_config(tmp_path, monkeypatch)
    articles = squad_articles(2)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"query": a["question"], "context": [_passage(a)],
                                        "generated_answer": a["sentence"], "label": True}) + "\n" for a in articles))

    def agreement() -> dict:
        code, out, err = cli(["judge-agreement", str(rows), "--judges", "answer_relevance,context_relevance",
                              "--config", str(config), "--json", "--resamples", "10"])
        assert code == 0, err
        return {j["judge"]: j for j in json.loads(out)["judges"]}

    first = agreement()
    assert first["context_relevance"]["n"] == 2 and first["answer_relevance"]["n"] == 2
    stores = data / "cache"
    assert sorted(p.name for p in stores.glob("*.sqlite")) == ["judge_embeddings.sqlite", "llm_verdicts.sqlite"]
    assert not home.exists()
    entries = _entries(stores)
    assert agreement() == first  # read back: nothing new written
    assert _entries(stores) == entries

    classic = tmp_path / "classic.jsonl"
    classic.write_text("".join(json.dumps({"query": a["question"], "reference_answer": a["answers"]["text"][0],
                                           "generated_answer": a["sentence"], "label": True}) + "\n"
                               for a in articles))
    code, out, err = cli(["score", str(classic), "--format", "classic", "--judges", "semantic",
                          "--config", str(config), "--json", "--resamples", "10"])
    assert code == 0, err
    assert json.loads(out)["agreement"]["judges"][0]["n"] == 2
    assert not home.exists()
    after = _entries(stores)  # the gold answers were embedded there
    assert after["judge_embeddings.sqlite"] > entries["judge_embeddings.sqlite"], (entries, after)


def _entries(folder: Path) -> dict[str, int]:
    """Rows of every table of each sqlite store in ``folder``."""
    import sqlite3

    counts = {}
    for path in folder.glob("*.sqlite"):
        with sqlite3.connect(path) as db:
            tables = [t for (t,) in db.execute("select name from sqlite_master where type = 'table'")]
            counts[path.name] = sum(db.execute(f"select count(*) from {t}").fetchone()[0] for t in tables)
    return counts


def _link_assembled_models(data: Path, *names: str) -> None:
    """``data/models`` holding links to the models assembled in the default data folder, with their sha256
    sidecars: a data folder of its own would otherwise assemble and hash another 1.6 GB of models (what assembly
    does is ``test_embedded_models``'s); the folder still resolves and checks each model the way it always does."""
    import shutil

    from evaluations.core.config import Config
    from evaluations.models import gguf

    (data / "models").mkdir(parents=True)
    for name in names:
        assembled = gguf.gguf_file(name, Config().data_dir())
        (data / "models" / assembled.name).symlink_to(assembled)
        sidecar = assembled.with_name(assembled.name + ".sha256")
        shutil.copyfile(sidecar, data / "models" / sidecar.name)


def test_judge_check_asks_the_embedded_model_its_judge_option_names(tmp_path, cli, monkeypatch):
    """``judge-check --judges context_relevance --judge embedded:NAME`` asks that model (it used to ask the default
    one whatever --judge said): its verdicts are the 0.5B's, so the default model's check afterwards asks again.
    The questions: SQuAD 2.0 rows of four articles, each passage cut to the sentence holding its gold answer (which
    model is asked does not depend on a passage's length; each prompt token costs each model time). The config's
    data folder starts with links to the two models as assembled already (``_link_assembled_models``)."""
    monkeypatch.delenv("EVALUATIONS_JUDGE_GGUF", raising=False)
    data = tmp_path / "data"
    _link_assembled_models(data, "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    config = tmp_path / "config.yaml"
    config.write_text(f"storage:\n  data_dir: {data}\n")
    squad = tmp_path / "squad.jsonl"
    squad.write_text("".join(json.dumps({**{k: v for k, v in row.items() if k != "sentence"},
                                         "context": row["sentence"]}) + "\n" for row in squad_articles(4)))

    def check(model: str) -> tuple[dict, str]:
        code, out, err = cli(["judge-check", str(squad), "--judges", "context_relevance", "--limit", "1",
                              "--judge", model, "--config", str(config), "--json"])
        assert code in (0, 1), err
        return json.loads(out)["reference_free"]["context_relevance"], err

    small, err = check("embedded:qwen2.5-coder-0.5b")
    assert "fitted through embedded, the verdicts come from embedded:qwen2.5-coder-0.5b" in err
    assert small["controls"] == 2  # the question's own passage and another question's
    after_small = _entries(data / "cache")["llm_verdicts.sqlite"]
    assert after_small > 0
    _, err = check("embedded")
    assert "fitted through" not in err
    assert _entries(data / "cache")["llm_verdicts.sqlite"] == 2 * after_small


def test_a_terminal_sees_the_judges_progress_and_a_pipe_gets_only_the_summary(squad_log):
    """The reference-free judges ask a model per query, so on a terminal ``score`` draws a bar with the queries
    judged (it drew nothing for minutes); piped, stdout is the summary alone. The log and judge cache folder are the
    module's: when the first test of the module ran, the process reads its verdicts instead of judging again, and
    the bar is drawn all the same (rich draws its last state, the queries judged of the total, when it stops)."""
    import os
    import pty
    import subprocess
    import sys
    import time

    _, log, judge_cache = squad_log
    env = {**os.environ, "EVALUATIONS_REFERENCE_FREE": ALL_JUDGES, "COLUMNS": "100",
           "EVALUATIONS_CACHE_DIR": str(judge_cache)}
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "evaluations", "score", str(log), "--format", "log"],
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    drawn, deadline = b"", time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0, drawn.decode(errors="replace")
    text = drawn.decode(errors="replace")
    assert "judging (faithfulness, context_relevance)" in text, text
    assert re.search(r"[012]/2", text), text  # the queries judged, of the log's two

    # cached (by this process at the latest): fast, and piped
    piped = run_evaluations(["score", str(log), "--format", "log", "--json"],
                           capture_output=True, text=True, env=env, timeout=600)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["queries"] == 2 and "judging" not in piped.stdout + piped.stderr
