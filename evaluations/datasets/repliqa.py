"""RepliQA (ServiceNow/repliqa), split ``repliqa_3``, topic "News Stories".

Documents are the unique ``document_id`` -> ``document_extracted``; each question's relevant document
is its own (grade 1). Rows whose answer is "The answer is not found in the document." are kept as
unanswerable and skipped for retrieval; ``--limit`` applies after that filter.

A local export (``--source``: parquet/JSONL/CSV) may lack ``document_id`` / ``question_id`` /
``document_topic``: ids are then derived from the document text's hash and the row number, and no topic
filter is applied when the rows carry no topic.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.core.types import Corpus, Document, Query
from evaluations.datasets.rows import field, iter_rows
from evaluations.datasets.spec import DatasetSpec, LoadOptions, apply_limit, load_hub

HUB_ID = "ServiceNow/repliqa"
SPLIT = "repliqa_3"
TOPIC = "News Stories"
NOT_FOUND = "the answer is not found in the document."


def _doc_id(row: dict[str, Any], text: str) -> str:
    if row.get("document_id"):
        return str(row["document_id"])
    return "doc-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def map_rows(rows: Iterable[tuple[str, dict[str, Any]]], name: str, source: str) -> Corpus:
    """(where, row) pairs -> Corpus. ``where`` is "file:line" for error messages."""
    documents: dict[str, Document] = {}
    queries: list[Query] = []
    seen: set[str] = set()
    for where, row in rows:
        topic = row.get("document_topic")
        if topic is not None and topic != TOPIC:
            continue
        text = field(row, "document_extracted", where)
        question = field(row, "question", where)
        doc_id = _doc_id(row, text)
        documents.setdefault(doc_id, Document(id=doc_id, text=text))
        answer = field(row, "answer", where, required=False, default="")
        qid = next((str(row[k]) for k in ("question_id", "sample_id") if row.get(k) is not None),
                   f"{doc_id}-{len(queries) + 1}")
        if qid in seen:
            raise EvaluationsError(f"duplicate question id {qid!r}", where=where, fix="question ids must be unique")
        seen.add(qid)
        answerable = answer.strip().lower() != NOT_FOUND
        queries.append(Query(id=qid, text=question, relevant={doc_id: 1} if answerable else {},
                             answers=[answer] if answer and answerable else [], answerable=answerable,
                             tags=[f"topic:{topic or TOPIC}", "answerable" if answerable else "unanswerable"]))
    if not queries:
        raise EvaluationsError(f"no questions found (topic filter: {TOPIC!r})", where=source,
                               fix="check the file has RepliQA rows (document_extracted, question)")
    return Corpus(name=name, documents=list(documents.values()), queries=queries, source=source)


def load(options: LoadOptions) -> Corpus:
    if options.source is not None:
        path = Path(options.source)
        rows = ((f"{path}:{line}", row) for line, row in iter_rows(path))
        corpus = map_rows(rows, "repliqa", str(path))
    else:
        data = load_hub(HUB_ID, None, options.split or SPLIT,
                        fix="pass --source PATH to a local parquet/JSONL export with the same fields")
        data = data.filter(lambda r: r["document_topic"] == TOPIC)
        rows = ((f"hf://{HUB_ID}/{SPLIT}:{i + 1}", row) for i, row in enumerate(data))
        corpus = map_rows(rows, "repliqa", f"hf://{HUB_ID}/{options.split or SPLIT}")
    corpus.queries = [q for q in corpus.queries if q.answerable]
    return apply_limit(corpus, options.limit)


SPEC = DatasetSpec(
    name="repliqa",
    description="RepliQA repliqa_3, 'News Stories' (1,035 docs); one relevant document per question",
    load=load,
    hub_id=HUB_ID,
    notes=["unanswerable rows ('The answer is not found in the document.') are skipped; --limit applies after"],
)
