"""A BEIR-format folder: ``corpus.jsonl[.gz]``, ``queries.jsonl[.gz]``, ``qrels/<split>.tsv[.gz]``.

Graded relevance is kept as is (grade > 0 is relevant). Only queries that appear in the split's
qrels are evaluated, in qrels order; the whole corpus is indexed. Document text is
``title + "\\n" + text`` when a title exists.
"""

from __future__ import annotations

from pathlib import Path

from evaluations.core.errors import EvaluationsError
from evaluations.core.types import Corpus, Document, Query
from evaluations.datasets.rows import field, find_file, iter_rows
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
    corpus_path = _require(folder, "corpus")
    for line, row in iter_rows(corpus_path):
        where = f"{corpus_path}:{line}"
        doc_id = field(row, "_id", where)
        if doc_id in documents:
            raise EvaluationsError(f"duplicate document id {doc_id!r}", where=where, fix="document ids must be unique")
        text = field(row, "text", where, required=False, default="")
        title = field(row, "title", where, required=False, default="")
        if not text.strip() and not title.strip():
            raise EvaluationsError("document has neither 'title' nor 'text'", where=where, fix="give it some text")
        documents[doc_id] = Document(id=doc_id, text=f"{title}\n{text}" if title else text, title=title)

    if not documents:
        raise EvaluationsError("no documents", where=str(corpus_path), fix="give one JSON object per document "
                               '({"_id", "title"?, "text"}) in corpus.jsonl')
    texts: dict[str, str] = {}
    queries_path = _require(folder, "queries")
    for line, row in iter_rows(queries_path):
        where = f"{queries_path}:{line}"
        qid = field(row, "_id", where)
        if qid in texts:  # the second text would silently replace the first
            raise EvaluationsError(f"duplicate query id {qid!r}", where=where, fix="query ids must be unique")
        texts[qid] = field(row, "text", where)

    relevant: dict[str, dict[str, int]] = {}
    for line, row in iter_rows(qrels_path):
        where = f"{qrels_path}:{line}"
        qid, did, score = (field(row, name, where) for name in ("query-id", "corpus-id", "score"))
        try:
            grade = int(score)
        except ValueError:
            raise EvaluationsError(f"field 'score' must be an integer, got {score!r}", where=where,
                                   fix="qrels scores are integer grades") from None
        if qid not in texts:
            raise EvaluationsError(f"query id {qid!r} is not in {queries_path.name}", where=where,
                                   fix="qrels must refer to existing queries")
        if did not in documents:
            raise EvaluationsError(f"document id {did!r} is not in {corpus_path.name}", where=where,
                                   fix="qrels must refer to existing documents")
        relevant.setdefault(qid, {})[did] = grade

    if not relevant:
        raise EvaluationsError("no relevance judgements (the file is empty or only a header)", where=str(qrels_path),
                               fix="one 'query-id<TAB>corpus-id<TAB>score' row per judged document, after the header")
    queries = [Query(id=qid, text=texts[qid], relevant=grades) for qid, grades in relevant.items()]
    corpus = Corpus(name=folder.name, documents=list(documents.values()), queries=queries, source=str(folder))
    return apply_limit(corpus, options.limit)


SPEC = DatasetSpec(
    name="beir",
    description="any BEIR-format folder (corpus / queries / qrels, graded relevance kept)",
    load=load,
    answers=False,
)
