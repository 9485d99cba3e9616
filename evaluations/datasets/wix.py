"""WixQA (Wix/WixQA): ``wixqa_expertwritten`` questions over the ``wix_kb_corpus`` articles.

Each question has one or more relevant articles (``article_ids``, grade 1), so MAP matters.
A local ``--source`` is either a folder holding ``wix_kb_corpus.*`` and ``wixqa_expertwritten.*``
(parquet/JSONL), or one JSONL file of questions whose rows carry their gold articles in ``contexts``
(``{id, title, text}``), as in ``../shared/data/wixqa_expertwritten_sample``; the corpus is then the
union of those articles.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.core.types import Corpus, Document, Query
from evaluations.datasets.rows import field, find_file, iter_rows
from evaluations.datasets.spec import DatasetSpec, LoadOptions, apply_limit, load_hub

HUB_ID = "Wix/WixQA"


def _article(row: dict[str, Any], where: str) -> Document:
    article_id = field(row, "id", where)
    text = row.get("contents") if row.get("contents") is not None else row.get("text")
    if not isinstance(text, str) or not text.strip():
        raise EvaluationsError("missing or empty field 'contents' (or 'text')", where=where,
                               fix="every article needs its text in 'contents' or 'text'")
    return Document(id=article_id, text=text, title=str(row.get("title") or ""))


def map_questions(rows: Iterable[tuple[str, dict[str, Any]]], articles: dict[str, Document] | None,
                  source: str) -> Corpus:
    """Questions (and, without ``articles``, the articles of their ``contexts``) as a corpus. Checked per row: a
    question, a non-empty list of gold article ids all in the corpus, well-formed contexts, a question id not
    used before; a failure is one error naming the row."""
    documents: dict[str, Document] = dict(articles or {})
    queries: list[Query] = []
    seen: dict[str, str] = {}  # question id -> where it first was
    for number, (where, row) in enumerate(rows, 1):
        question = field(row, "question", where)
        article_ids = field(row, "article_ids", where, kind=list)
        if not article_ids or not all(isinstance(a, str) and a for a in article_ids):
            raise EvaluationsError("field 'article_ids' must be a non-empty list of ids", where=where,
                                   fix="list the gold article ids of the question")
        if articles is None:
            for i, context in enumerate(field(row, "contexts", where, kind=list)):
                if not isinstance(context, dict):
                    raise EvaluationsError(f"contexts[{i}] must be an object", where=where,
                                           fix="each context is {id, title, text}")
                doc = _article(context, f"{where} contexts[{i}]")
                documents.setdefault(doc.id, doc)
        missing = [a for a in article_ids if a not in documents]
        if missing:
            raise EvaluationsError(f"gold article(s) {missing} are not in the corpus", where=where,
                                   fix="use a corpus that contains every gold article")
        answer = field(row, "answer", where, required=False, default="")
        qid = str(row.get("id") or f"wixqa-{number}")
        if qid in seen:
            raise EvaluationsError(f"duplicate question id {qid!r} (first at {seen[qid]})", where=where,
                                   fix="question ids must be unique")
        seen[qid] = where
        queries.append(Query(id=qid, text=question,
                             relevant={a: 1 for a in article_ids}, answers=[answer] if answer else [],
                             tags=["articles:single" if len(article_ids) == 1 else "articles:multi"]))
    return Corpus(name="wix", documents=list(documents.values()), queries=queries, source=source)


def _local(path: Path) -> Corpus:
    if path.is_dir():
        kb = find_file(path, "wix_kb_corpus")
        qa = find_file(path, "wixqa_expertwritten")
        if kb is None or qa is None:
            raise EvaluationsError("folder lacks wix_kb_corpus.* or wixqa_expertwritten.*", where=str(path),
                                   fix="put both exports (parquet/JSONL) in the folder, or pass the question file")
        articles: dict[str, Document] = {}
        for line, row in iter_rows(kb):
            doc = _article(row, f"{kb}:{line}")
            articles[doc.id] = doc
        return map_questions(((f"{qa}:{line}", row) for line, row in iter_rows(qa)), articles, str(path))
    return map_questions(((f"{path}:{line}", row) for line, row in iter_rows(path)), None, str(path))


def load(options: LoadOptions) -> Corpus:
    if options.source is not None:
        corpus = _local(Path(options.source))
    else:
        fix = "pass --source PATH (a folder with both exports, or a question file with 'contexts')"
        kb = load_hub(HUB_ID, "wix_kb_corpus", "train", fix=fix)
        qa = load_hub(HUB_ID, "wixqa_expertwritten", options.split or "train", fix=fix)
        articles = {}
        for i, row in enumerate(kb):
            doc = _article(row, f"hf://{HUB_ID}/wix_kb_corpus:{i + 1}")
            articles[doc.id] = doc
        corpus = map_questions(((f"hf://{HUB_ID}/wixqa_expertwritten:{i + 1}", r) for i, r in enumerate(qa)),
                               articles, f"hf://{HUB_ID}")
    return apply_limit(corpus, options.limit)


SPEC = DatasetSpec(
    name="wix",
    description="WixQA expert-written questions over the Wix KB; several relevant articles per question",
    load=load,
    hub_id=HUB_ID,
)
