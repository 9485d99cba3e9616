"""Bad input files through the CLI, run as the user runs it (a subprocess): a file that is not UTF-8 (a Latin-1
byte, gzip bytes), a corrupt, truncated or fake .gz, a TREC run with 5 columns, cut-offs that are not positive,
a repeated WixQA question id, a system module with a syntax error. Each is one error naming the file:line (or
the key) and the fix, exit code 2, no traceback, nothing written.

The inputs are real rows (``../shared/data``, the repository's golden file) with the fault put in.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
import yaml
from conftest import DATA, WIX_SAMPLE, assert_one_error, write_scifact_subset
from inprocess import run_evaluations

REPO = Path(__file__).resolve().parents[1]
EVOUNA_NQ = DATA / "evouna" / "NQ.jsonl.gz"
LATIN1 = "é".encode("latin-1")  # b"\xe9": a Latin-1 byte that is not UTF-8


def run_cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """(exit code, stdout + stderr) of ``python -m evaluations ARGS`` in ``cwd``."""
    proc = run_evaluations([*args], capture_output=True, cwd=cwd, timeout=300,
                          env={**os.environ, **(env or {})})
    return proc.returncode, proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def _real_rows(path: Path, n: int) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(next(handle)) for _ in range(n)]


def _with_latin1(text: str, line: int) -> bytes:
    """``text`` (ASCII) as bytes with a Latin-1 'é' at the end of line ``line`` (1-based)."""
    lines = text.encode("ascii").splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip(b"\n") + LATIN1 + b"\n"
    return b"".join(lines)


def _classic_rows(n: int) -> list[dict]:
    """Labelled answers of real NQ questions (EVOUNA): the ``score`` classic format."""
    return [{"query": r["question"], "context": [], "generated_answer": r["answer_fid"],
             "reference_answer": r["golden_answer"], "label": r["judge_fid"]} for r in _real_rows(EVOUNA_NQ, n)]


def _jsonl_text(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)  # ensure_ascii: the text is ASCII


@pytest.fixture(scope="module")
def beir_small(tmp_path_factory) -> Path:
    """3 real SciFact test queries over their relevant documents + 5 others."""
    return write_scifact_subset(tmp_path_factory.mktemp("beir_small"), 3, 5)


@pytest.fixture(scope="module")
def records(beir_small) -> list[dict]:
    """The SciFact queries as records of a generic dataset file (``evaluations run``)."""
    relevant: dict[str, list[str]] = {}
    for line in (beir_small / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, _ = line.split("\t")
        relevant.setdefault(qid, []).append(doc)
    queries = [json.loads(line) for line in (beir_small / "queries.jsonl").read_text().splitlines()]
    return [{"id": q["_id"], "query": q["text"], "relevant_doc_ids": relevant[q["_id"]]} for q in queries]


def _squad_question(tmp_path: Path) -> tuple[dict, Path, Path]:
    """SQuAD 2.0's first question, written as a one-row dataset (q.jsonl) and its paragraph as a one-row corpus
    (corpus.jsonl) in ``tmp_path``."""
    query = json.loads(gzip.open(DATA / "squad2_dev_cs224n" / "questions.jsonl.gz", "rt").readline())
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": query["id"], "query": query["question"]}) + "\n")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": query["paragraph_id"], "text": query["context"]}) + "\n")
    return query, data, corpus


def _run_args(dataset: Path, corpus: Path, out: Path, *extra: str) -> list[str]:
    return ["run", str(dataset), "--corpus", str(corpus), "--skip-qa", "--search-mode", "fts", "--db",
            str(out.parent / "db"), "--out", str(out), "--no-progress", *extra]


# -- 1. gate rules and matrix grids that are not UTF-8 -----------------------------------------------------------

def test_gate_rules_not_utf8(tmp_path):
    """A Latin-1 byte in the rules file: its file:line; gzip bytes: the file is compressed."""
    rules = tmp_path / "rules.yaml"
    rules.write_bytes(_with_latin1("rules:\n  - {metric: ndcg@10, min: 0.5}  # fiable\n", 2))
    assert_one_error(*run_cli(tmp_path, "gate", str(tmp_path), "--rules", str(rules)), f"{rules}:2:", "UTF-8")
    packed = tmp_path / "packed.yaml"
    packed.write_bytes(gzip.compress(b"rules:\n  - {metric: ndcg@10, min: 0.5}\n"))
    assert_one_error(*run_cli(tmp_path, "gate", str(tmp_path), "--rules", str(packed)), f"{packed}:",
                     "gzip-compressed")


@pytest.mark.parametrize("rules, message", [
    ("rules: [{metric: ndcg@10, min: .nan}]", "rules[0].min: Input should be a finite number"),
    ("rules: [{metric: ndcg@10, max: .inf}]", "rules[0].max: Input should be a finite number"),
    ("rules: [{metric: ndcg@10, min: true}]", "rules[0].min: a bound is a number, not true/false"),
    ("rules: []", "no rules and no zero_tolerance metrics: the gate would check nothing"),
])
def test_gate_rules_that_could_never_fail_are_refused(tmp_path, rules, message):
    """A NaN bound ("ndcg@10 >= nan" always held), a boolean one (read as 1) and an empty list of rules passed."""
    path = tmp_path / "rules.yaml"
    path.write_text(rules + "\n")
    assert_one_error(*run_cli(tmp_path, "gate", str(tmp_path), "--rules", str(path)), f"{path}:", message)


def test_matrix_grid_not_utf8(tmp_path, beir_small):
    grid = tmp_path / "grid.yaml"
    text = f"dataset: beir\nsource: {beir_small}\nskip_qa: true\naxes:\n  search_mode: [fts]  # recherche\n"
    grid.write_bytes(_with_latin1(text, 5))
    assert_one_error(*run_cli(tmp_path, "matrix", str(grid), "--no-progress"), f"{grid}:5:", "UTF-8")
    packed = tmp_path / "packed.yaml"
    packed.write_bytes(gzip.compress(text.encode()))
    assert_one_error(*run_cli(tmp_path, "matrix", str(packed), "--no-progress"), f"{packed}:", "gzip-compressed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.yaml", "packed.yaml"]  # nothing written


# -- 2. JSON and YAML dataset files ----------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_dataset_file_not_utf8(tmp_path, beir_small, records, suffix):
    """As a JSONL dataset is: the file:line of the byte (the second record's query)."""
    dataset = tmp_path / f"dataset{suffix}"
    if suffix == ".json":
        text = json.dumps(records, indent=2) + "\n"
    else:
        text = yaml.safe_dump(records, allow_unicode=False, width=10_000, sort_keys=False)
    line = [n for n, s in enumerate(text.splitlines(), 1) if s.lstrip().startswith(('"query":', "query:"))][1]
    dataset.write_bytes(_with_latin1(text, line))
    out = tmp_path / "out"
    code, output = run_cli(tmp_path, *_run_args(dataset, beir_small / "corpus.jsonl", out))
    assert_one_error(code, output, f"{dataset}:{line}:", "not valid UTF-8", "iconv")
    assert not out.exists()


# -- 3. golden code-span file ----------------------------------------------------------------------------------

def test_golden_validate_not_utf8(tmp_path):
    golden = tmp_path / "golden.json"
    lines = (REPO / "datasets" / "golden_code_queries.json").read_bytes().splitlines(keepends=True)
    line = [n for n, s in enumerate(lines, 1) if b'"query":' in s][1]  # the second query's text
    lines[line - 1] = lines[line - 1].replace(b'",', LATIN1 + b'",', 1)
    golden.write_bytes(b"".join(lines))
    code, output = run_cli(tmp_path, "golden", "validate", str(golden), "--repo", str(REPO))
    assert_one_error(code, output, f"{golden}:{line}:", "not valid UTF-8")


# -- 4. score: format detection on files that are not UTF-8 or not gzip, a 5-column TREC run -----------------

def test_score_log_not_utf8(tmp_path):
    """The Latin-1 byte on line 1 (read to tell the format) and on line 3 (a row)."""
    text = _jsonl_text(_classic_rows(4))
    for line in (1, 3):
        rows = tmp_path / f"answers{line}.jsonl"
        rows.write_bytes(_with_latin1(text, line))
        assert_one_error(*run_cli(tmp_path, "score", str(rows), "--resamples", "10"), f"{rows}:{line}:",
                         "not valid UTF-8")


def test_score_golden_json_not_utf8(tmp_path):
    """A golden set given as a JSON array with a Latin-1 byte: the format probe (golden code queries or a dataset
    file) used to raise UnicodeDecodeError."""
    query = _squad_question(tmp_path)[0]
    golden = tmp_path / "golden.json"
    golden.write_bytes(json.dumps([{"id": query["id"], "query": query["question"] + " é",
                                    "relevant_doc_ids": [query["paragraph_id"]]}], ensure_ascii=False)
                       .encode("latin-1"))
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"query_id": query["id"], "retrieved": [query["paragraph_id"]]}) + "\n")
    assert_one_error(*run_cli(tmp_path, "score", str(log), "--golden", str(golden), "--no-reference-free"),
                     f"{golden}:1:", "not valid UTF-8")


def test_score_bad_gzip(tmp_path):
    """Corrupt, cut to 15 bytes, and a plain file named .gz: exit 2 naming the file (the cut one is not an
    'aborted' exit 130)."""
    packed = gzip.compress(_jsonl_text(_classic_rows(20)).encode(), mtime=0)
    corrupt = tmp_path / "corrupt.jsonl.gz"
    corrupt.write_bytes(packed[:20] + bytes(b ^ 0xFF for b in packed[20:60]) + packed[60:])
    assert_one_error(*run_cli(tmp_path, "score", str(corrupt)), f"{corrupt}:", "not a valid gzip file", "gzip -t")
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[:15])
    assert_one_error(*run_cli(tmp_path, "score", str(cut)), f"{cut}:", "truncated")
    fake = tmp_path / "fake.jsonl.gz"
    fake.write_text(_jsonl_text(_classic_rows(2)))
    assert_one_error(*run_cli(tmp_path, "score", str(fake)), f"{fake}:", "not a gzip file")


def _trec_run(beir_small: Path) -> list[str]:
    """A TREC run (6 columns) ranking each SciFact query's relevant documents."""
    rows = [line.split("\t") for line in (beir_small / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    return [f"{qid} Q0 {doc} {rank} {1.0 / rank:.3f} bm25" for rank, (qid, doc, _) in enumerate(rows, 1)]


def test_score_trec_run_with_5_columns(tmp_path, beir_small):
    run = tmp_path / "run.trec"
    run.write_text("".join(" ".join(line.split()[:5]) + "\n" for line in _trec_run(beir_small)))
    code, output = run_cli(tmp_path, "score", str(run), "--qrels", str(beir_small / "qrels" / "test.tsv"))
    assert_one_error(code, output, f"{run}:1:", "expected 6 columns", "got 5")
    assert "unsupported file type" not in output


# -- 5. TREC qrels ---------------------------------------------------------------------------------------------

def test_trec_qrels_not_utf8(tmp_path, beir_small):
    run = tmp_path / "run.trec"
    run.write_text("".join(line + "\n" for line in _trec_run(beir_small)))
    qrels = tmp_path / "qrels.txt"
    text = "".join(f"{qid} 0 {doc} {grade}\n" for qid, doc, grade in
                   (line.split("\t") for line in (beir_small / "qrels" / "test.tsv").read_text().splitlines()[1:]))
    qrels.write_bytes(_with_latin1(text, 2))
    assert_one_error(*run_cli(tmp_path, "score", str(run), "--qrels", str(qrels)), f"{qrels}:2:", "not valid UTF-8")


# -- 6. cut-offs that are not positive -------------------------------------------------------------------------

def test_config_k_not_positive(tmp_path, beir_small, records):
    """``evaluation.k: [0, -1]`` from --config and from $HAIKU_RAG_CONFIG_PATH: refused when the config is read,
    naming the key, before any case runs."""
    config = tmp_path / "bad.yaml"
    config.write_text("evaluation:\n  k: [0, -1]\n")
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(_jsonl_text(records))
    out = tmp_path / "out"
    for extra, env in (([f"--config={config}"], None), ([], {"HAIKU_RAG_CONFIG_PATH": str(config)})):
        code, output = run_cli(tmp_path, *_run_args(dataset, beir_small / "corpus.jsonl", out, *extra), env=env)
        assert_one_error(code, output, str(config), "'evaluation.k'", "positive integers")
        assert not out.exists() and not (tmp_path / "db").exists()


def test_matrix_grid_k_not_positive(tmp_path, beir_small):
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"dataset: beir\nsource: {beir_small}\nskip_qa: true\nk: [0, -1]\nout: {tmp_path / 'm'}\n"
                    "axes:\n  search_mode: [fts]\n")
    assert_one_error(*run_cli(tmp_path, "matrix", str(grid), "--no-progress"), str(grid), "k:", "positive integers")
    assert not (tmp_path / "m").exists()


# -- 7. WixQA question ids -------------------------------------------------------------------------------------

def test_wix_duplicate_question_id(tmp_path):
    rows = _real_rows(WIX_SAMPLE, 3)
    rows[2]["id"] = rows[1]["id"]
    source = tmp_path / "wix.jsonl"
    source.write_text(_jsonl_text(rows))
    out = tmp_path / "out"
    code, output = run_cli(tmp_path, "wix", "--source", str(source), "--skip-qa", "--search-mode", "fts", "--db",
                           str(tmp_path / "db"), "--out", str(out), "--no-progress")
    assert_one_error(code, output, f"{source}:3:", f"duplicate question id {rows[1]['id']!r}", f"{source}:2")
    assert not out.exists()


# -- 8. a system module with a syntax error --------------------------------------------------------------------

def test_system_module_with_syntax_error(tmp_path, beir_small, records):
    (tmp_path / "my_rag.py").write_text('"""My system."""\n\n\ndef search(request:\n    return {"retrieved": []}\n')
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(_jsonl_text(records))
    out = tmp_path / "out"
    code, output = run_cli(tmp_path, *_run_args(dataset, beir_small / "corpus.jsonl", out, "--system",
                                                "my_rag:search"))
    assert_one_error(code, output, f"{tmp_path / 'my_rag.py'}:4:", "SyntaxError", "my_rag")
    assert not out.exists()


def test_corpus_folder_file_not_utf8_and_empty_corpus_file(tmp_path):
    """A .txt of a corpus folder with a Latin-1 byte was read with the byte replaced; an empty corpus file ran the
    questions against no documents (exit 0)."""
    query, data, _ = _squad_question(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text(query["context"])
    (folder / "b.txt").write_bytes(query["context"].encode() + b"\ncaf" + LATIN1 + b"\n")
    assert_one_error(*run_cli(tmp_path, "run", str(data), "--corpus", str(folder), "--skip-qa", "--no-progress"),
                     f"{folder / 'b.txt'}:2:", "not valid UTF-8")
    empty = tmp_path / "corpus.jsonl"
    empty.write_text("")
    assert_one_error(*run_cli(tmp_path, "run", str(data), "--corpus", str(empty), "--skip-qa", "--no-progress"),
                     f"{empty}: no documents in the corpus file")


def test_a_yaml_key_given_twice_is_refused(tmp_path):
    """A config with two 'search:' sections kept the last one silently; a rule with two 'min:' likewise."""
    query, data, corpus = _squad_question(tmp_path)
    config = tmp_path / "c.yaml"
    config.write_text("search:\n  limit: 3\ncache: {enabled: false}\nsearch:\n  limit: 7\n")
    assert_one_error(*run_cli(tmp_path, "run", str(data), "--corpus", str(corpus), "--skip-qa", "--config",
                              str(config)), f"{config}:4:", "key 'search' is given twice", "first on line 1")
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - metric: ndcg@10\n    min: 0.9\n    min: 0.1\n")
    assert_one_error(*run_cli(tmp_path, "gate", str(tmp_path), "--rules", str(rules)), f"{rules}:4:",
                     "key 'min' is given twice")


def test_gate_reads_its_config_even_without_a_history_baseline(tmp_path):
    """gate --config with an unknown key passed when no --baseline last needed the config's history path."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {metric: ndcg@10, min: 0.1}\n")
    config = tmp_path / "c.yaml"
    config.write_text("serch: {limit: 3}\n")
    assert_one_error(*run_cli(tmp_path, "gate", str(tmp_path), "--rules", str(rules), "--config", str(config)),
                     str(config), "serch")


def test_a_history_path_that_is_a_folder_is_refused_before_the_run(tmp_path):
    """history.path naming a folder was found only after the run, as a warning, and the run was not recorded."""
    query, data, corpus = _squad_question(tmp_path)
    (tmp_path / "store").mkdir()
    config = tmp_path / "c.yaml"
    config.write_text(f"history: {{path: '{tmp_path / 'store'}'}}\n")
    assert_one_error(*run_cli(tmp_path, "run", str(data), "--corpus", str(corpus), "--skip-qa", "--config",
                              str(config), "--out", str(tmp_path / "out")), "history.path", "is a folder")
    assert not (tmp_path / "out").exists()


def test_a_utf16_file_is_named_as_utf16(tmp_path):
    """A dataset saved as "Unicode" by a Windows tool (UTF-16 with its byte order mark): the fix said to convert
    from Latin-1, which garbles it; now the encoding is named and the right iconv given."""
    from evaluations.core.errors import EvaluationsError
    from evaluations.datasets.rows import iter_rows

    path = tmp_path / "questions.jsonl"
    path.write_bytes('{"id": "q1", "query": "Où est la tour Eiffel ?"}\n'.encode("utf-16"))
    with pytest.raises(EvaluationsError) as info:
        list(iter_rows(path))
    assert info.value.where == str(path) and "the file is UTF-16" in info.value.message
    assert "iconv -f UTF-16 -t UTF-8 questions.jsonl > OUT" in info.value.fix


def test_a_line_cut_off_is_placed_at_its_column(tmp_path):
    """A JSONL line cut off mid-object was reported at "column 1" (the line's newline was parsed with it); the
    column is where Python's own parser places the problem on that line."""
    from evaluations.core.errors import EvaluationsError
    from evaluations.datasets.rows import iter_rows

    cut = '{"id": "q2", "query": "x", '
    path = tmp_path / "questions.jsonl"
    path.write_text('{"id": "q1", "query": "x"}\n' + cut + "\n", encoding="utf-8")
    with pytest.raises(json.JSONDecodeError) as oracle:
        json.loads(cut)
    with pytest.raises(EvaluationsError) as info:
        list(iter_rows(path))
    assert info.value.where == f"{path}:2" and f"column {oracle.value.colno})" in info.value.message
    assert oracle.value.colno > 1
