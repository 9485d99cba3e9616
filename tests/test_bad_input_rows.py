"""Rows of `evaluations run` files that are valid JSON/JSONL but not what they seem, through the CLI: the dataset
array found by the first "queries" text instead of the parsed object, a key given twice, a blank id, query or gold
answer, corpus fields of another type, and a corpus folder's hidden, empty and unread files. Each bad input is one
error naming the file:line and field, exit 2, no traceback, no run folder.

The corpus is three short documents written here; every expected value is read off the rows written by the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_error

DOCS = {"d1": "The Eiffel Tower is in Paris. It was completed in 1889.",
        "d2": "Mount Fuji is the highest mountain in Japan.",
        "d3": "The Amazon river flows through Brazil."}
QUERIES = [{"id": "q1", "query": "Where is the Eiffel Tower?", "relevant_doc_ids": ["d1"]},
           {"id": "q2", "query": "What is the highest mountain in Japan?", "relevant_doc_ids": ["d2"]}]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    return _jsonl(tmp_path / "c1.jsonl", [{"id": k, "text": v} for k, v in DOCS.items()])


def _run(cli, tmp_path: Path, data: Path, corpus: Path, out: str = "out") -> tuple[int, str, str]:
    return cli(["run", str(data), "--corpus", str(corpus), "--search-mode", "fts", "--skip-qa", "--no-reference-free",
                "--no-progress", "--db", str(tmp_path / "db"), "--out", str(tmp_path / out), "--json"])


def _refused(cli, tmp_path: Path, data: Path, corpus: Path, *needles: str) -> None:
    code, out, err = _run(cli, tmp_path, data, corpus, out="refused")
    assert_one_error(code, out + err, *needles)
    assert not (tmp_path / "refused").exists()


def _cases(tmp_path: Path) -> dict[str, list[str]]:
    """{case name: retrieved ids} of the run folder."""
    lines = (tmp_path / "out" / "cases.jsonl").read_text().splitlines()
    return {r["name"]: r["retrieved"] for r in map(json.loads, lines)}


def test_json_dataset_whose_first_queries_text_is_not_the_array(cli, tmp_path, corpus):
    """``{"info": {"queries": 2, "tags": ["x"]}, "queries": [...]}``: the rows were looked for after the first
    "queries" text, in info's "tags" (a JSONDecodeError traceback, or every record numbered line 1)."""
    data = tmp_path / "set.json"
    records = ",\n".join("  " + json.dumps(q) for q in QUERIES)
    data.write_text('{"info": {"queries": 2, "tags": ["x"]},\n "queries": [\n' + records + "\n]}\n")
    code, out, err = _run(cli, tmp_path, data, corpus)
    assert code == 0, err
    assert json.loads(out)["counts"]["cases"] == 2
    assert {name: ids[0] for name, ids in _cases(tmp_path).items()} == {"q1": "d1", "q2": "d2"}

    bad = tmp_path / "bad.json"  # the second record (line 4 of the file) has a query that is a number
    bad.write_text('{"info": {"queries": 2, "tags": ["x", "y"]},\n "queries": [\n  ' + json.dumps(QUERIES[0])
                   + ',\n  {"id": "q2", "query": 3}\n]}\n')
    _refused(cli, tmp_path, bad, corpus, f"{bad}:4: field 'query'")


@pytest.mark.parametrize("blank", ["", "   "])
def test_blank_id_is_refused(cli, tmp_path, corpus, blank):
    """A blank id was renamed "Case 2" by pydantic-evals: it could collide with a real id "Case 2"."""
    data = _jsonl(tmp_path / "set.jsonl", [QUERIES[0], {**QUERIES[1], "id": blank}])
    _refused(cli, tmp_path, data, corpus, f"{data}:2: field 'id': empty")


def test_whitespace_only_query_is_refused(cli, tmp_path, corpus):
    """A query of spaces passed min_length=1 and was run and scored 0."""
    data = _jsonl(tmp_path / "set.jsonl", [QUERIES[0], {**QUERIES[1], "query": "   "}])
    _refused(cli, tmp_path, data, corpus, f"{data}:2: field 'query': empty")


@pytest.mark.parametrize("answers", [[""], ["   "], ["Paris", " "]])
def test_blank_gold_answer_is_refused(cli, tmp_path, corpus, answers):
    """A blank gold answer was left out of answer accuracy as if the case had no gold."""
    data = _jsonl(tmp_path / "set.jsonl", [{**QUERIES[0], "answers": answers}, QUERIES[1]])
    index = answers.index(next(a for a in answers if not a.strip()))
    _refused(cli, tmp_path, data, corpus, f"{data}:1: field 'answers.{index}': empty answer")


def test_a_json_key_given_twice_is_refused(cli, tmp_path, corpus):
    """``json.loads`` kept the last of two keys silently: relevant ["d1"] then ["d3"] judged against d3 only."""
    row = '{"id": "q1", "query": "Where is the Eiffel Tower?", "relevant_doc_ids": ["d1"], "relevant_doc_ids": ["d3"]}'
    jsonl = tmp_path / "set.jsonl"
    jsonl.write_text(json.dumps(QUERIES[1]) + "\n" + row + "\n")
    _refused(cli, tmp_path, jsonl, corpus, f"{jsonl}:2: key 'relevant_doc_ids' is given twice")
    array = tmp_path / "set.json"
    array.write_text("[\n  " + json.dumps(QUERIES[1]) + ",\n\n  " + row + "\n]\n")
    _refused(cli, tmp_path, array, corpus, f"{array}:4: key 'relevant_doc_ids' is given twice")
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text('{"queries": [],\n "queries": [' + json.dumps(QUERIES[0]) + "]}\n")
    _refused(cli, tmp_path, wrapped, corpus, f"{wrapped}:2: key 'queries' is given twice")

    data = _jsonl(tmp_path / "q.jsonl", QUERIES)
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d1", "text": DOCS["d1"]}) + "\n"
                    + '{"id": "d2", "text": "' + DOCS["d2"] + '", "text": "' + DOCS["d3"] + '"}\n')
    _refused(cli, tmp_path, data, docs, f"{docs}:2: key 'text' is given twice")
    docs_json = tmp_path / "docs.json"
    docs_json.write_text('{"count": 2, "rows": [\n  {"id": "d1", "text": "a"},\n'
                         '  {"id": "d2", "id": "d3", "text": "b"}\n]}')
    _refused(cli, tmp_path, data, docs_json, f"{docs_json}:3: key 'id' is given twice")
    csv = tmp_path / "docs.csv"
    csv.write_text(f'id,text,text\nd1,"{DOCS["d1"]}",x\nd2,"{DOCS["d2"]}",y\n')
    _refused(cli, tmp_path, data, csv, f"{csv}:1: column 'text' is given twice")


def test_corpus_fields_of_another_type_are_refused(cli, tmp_path):
    """A list, object or boolean text (or id, or title) was indexed as its Python str(): "['a', 'b']"."""
    rows = [{"id": "d1", "text": ["a", "b"]}, {"id": "d2", "text": {"body": DOCS["d2"]}}, {"id": "d3", "text": True},
            {"id": True, "text": DOCS["d1"]}, {"id": 1.0, "text": DOCS["d1"]}, {"id": ["x"], "text": DOCS["d1"]},
            {"id": "d6", "text": "x", "title": ["a", "b"]}, {"id": 7, "text": DOCS["d3"]}, {"id": "  ", "text": "x"}]
    docs = _jsonl(tmp_path / "docs.jsonl", rows)
    data = _jsonl(tmp_path / "q.jsonl", [{"id": "q1", "query": "Where is the Eiffel Tower?"}])
    _refused(cli, tmp_path, data, docs, "8 problem(s) in the corpus",
             f"{docs}:1: field 'text' must be a string, got an array",
             f"{docs}:2: field 'text' must be a string, got an object",
             f"{docs}:3: field 'text' must be a string, got a boolean",
             f"{docs}:4: field 'id' must be a string or an integer, got a boolean",
             f"{docs}:5: field 'id' must be a string or an integer, got a number",
             f"{docs}:6: field 'id' must be a string or an integer, got an array",
             f"{docs}:7: field 'title' must be a string or null, got an array",
             f"{docs}:9: field 'id': missing or empty")
    code, out, err = _run(cli, tmp_path, data, docs, out="refused")
    assert f"{docs}:8" not in out + err  # an integer id is a document id


def test_corpus_folder_hidden_empty_and_unread_files(cli, tmp_path):
    """Hidden files and folders were indexed and competed in retrieval; an empty file was indexed silently; files
    of other types were skipped without a word."""
    folder = tmp_path / "docs"
    for name, text in {"d1.md": DOCS["d1"], "sub/d2.txt": DOCS["d2"], ".hidden.md": "Eiffel Tower Eiffel Tower",
                       ".git/notes.md": "Where is the Eiffel Tower?", ".obsidian/x.md": "Eiffel Tower in Paris",
                       "a.html": "<p>Eiffel</p>", "b.html": "<p>Fuji</p>", "c.rst": "Amazon", "d.markdown": "Paris",
                       "README": "notes"}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    data = _jsonl(tmp_path / "q.jsonl", [{"id": "q1", "query": "Where is the Eiffel Tower?",
                                          "relevant_doc_ids": ["d1.md"]}])
    code, out, err = _run(cli, tmp_path, data, folder)
    assert code == 0, err
    assert json.loads(out)["dataset"]["documents"] == 2
    assert set(_cases(tmp_path)["q1"]) <= {"d1.md", "sub/d2.txt"} and _cases(tmp_path)["q1"][0] == "d1.md"
    [warning] = [line for line in err.splitlines() if line.startswith("warning: corpus folder")]
    assert "not read: 2 .html, 1 (no suffix), 1 .markdown, 1 .rst; 3 hidden (.git, .hidden.md, .obsidian)" in warning

    (folder / "empty.md").write_text("")
    (folder / "sub" / "blank.txt").write_text("  \n\n")
    _refused(cli, tmp_path, data, folder, "2 problem(s) in the corpus folder", f"{folder / 'empty.md'}: empty file",
             f"{folder / 'sub' / 'blank.txt'}: empty file")


@pytest.mark.parametrize("written, read", [("007", "7"), ("0x10", "16"), ("1_000", "1000")])
def test_a_yaml_id_read_as_another_number_is_refused(cli, tmp_path, corpus, written, read):
    """YAML reads ``id: 007`` as 7: the case was named '7', not as the user's logs and golden files name it."""
    data = tmp_path / "q.yaml"
    data.write_text(f"- id: q0\n  query: Where is the Eiffel Tower?\n- id: {written}\n  query: highest mountain\n")
    _refused(cli, tmp_path, data, corpus, f"q.yaml:3: field 'id': {written} is read by YAML as {read}",
             f"id: '{written}'")
    data.write_text(f"- id: 12\n  query: Where is the Eiffel Tower?\n- id: '{written}'\n  query: highest mountain\n")
    code, _, err = _run(cli, tmp_path, data, corpus)
    assert code == 0, err
    assert sorted(_cases(tmp_path)) == sorted(["12", written])  # a plain number and a quoted one, as written


@pytest.mark.parametrize("value, told", [
    ('"answers": "Paris"', "field 'answers': Input should be a valid list (got a string: write a list, [\"Paris\"])"),
    ('"answers": null', "field 'answers': Input should be a valid list (got null: give a list, [] for none"),
    ('"answers": [42]', "field 'answers.0': Input should be a valid string (got the number 42: quote it, \"42\")"),
])
def test_a_value_of_another_type_is_told_how_to_write_it(cli, tmp_path, corpus, value, told):
    """pydantic said only what it wanted ("Input should be a valid list"); the message now says what was given and
    how to write it."""
    data = tmp_path / "q.jsonl"
    data.write_text('{"id": "q1", "query": "Where is the Eiffel Tower?", ' + value + "}\n")
    _refused(cli, tmp_path, data, corpus, f"q.jsonl:1: {told}")


def test_a_run_that_measures_no_quality_says_so(cli, tmp_path, corpus):
    """Questions without relevant ids or answers, with the answer and reference-free judges off: the run reported
    latency alone and exited 0 without a word."""
    data = _jsonl(tmp_path / "q.jsonl", [{"id": "q1", "query": "Where is the Eiffel Tower?"}])
    code, out, err = _run(cli, tmp_path, data, corpus)
    summary = json.loads(out)
    assert code == 0 and summary["metrics"] == {}
    assert [w["kind"] for w in summary["warnings"]] == ["nothing_measured"]
    assert err.count("warning: the run measured no quality") == 1
    labelled = _jsonl(tmp_path / "l.jsonl", [{"id": "q1", "query": "Where is the Eiffel Tower?",
                                              "relevant_doc_ids": [next(iter(DOCS))]}])
    code, out, err = _run(cli, tmp_path, labelled, corpus, out="labelled")
    assert code == 0 and "measured no quality" not in err and json.loads(out)["metrics"]


def test_upper_case_suffixes_are_read(cli, tmp_path):
    """Q.JSONL and C.JSONL.GZ (files from Windows tools) were 'unsupported file type'."""
    import gzip

    corpus = tmp_path / "C.JSONL.GZ"
    with gzip.open(corpus, "wt") as handle:
        handle.write("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    data = _jsonl(tmp_path / "Q.JSONL", QUERIES)
    code, out, err = _run(cli, tmp_path, data, corpus)
    assert code == 0, err
    assert json.loads(out)["metrics"]["ndcg@10"] == 1.0 and sorted(_cases(tmp_path)) == ["q1", "q2"]


def test_a_csv_dataset_gives_lists_as_json_cells_and_leaves_empty_cells_out(cli, tmp_path, corpus):
    """A CSV dataset could not give relevant_doc_ids, answers or tags ("Input should be a valid list" for a
    '["d1"]' cell), and an empty cell was a field given as ''."""
    data = tmp_path / "q.csv"
    data.write_text('id,query,relevant_doc_ids,answers,tags\n'
                    'q1,Where is the Eiffel Tower?,"[""d1""]","[""Paris""]",\n'
                    'q2,What is the highest mountain in Japan?,"[""d2""]",,"[""geo""]"\n')
    code, out, err = _run(cli, tmp_path, data, corpus)
    assert code == 0, err
    records = {r["name"]: r for r in map(json.loads, (tmp_path / "out" / "cases.jsonl").read_text().splitlines())}
    assert records["q1"]["relevant"] == {"d1": 1} and records["q1"]["gold_answers"] == ["Paris"]
    assert records["q2"]["relevant"] == {"d2": 1} and records["q2"]["tags"] == ["geo"]
    assert json.loads(out)["metrics"]["ndcg@10"] == 1.0


def test_a_csv_header_in_capitals_or_padded_names_the_fields(cli, tmp_path, corpus):
    """'ID, Query' (a spreadsheet's header) gave four problems per row (Field required, Extra inputs)."""
    data = tmp_path / "q.csv"
    data.write_text('ID, Query,Relevant_Doc_IDs\nq1,Where is the Eiffel Tower?,"[""d1""]"\n')
    code, out, err = _run(cli, tmp_path, data, corpus)
    assert code == 0, err
    assert sorted(_cases(tmp_path)) == ["q1"] and json.loads(out)["metrics"]["ndcg@10"] == 1.0


@pytest.mark.parametrize("cell", ['["The Eiffel Tower was completed in 1889.', "['The Eiffel Tower', 'Paris']"])
def test_a_csv_list_cell_that_does_not_parse_is_refused(tmp_path, cell):
    """A CSV context cell that opens a list of texts but is cut off, or written with Python's quotes, was read as one
    passage with its brackets and quotes; now one error naming the line and the field. A text that merely starts
    with a bracket ("[1] Smith et al.") is still a text."""
    import csv

    from evaluations.core.errors import EvaluationsError
    from evaluations.judging.labels.passage_rows import load_passage_rows

    path = tmp_path / "rows.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["query", "context", "generated_answer", "label"])
        writer.writerow(["When was the tower completed?", "[1] It was completed in 1889.", "1889", "true"])
        writer.writerow(["When was the tower completed?", cell, "1889", "true"])
    with pytest.raises(EvaluationsError) as info:
        load_passage_rows(path)
    assert info.value.where == f"{path}:3" and "field 'context' opens a list of texts but is not valid JSON" in \
        info.value.message
    path.write_text(path.read_text(encoding="utf-8").splitlines()[0] + "\n" +
                    path.read_text(encoding="utf-8").splitlines()[1] + "\n", encoding="utf-8")
    [row] = load_passage_rows(path)
    assert row.passages == ("[1] It was completed in 1889.",)


@pytest.mark.parametrize("change, said, fix", [
    ({"golden_answer": None}, "field 'golden_answer' must be a string, got null", "write 'golden_answer' as a JSON"),
    ({"golden_answer": ["a", "b"]}, 'must be a string, got an array ["a", "b"]', "as a JSON string"),
    ({"answer_fid": 3}, "field 'answer_fid' must be a string, got a number 3", "or null"),
    ({"judge_fid": 1}, "field 'judge_fid' must be true/false/null, got a number 1", "null (not judged)"),
    ({"judge_fid": [True]}, "got an array [true]", "null (not judged)"),
    ({"improper": "no"}, "field 'improper' must be true/false, got a string \"no\"", "true leaves the question out"),
])
def test_evouna_rows_are_refused_in_json_words_with_a_fix(tmp_path, change, said, fix):
    """A real EVOUNA NQ record with one field spoilt: the messages printed Python values (None, [True]) and most had
    no fix line."""
    import gzip
    import json

    from conftest import DATA
    from evaluations.core.errors import EvaluationsError
    from evaluations.judging.labels.data import load_labelled

    with gzip.open(DATA / "evouna" / "NQ.jsonl.gz", "rt", encoding="utf-8") as handle:
        record = next(r for r in map(json.loads, handle) if not r["improper"])
    path = tmp_path / "nq.jsonl"
    path.write_text(json.dumps({**record, **change}) + "\n", encoding="utf-8")
    with pytest.raises(EvaluationsError) as info:
        load_labelled(path)
    assert info.value.where == f"{path}:1" and said in info.value.message and fix in (info.value.fix or "")


def test_an_evouna_file_of_improper_questions_only_says_so(tmp_path):
    import gzip
    import json

    from conftest import DATA
    from evaluations.core.errors import EvaluationsError
    from evaluations.judging.labels.data import load_labelled

    with gzip.open(DATA / "evouna" / "NQ.jsonl.gz", "rt", encoding="utf-8") as handle:
        improper = [r for r in map(json.loads, handle) if r["improper"]][:3]
    path = tmp_path / "nq.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in improper), encoding="utf-8")
    with pytest.raises(EvaluationsError) as info:
        load_labelled(path)
    assert "all 3 EVOUNA questions of the file are marked improper: true" in info.value.message
