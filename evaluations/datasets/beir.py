"""A BEIR-format folder: ``corpus.jsonl[.gz]``, ``queries.jsonl[.gz]``, ``qrels/<split>.tsv[.gz]``.

Graded relevance is kept as is (grade > 0 is relevant). Only queries that appear in the split's
qrels are evaluated, in qrels order (and only they need a text); the whole corpus is indexed. Document text is
``title + "\\n" + text`` when a title exists.

Read as BEIR reads real sets (their quirks are accepted and said, as ``Corpus.warnings``): a document without title
and text is indexed empty (FiQA has some); a judged document the corpus lacks is kept among the relevant, as
trec_eval keeps it (ArguAna's qrels name one); a judged query that ``queries.jsonl`` lacks is left out. Qrels are
read by position after their first line, whatever that header names. The same (query, document) pair graded twice
differently is an error naming both lines. A query that is a document of the corpus under its own id (ArguAna,
Quora) is kept as any document, and said: BEIR's published figures drop it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.core.types import Corpus, Document, Query
from evaluations.datasets.rows import SUFFIXES, field, find_file, is_number, iter_rows, tab_cells, utf8_lines
from evaluations.datasets.spec import DatasetSpec, LoadOptions, apply_limit


def _require(folder: Path, stem: str) -> Path:
    found = find_file(folder, stem)
    if found is None:
        raise EvaluationsError(f"no {stem}.jsonl[.gz] in the folder", where=str(folder),
                               fix="point at a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)")
    return found


def load(options: LoadOptions) -> Corpus:
    if options.source is None:
        raise EvaluationsError("a BEIR folder is required", where="beir PATH", fix="evaluations beir PATH")
    folder = Path(options.source)
    if not folder.is_dir():
        raise EvaluationsError("not a folder", where=str(folder), fix="pass the BEIR dataset folder")
    split = options.split or "test"
    qrels_path = find_file(folder / "qrels", split)
    if qrels_path is None:
        entries = sorted((folder / "qrels").glob("*")) if (folder / "qrels").is_dir() else []
        if folders := [p for p in entries if p.name.split(".")[0] == split and p.is_dir()]:
            raise EvaluationsError("is a folder, expected a qrels file", where=str(folders[0]),
                                   fix=f"put the split's qrels in the file qrels/{split}.tsv")
        available = sorted({p.name.split(".")[0] for p in entries if p.is_file()})
        raise EvaluationsError(f"no qrels for split {split!r}", where=str(folder / "qrels"),
                               fix=f"use --split with one of {available}" if available else "add qrels/<split>.tsv")

    documents: dict[str, Document] = {}
    empty: list[str] = []
    corpus_path = _require(folder, "corpus")
    for line, row in iter_rows(corpus_path):
        where = f"{corpus_path}:{line}"
        doc_id = field(row, "_id", where)
        if doc_id in documents:
            raise EvaluationsError(f"duplicate document id {doc_id!r}", where=where, fix="document ids must be unique")
        text = field(row, "text", where, required=False, default="")
        title = field(row, "title", where, required=False, default="")
        if not text.strip() and not title.strip():
            empty.append(doc_id)  # BEIR sets have them (FiQA): indexed as they are, they never match
        documents[doc_id] = Document(id=doc_id, text=f"{title}\n{text}" if title else text, title=title)

    if not documents:
        raise EvaluationsError("no documents", where=str(corpus_path), fix="give one JSON object per document "
                               '({"_id", "title"?, "text"}) in corpus.jsonl')
    texts: dict[str, tuple[Any, str]] = {}  # query id -> (its text as given, file:line)
    queries_path = _require(folder, "queries")
    for line, row in iter_rows(queries_path):
        where = f"{queries_path}:{line}"
        qid = field(row, "_id", where)
        if qid in texts:  # the second text would silently replace the first
            raise EvaluationsError(f"duplicate query id {qid!r}", where=where, fix="query ids must be unique")
        texts[qid] = (row.get("text"), where)

    relevant: dict[str, dict[str, int]] = {}
    graded_at: dict[tuple[str, str], str] = {}
    no_query: list[str] = []
    no_document: list[str] = []
    for where, qid, did, score in _qrels(qrels_path):
        try:
            grade = int(score)
        except ValueError:
            raise EvaluationsError(f"field 'score' must be an integer, got {score!r}", where=where,
                                   fix="qrels scores are integer grades") from None
        if (qid, did) in graded_at and relevant[qid][did] != grade:
            raise EvaluationsError(f"document {did!r} of query {qid!r} is graded {grade} here and "
                                   f"{relevant[qid][did]} at {graded_at[qid, did]}", where=where,
                                   fix="keep one grade per (query-id, corpus-id) pair")
        if qid not in texts:  # judged but not asked: BEIR's own loader fails; the query is left out, counted
            no_query.append(qid)
            continue
        if did not in documents:  # kept, as trec_eval keeps it: it counts among the relevant, never retrieved
            no_document.append(did)
        relevant.setdefault(qid, {})[did] = grade
        graded_at.setdefault((qid, did), where)

    if not relevant and no_query:
        raise EvaluationsError(f"none of the {len(set(no_query))} judged query ids is in {queries_path.name} (e.g. "
                               f"{no_query[0]!r})", where=str(qrels_path),
                               fix="the qrels and queries.jsonl must be of the same dataset")
    if not relevant:
        raise EvaluationsError("no relevance judgements (the file is empty or only a header)", where=str(qrels_path),
                               fix="one 'query-id<TAB>corpus-id<TAB>score' row per judged document, after the header")
    queries = []
    for qid, grades in relevant.items():  # only the split's queries need a text
        text, where = texts[qid]
        queries.append(Query(id=qid, text=field({"text": text}, "text", where), relevant=grades))
    read = {"corpus": corpus_path, "queries": queries_path, f"qrels/{split}": qrels_path}
    twins = [f"{path.name} was read, not {', '.join(beside)} beside it"  # corpus.jsonl and corpus.jsonl.gz
             for stem, path in read.items()
             if (beside := [c.name for s in SUFFIXES if (c := folder / f"{stem}{s}").is_file() and c != path])]
    itself = [q.id for q in queries if q.id in documents and " ".join(q.text.split()) in " ".join(
        documents[q.id].text.split())]  # ArguAna, Quora: the query is a document of the corpus, under its own id
    warnings = twins + _warnings(empty, no_query, no_document, corpus_path, queries_path, qrels_path)
    if itself:
        warnings.append(f"{len(itself)} of {len(queries)} queries are documents of the corpus under their own id "
                        f"(e.g. {itself[0]!r}): retrieved, each counts as a document like any other, where BEIR's "
                        "published figures drop it (ignore_identical_ids); compare with them only after removing "
                        "those documents")
    corpus = Corpus(name=folder.name, documents=list(documents.values()), queries=queries, source=str(folder),
                    warnings=warnings)
    return apply_limit(corpus, options.limit)


def _qrels(path: Path) -> Iterator[tuple[str, str, str, str]]:
    """(file:line, query id, document id, score) of each judgement, read by position as BEIR reads it: tab
    separated, the first three fields (trailing empty fields dropped). A first line whose score is not a number is
    the header, whatever it names (``query-id corpus-id score``, ``query_id corpus_id score``); a header naming
    ``query-id``, ``corpus-id`` and ``score`` in another order is read by name."""
    order = (0, 1, 2)
    first = True
    for line, text in utf8_lines(path):
        where = f"{path}:{line}"
        cells = tab_cells(text)
        if not any(cells):
            continue
        if len(cells) < 3:
            raise EvaluationsError(f"{len(cells)} tab-separated field(s), expected query-id, corpus-id and score",
                                   where=where, fix="one 'query-id<TAB>corpus-id<TAB>score' row per judgement (TREC "
                                                    "qrels 'qid 0 docid rel' need converting: tabs, no 0 column)")
        if first:
            first = False
            names = [c.lower() for c in cells]
            if {"query-id", "corpus-id", "score"} <= set(names):
                order = (names.index("query-id"), names.index("corpus-id"), names.index("score"))
                continue
            if not is_number(cells[2]):
                continue  # a header of other names: BEIR skips the first line whatever it says
        yield where, cells[order[0]], cells[order[1]], cells[order[2]]


def _warnings(empty: list[str], no_query: list[str], no_document: list[str], corpus: Path, queries: Path,
              qrels: Path) -> list[str]:
    """What the loader accepted that a user should know, each with a count and examples."""
    def some(ids: list[str]) -> str:
        unique = list(dict.fromkeys(ids))
        return ", ".join(map(repr, unique[:3])) + (" …" if len(unique) > 3 else "")

    out = []
    if empty:
        out.append(f"{len(empty)} document(s) of {corpus.name} have no title and no text (e.g. {some(empty)}): "
                   "indexed empty, they never match")
    if no_query:
        out.append(f"{len(set(no_query))} query id(s) of {qrels} are not in {queries.name} (e.g. {some(no_query)}): "
                   "their judgements are left out")
    if no_document:
        out.append(f"{len(set(no_document))} document id(s) judged in {qrels} are not in {corpus.name} (e.g. "
                   f"{some(no_document)}): kept among the relevant, as trec_eval keeps them; no system can retrieve "
                   "them, so recall and nDCG count them as missed")
    return out


SPEC = DatasetSpec(
    name="beir",
    description="any BEIR-format folder (corpus / queries / qrels, graded relevance kept)",
    load=load,
    answers=False,
)
