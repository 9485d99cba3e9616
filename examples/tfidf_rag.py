"""An example "your own system" for ``--system``: a TF-IDF retriever (scikit-learn) over a JSONL corpus.

    RAG_CORPUS=../shared/data/scifact/corpus.jsonl.gz \
        evaluations beir ../shared/data/scifact --system tfidf_rag:search --skip-qa      # from examples/

It follows the documented contract (``evaluations/systems/base.py``): the request ``{"query", "k", "case_id"}``
in, ``{"retrieved": [{"id", "text", "score"}], "model", "tier", "latency_ms"}`` out. Any function with that shape
works: a wrapper around your vector store, your reranker, or a call to your service.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from functools import cache
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer


@cache
def _index() -> tuple[list[str], list[str], TfidfVectorizer, object]:
    path = Path(os.environ["RAG_CORPUS"])  # a JSONL (.gz) corpus with `_id` or `id`, `title`?, `text`
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    ids = [str(r.get("_id", r.get("id"))) for r in rows]
    texts = [f"{r.get('title', '')} {r['text']}".strip() for r in rows]
    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    return ids, texts, vectorizer, vectorizer.fit_transform(texts)


def search(request: dict) -> dict:
    """The request dict in, the response dict out (ranked by cosine similarity of TF-IDF vectors)."""
    ids, texts, vectorizer, matrix = _index()
    started = time.perf_counter()
    scores = (matrix @ vectorizer.transform([request["query"]]).T).toarray().ravel()
    top = np.argsort(-scores, kind="stable")[: request["k"]]
    retrieved = [{"id": ids[i], "text": texts[i][:1000], "score": float(scores[i])} for i in top if scores[i] > 0]
    return {"retrieved": retrieved, "model": "tfidf", "tier": "cpu",
            "latency_ms": {"retrieve": (time.perf_counter() - started) * 1000}}
