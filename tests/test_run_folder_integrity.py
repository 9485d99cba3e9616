"""A run folder that was damaged after the run is refused with the line and the fix, never read as another run:
undecodable bytes, a NaN metric, a case recorded twice, fewer records than summary.json counts (a file cut at a line
boundary, or emptied), a damaged report.json on --resume; and an error at line 100 prints its line number (rich read
":100:" as an emoji)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from inprocess import run_evaluations

REPO = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_evaluations([*args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=300)


@pytest.fixture
def damaged(scifact_runs, tmp_path):
    """A copy of a real run folder, to damage."""
    def copy(name: str) -> Path:
        folder = tmp_path / name
        shutil.copytree(scifact_runs["fts"], folder)
        return folder
    return copy


def _gate(folder: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: ndcg@10, min: 0.1}\n")
    return cli("gate", str(folder), "--rules", str(rules))


def _lines(folder: Path) -> list[str]:
    return (folder / "cases.jsonl").read_text().splitlines(keepends=True)


def test_an_intact_copy_passes(damaged, tmp_path):
    proc = _gate(damaged("intact"), tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("damage, message", [
    ("latin1", r"cases.jsonl:2: not valid UTF-8 (byte 0xe9"),
    ("nan", r"cases.jsonl:2: metric 'ndcg@10' is nan, not a finite number"),
    ("duplicate", r"cases.jsonl:31: case '{case}' (repeat 0) is recorded twice, first on line 1"),
    ("fewer", "cases.jsonl has 5 case records but summary.json counts 30"),
    ("empty", "cases.jsonl has 0 case records but summary.json counts 30"),
])
def test_a_damaged_cases_file_is_refused_with_the_line(damaged, tmp_path, damage, message):
    folder = damaged(damage)
    lines = _lines(folder)
    assert len(lines) == 30
    first = json.loads(lines[0])
    if damage == "latin1":
        lines[1] = lines[1].replace('"', '"\xe9', 1)
        (folder / "cases.jsonl").write_bytes("".join(lines).encode("latin-1"))
    elif damage == "nan":
        record = json.loads(lines[1])
        record["metrics"]["ndcg@10"] = float("nan")
        lines[1] = json.dumps(record) + "\n"  # Python writes NaN, as a hand edit or another tool might
        (folder / "cases.jsonl").write_text("".join(lines))
    elif damage == "duplicate":
        twice = {**first, "metrics": {k: 1.0 for k in first["metrics"]}}
        (folder / "cases.jsonl").write_text("".join(lines) + json.dumps(twice) + "\n")
    elif damage == "fewer":
        (folder / "cases.jsonl").write_text("".join(lines[:5]))
    else:
        (folder / "cases.jsonl").write_text("")
    for proc in (_gate(folder, tmp_path), cli("compare", str(damaged("other")), str(folder)),
                 cli("report", str(folder))):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert message.format(case=first["name"]) in proc.stderr, proc.stderr


@pytest.mark.parametrize("damage, message", [
    ("no metrics", "summary.json: not a run summary: no 'metrics', 'counts'"),
    ("latin1", "summary.json: not valid UTF-8 (byte 0xe9 on line 1)"),
])
def test_a_damaged_summary_is_refused_by_every_reader(damaged, tmp_path, damage, message):
    """A summary.json without its metrics and counts was read as a run that scored nothing: report rewrote the pages
    as "retrieval was not scored" while gate passed on cases.jsonl's nDCG, and the record count went unchecked.
    Undecodable bytes were "not valid JSON"; a BOM is accepted."""
    folder = damaged(damage.replace(" ", "_"))
    summary = json.loads((folder / "summary.json").read_text())
    before = (folder / "report.html").read_bytes()
    if damage == "no metrics":
        del summary["metrics"], summary["counts"]
        (folder / "summary.json").write_text(json.dumps(summary))
    else:
        text = json.dumps({**summary, "name": "caf\xe9"}, ensure_ascii=False)
        (folder / "summary.json").write_bytes(text.encode("latin-1"))
    for proc in (_gate(folder, tmp_path), cli("compare", str(damaged("other")), str(folder)),
                 cli("report", str(folder))):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert message in proc.stderr, proc.stderr
    assert (folder / "report.html").read_bytes() == before  # the pages are not rewritten
    bom = damaged("bom")
    (bom / "summary.json").write_bytes(b"\xef\xbb\xbf" + (bom / "summary.json").read_bytes())
    assert _gate(bom, tmp_path).returncode == 0


@pytest.mark.parametrize("text", ["{bad", "[]"])
def test_resume_of_a_folder_whose_report_json_is_damaged_is_refused(damaged, scifact_runs, tmp_path, text):
    folder = damaged("resume")
    (folder / "report.json").write_text(text)
    (folder / "summary.json").unlink()  # an unfinished-looking folder: --resume reads report.json
    data = scifact_runs["fts"].parent
    proc = cli("beir", str(data / "data"), "--search-mode", "fts", "--skip-qa", "--no-progress",
               "--config", str(data / "base.yaml"), "--db", str(data / "db-base"), "--resume", str(folder))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{folder / 'report.json'}: not" in proc.stderr, proc.stderr


def test_an_error_at_line_100_names_line_100(tmp_path):
    rows = [json.dumps({"id": f"q{i}", "query": f"question {i}?"}) for i in range(99)] + ['{"id": "q99", bad']
    data = tmp_path / "q.jsonl"
    data.write_text("\n".join(rows) + "\n")
    proc = cli("run", str(data), "--corpus", str(data), "--skip-qa")
    assert proc.returncode == 2 and f"{data}:100: not valid JSON" in proc.stderr, proc.stderr


def test_a_beir_query_id_given_twice_is_refused(tmp_path):
    """A second queries.jsonl row with an id already given replaced the first's text, and the case ran on it."""
    from conftest import write_scifact_subset

    folder = write_scifact_subset(tmp_path / "beir", 5, 20)
    queries = folder / "queries.jsonl"
    rows = queries.read_text().splitlines()
    first = json.loads(rows[0])
    queries.write_text("\n".join([*rows, json.dumps({**first, "text": "another text"})]) + "\n")
    proc = cli("beir", str(folder), "--skip-qa", "--no-progress", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{queries}:{len(rows) + 1}: duplicate query id {first['_id']!r}" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("damage, where, message", [
    ("qrels_folder", "qrels/test.tsv", "is a folder, expected a qrels file"),
    ("qrels_header_only", "qrels/test.tsv", "no relevance judgements (the file is empty or only a header)"),
    ("empty_corpus", "corpus.jsonl", "no documents"),
])
def test_a_beir_folder_with_an_empty_or_misplaced_file_names_it(tmp_path, damage, where, message):
    """The BEIR file at fault is named: a qrels "file" that is a folder (was: use --split with one of ['test']), a
    header-only qrels file (was: no queries to evaluate; check --limit), an empty corpus (was: a qrels line's
    document is not in the corpus)."""
    from conftest import write_scifact_subset

    folder = write_scifact_subset(tmp_path / "beir", 5, 20)
    qrels = folder / "qrels" / "test.tsv"
    if damage == "qrels_folder":
        qrels.unlink()
        qrels.mkdir()
    elif damage == "qrels_header_only":
        qrels.write_text(qrels.read_text().splitlines()[0] + "\n")
    else:
        (folder / "corpus.jsonl").write_text("")
    proc = cli("beir", str(folder), "--skip-qa", "--no-progress", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{folder / where}: {message}" in proc.stderr, proc.stderr


def test_a_system_url_of_another_scheme_is_named_as_a_url(tmp_path):
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "query": "question?"}) + "\n")
    proc = cli("run", str(data), "--corpus", str(data), "--skip-qa", "--system", "ftp://example.org/rag")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "--system ftp://example.org/rag: no system kind serves ftp:// URLs" in proc.stderr, proc.stderr
