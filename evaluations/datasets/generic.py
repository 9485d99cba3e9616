"""Your own dataset: a JSON / JSONL / YAML file of queries, documents from a corpus file or a folder.

Query record (``DatasetRecord``; JSON schema in ``datasets/schemas/dataset_record.schema.json``)::

    {"id": "q1", "query": "...", "relevant_doc_ids": ["d1"], "graded_relevance": {"d2": 2},
     "answers": ["..."], "tags": ["x"], "category": "how-to", "difficulty": "easy", "metadata": {"source": "faq"}}

``metadata`` (an object) holds fields of your own, accepted and not read; any other unknown field is an error (a
typo such as ``answer`` for ``answers`` must not pass silently). ``relevant_doc_ids`` count as grade 1 unless ``graded_relevance`` grades them; a record may have neither
relevance nor answers (``id`` and ``query`` only): the reference-free judges (``answer_relevance``) still measure
its answer. ``category`` and ``difficulty`` become the tags ``category:<x>`` / ``difficulty:<y>``. A JSON file is
an array of records or ``{"queries": [...]}``; a YAML file a list of records.

Documents: ``--corpus FILE`` (JSONL/JSON/CSV rows with ``id`` (or ``_id``/``doc_id``; a string or an integer),
``text`` (a string) and optional ``title`` (a string or null)) or a folder of ``.txt``/``.md`` files (id = path
relative to the folder, POSIX separators; names starting with "." are skipped, files of other types are counted in a
warning, an empty file is an error as an empty row is).

A key given twice in one JSON object is an error (the YAML reader refuses it too), as is a blank ``id``, ``query``
or gold answer.

Every problem of the file is reported in one error, one line per problem: ``file:line: field 'x': message``.
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from evaluations.datasets.rows import iter_rows, json_cell, json_items, json_members, json_type, read_utf8
from evaluations.core import yamltext
from evaluations.core.errors import EvaluationsError, field_errors
from evaluations.core.types import Corpus, Document, Query
from evaluations.datasets.spec import DatasetSpec, LoadOptions, apply_limit

TEXT_SUFFIXES = (".txt", ".md")


def _blank(value: str) -> bool:
    """Nothing visible: only whitespace, Unicode spaces (no-break space) and format characters (zero-width space,
    joiners, byte-order mark), which ``str.strip`` keeps."""
    return all(c.isspace() or unicodedata.category(c) in ("Cf", "Zs", "Zl", "Zp") for c in value)


def _not_blank(value: str) -> str:
    """A text field that holds more than whitespace (``_blank``): a blank id would be renamed "Case N" by
    pydantic-evals (and could collide with a real id), a blank query is no question."""
    if _blank(value):
        raise PydanticCustomError("empty", "empty")
    return value


def _not_blank_answer(value: str) -> str:
    """A gold answer that holds more than whitespace (``_blank``): a blank one would count as no gold, silently."""
    if _blank(value):
        raise PydanticCustomError("empty_answer", "empty answer")
    return value


class DatasetRecord(BaseModel):
    """One query of a generic dataset file."""

    model_config = ConfigDict(extra="forbid", title="evaluations dataset record")

    id: Annotated[str, AfterValidator(_not_blank)] = Field(description="Unique query id.")
    query: Annotated[str, AfterValidator(_not_blank)] = Field(min_length=1, description="The question / search query.")
    relevant_doc_ids: list[str] = Field(default_factory=list, description="Relevant documents (grade 1).")
    graded_relevance: dict[str, int] = Field(default_factory=dict, description="{doc id: grade}; grade > 0 relevant.")
    answers: list[Annotated[str, AfterValidator(_not_blank_answer)]] = Field(
        default_factory=list, description="Gold answers (alternatives).")
    tags: list[str] = Field(default_factory=list)
    category: str | None = None
    difficulty: str | None = None
    answerable: bool = True
    metadata: dict[str, Any] = Field(default_factory=dict,
                                     description="Fields of your own (source, owner, ...): accepted, not read.")

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    def relevance(self) -> dict[str, int]:
        return {**{d: 1 for d in self.relevant_doc_ids}, **self.graded_relevance}

    def to_query(self) -> Query:
        tags = list(self.tags)
        tags += [f"category:{self.category}"] if self.category else []
        tags += [f"difficulty:{self.difficulty}"] if self.difficulty else []
        return Query(id=self.id, text=self.query, relevant=self.relevance(), answers=list(self.answers),
                     answerable=self.answerable, tags=tags)


def _yaml_rows(path: Path) -> list[tuple[int, Any]]:
    import yaml

    text = read_utf8(path)
    try:
        node = yaml.compose(text)
        data = yamltext.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise EvaluationsError(f"not valid YAML ({getattr(exc, 'problem', exc)})", where=where, fix="fix the YAML") from None
    if isinstance(data, dict) and isinstance(data.get("queries"), list):
        node = next(v for k, v in node.value if k.value == "queries")
        data = data["queries"]
    if not isinstance(data, list):
        raise EvaluationsError("a YAML dataset is a list of query records", where=str(path), fix="- id: q1\n  query: ...")
    for item, row in zip(node.value, data):
        _id_as_written(item, row, path)
    return [(item.start_mark.line + 1, row) for item, row in zip(node.value, data)]


def _id_as_written(item: Any, row: Any, path: Path) -> None:
    """A YAML ``id`` that YAML reads as another number than written (``007`` -> 7, ``0x10`` -> 16, ``1_000`` ->
    1000) is an error: the case would be named other than in the user's logs and golden files."""
    if not isinstance(row, dict) or isinstance(row.get("id"), str) or not hasattr(item, "value"):
        return
    written = next((v for k, v in item.value if getattr(k, "value", None) == "id"), None)
    if written is not None and getattr(written, "style", None) is None and isinstance(written.value, str) \
            and written.value != str(row["id"]):
        raise EvaluationsError(f"field 'id': {written.value} is read by YAML as {row['id']!r}",
                               where=f"{path}:{written.start_mark.line + 1}",
                               fix=f"quote it to keep it as written: id: '{written.value}'")


def _json_rows(path: Path) -> list[tuple[int, Any]]:
    """Rows of a JSON array with the line each record starts on (a ``{"queries": [...]}`` object too: the array
    is found from the parsed object, ``json_members``); a key given twice in one object is an error."""
    text = read_utf8(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvaluationsError(f"not valid JSON ({exc.msg})", where=f"{path}:{exc.lineno}", fix="fix the JSON") from None
    if isinstance(data, dict) and isinstance(data.get("queries"), list):
        start = json_members(text, path)["queries"]
    elif isinstance(data, list):
        start = text.index("[")
    else:
        raise EvaluationsError("a JSON dataset is an array of query records or {\"queries\": [...]}", where=str(path),
                               fix="wrap the records in [ ]")
    return list(json_items(text, start, path))


def read_records(path: str | Path) -> list[DatasetRecord]:
    """Validate every record of a dataset file; raise one error listing every problem (file:line, field)."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationsError("dataset file not found", where=str(path), fix="check the path")
    name = path.name.lower()
    if name.endswith((".yaml", ".yml")):
        rows = _yaml_rows(path)
    elif name.endswith(".json"):
        rows = _json_rows(path)
    else:
        rows = list(iter_rows(path))
    records, problems, seen = [], [], {}
    table = name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz"))
    for line, row in rows:
        where = f"{path}:{line}"
        if not isinstance(row, dict):
            problems.append(f"{where}: a record must be an object, got {type(row).__name__}")
            continue
        if table:
            row = _table_row(row, where)
        try:
            record = DatasetRecord.model_validate(row)
        except ValidationError as exc:
            problems += [f"{where}: field '{key or '(record)'}': {msg}" for key, msg, _ in field_errors(exc.errors())]
            continue
        if record.id in seen:
            problems.append(f"{where}: field 'id': duplicate id {record.id!r} (first at line {seen[record.id]})")
        seen.setdefault(record.id, line)
        records.append(record)
    if problems:
        fix = "see datasets/schemas/dataset_record.schema.json"
        if any("Extra inputs are not permitted" in p for p in problems):
            fix = ('a field the schema does not know may be a typo: correct it, or keep fields of your own under '
                   '"metadata": {...}; ' + fix)
        raise EvaluationsError(f"{len(problems)} problem(s) in the dataset file:\n  " + "\n  ".join(problems[:50]),
                               where=str(path), fix=fix)
    if not records:
        raise EvaluationsError("the dataset file has no records", where=str(path), fix="add query records")
    return records


def _table_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    """A CSV/TSV row as a record: an empty cell is a field not given (a table has every column on every row), a
    cell holding a JSON list or object (``["d1", "d2"]``, ``{"d1": 2}``) is that value (``json_cell``), and a
    header written ``ID`` or `` Query`` names the field ``id`` / ``query`` (spreadsheets capitalise and pad)."""
    out = {}
    fields = DatasetRecord.model_fields
    for key, value in row.items():
        if isinstance(key, str) and key not in fields and key.strip().lower() in fields:
            key = key.strip().lower()
        if isinstance(value, str) and not value.strip():
            continue
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        out[key] = json_cell(value, where, key)
    return out


#: where a corpus row's id and text may be, first match first
_ID_KEYS, _TEXT_KEYS = ("id", "_id", "doc_id"), ("text", "contents")


def _document(row: dict[str, Any]) -> Document | str:
    """The Document of a corpus row, or what is wrong with it (a field missing, blank or of another type: a list
    or an object would be indexed as its Python text)."""
    id_key = next((k for k in _ID_KEYS if row.get(k) is not None and str(row[k]).strip()), None)
    text_key = next((k for k in _TEXT_KEYS if row.get(k) not in (None, "")), "text")
    doc_id, text, title = row.get(id_key) if id_key else None, row.get(text_key) or "", row.get("title")
    if id_key is None:
        return "field 'id': missing or empty (also looked for '_id', 'doc_id')"
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        return f"field '{id_key}' must be a string or an integer, got {json_type(doc_id)}"
    if not isinstance(text, str):
        return f"field '{text_key}' must be a string, got {json_type(text)}"
    if not isinstance(title, str | None):
        return f"field 'title' must be a string or null, got {json_type(title)}"
    title = title or ""
    if not text.strip() and not title.strip():
        return "field 'text': missing or empty"
    return Document(id=str(doc_id), text=f"{title}\n{text}" if title else text, title=title)


def _folder_files(folder: Path) -> tuple[list[Path], Counter[str], list[str]]:
    """(the .txt/.md files of ``folder``, sorted; the other files by suffix; the hidden entries, names starting with
    ".", not entered: .git, .obsidian, editors' files, which would compete in retrieval)."""
    files, others, hidden = [], Counter(), []
    for root, dirs, names in os.walk(folder):
        here = Path(root)
        hidden += [(here / n).relative_to(folder).as_posix() for n in sorted(dirs + names) if n.startswith(".")]
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for path in (here / n for n in names if not n.startswith(".")):
            if not path.is_file():
                continue
            if path.suffix.lower() in TEXT_SUFFIXES:
                files.append(path)
            else:
                others[path.suffix.lower() or "(no suffix)"] += 1
    return sorted(files), others, hidden


def _skipped(others: Counter[str], hidden: list[str]) -> str:
    """"2 .html, 1 .rst; 2 hidden (.git, .obsidian)": what a corpus folder holds besides its documents."""
    parts = [", ".join(f"{n} {suffix}" for suffix, n in sorted(others.items(), key=lambda kv: (-kv[1], kv[0])))]
    if hidden:
        parts.append(f"{len(hidden)} hidden ({', '.join(hidden[:3])}{', ...' if len(hidden) > 3 else ''})")
    return "; ".join(p for p in parts if p)


def _folder_documents(folder: Path) -> list[Document]:
    """The documents of a folder of .txt/.md files (``_folder_files``); an empty file is an error, as an empty row of
    a corpus file is, and the files not read are counted in one warning line on stderr."""
    files, others, hidden = _folder_files(folder)
    skipped = _skipped(others, hidden)
    if not files:
        raise EvaluationsError("no .txt or .md files in the folder" + (f" (found {skipped})" if skipped else ""),
                               where=str(folder),
                               fix="point --corpus at a folder of text/markdown files or a corpus file")
    # undecodable bytes are an error naming the file and line (``read_utf8``), never silently replaced
    documents = [Document(id=p.relative_to(folder).as_posix(), text=read_utf8(p)) for p in files]
    empty = [f"{p}: empty file" for p, d in zip(files, documents) if not d.text.strip()]
    if empty:
        raise EvaluationsError(f"{len(empty)} problem(s) in the corpus folder:\n  " + "\n  ".join(empty[:50]),
                               where=str(folder), fix="give each file its text, or remove the empty ones")
    if skipped:
        from evaluations.core.console import make_console

        label = "warning" if others else "note"
        make_console(stderr=True).print(
            f"{label}: corpus folder {folder}: {len(documents)} .txt/.md document(s) read; not read: {skipped}",
            style="yellow" if others else None, markup=False, highlight=False)
    return documents


def read_documents(source: str | Path) -> list[Document]:
    """Documents from a corpus file (rows with id/_id/doc_id, text, title?) or a folder of .txt/.md files."""
    source = Path(source)
    if source.is_dir():
        return _folder_documents(source)
    documents, seen, problems = [], set(), []
    for line, row in iter_rows(source):
        document = _document(row)
        if isinstance(document, str):
            problems.append(f"{source}:{line}: {document}")
        elif document.id in seen:
            problems.append(f"{source}:{line}: field 'id': duplicate id {document.id!r}")
        else:
            seen.add(document.id)
            documents.append(document)
    if problems:
        raise EvaluationsError(f"{len(problems)} problem(s) in the corpus:\n  " + "\n  ".join(problems[:50]),
                               where=str(source), fix="each row needs a unique 'id' (a string or an integer) and a "
                                                      "non-empty 'text' (a string)")
    if not documents:  # a run over no documents would measure nothing and say nothing
        raise EvaluationsError("no documents in the corpus file", where=str(source),
                               fix="give one row per document with a unique 'id' and a non-empty 'text'")
    return documents


def load_dataset_file(path: str | Path, corpus: str | Path | None, *, documents: list[Document] | None = None,
                      name: str | None = None) -> Corpus:
    """The Corpus of a dataset file; every relevant id must be a document id (all misses listed)."""
    path = Path(path)
    records = read_records(path)
    if documents is None:
        if corpus is None:
            raise EvaluationsError("no documents for the dataset", where=str(path),
                                   fix="pass --corpus FILE (JSONL/JSON/CSV rows id, text) or --corpus FOLDER (.txt/.md)")
        documents = read_documents(corpus)
    ids = {d.id for d in documents}
    missing = [(r.id, d) for r in records for d in r.relevance() if d not in ids]
    if missing:
        shown = ", ".join(f"{q}->{d}" for q, d in missing[:8])
        raise EvaluationsError(f"{len(missing)} relevant document id(s) are not in the corpus ({shown})",
                               where=str(path), fix=f"ids in the corpus look like {sorted(ids)[:3]}")
    return Corpus(name=name or path.stem, documents=documents, queries=[r.to_query() for r in records],
                  source=str(path) + (f" + {corpus}" if corpus else ""))


def _load(options: LoadOptions) -> Corpus:
    if options.source is None:
        raise EvaluationsError("a dataset file is required", where="run DATASET_FILE", fix="evaluations run FILE --corpus X")
    return apply_limit(load_dataset_file(options.source, None), options.limit)


def spec_for(dataset_file: str | Path, corpus: str | Path | None, *, name: str = "run") -> DatasetSpec:
    """A DatasetSpec for one dataset file + its documents (what ``evaluations run`` registers). Answers are
    generated and judged when a record has gold answers, or when no record has any gold (questions only: the
    answers are all there is to measure, by the reference-free judges)."""
    records = read_records(dataset_file)
    has_answers = any(r.answers for r in records) or not any(r.relevance() for r in records)

    def load(options: LoadOptions) -> Corpus:
        return apply_limit(load_dataset_file(options.source or dataset_file, corpus), options.limit)

    return replace(SPEC, name=name, load=load, answers=has_answers)


SPEC = DatasetSpec(
    name="run",
    description="your own dataset file (JSON/JSONL/YAML queries) with documents from --corpus",
    load=_load,
    answers=True,
)
