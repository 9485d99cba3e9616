"""Systems under test for ``benchmarks/triad.py``: the same questions answered four ways (``--system``).

``$TRIAD_CORPUS`` is a JSONL (.gz) corpus (``_id``/``id``, ``title``?, ``text``). Each function follows the
``--system`` contract (``evaluations/systems/base.py``): the request ``{"query", "k", "case_id"}`` in, the
retrieved items and an answer out.

* ``copy_sentence``: TF-IDF (scikit-learn) top-k, the answer is the top passage's sentence that shares most
  TF-IDF weight with the question, copied verbatim: every claim is in the context (faithful by construction).
* ``unrelated``: the same retrieval, but the answer is a sentence of a document from ANOTHER article/topic than
  every retrieved passage (a seeded draw per question): the context supports none of it.
* ``random_retriever``: k documents drawn at random (seeded per question), the answer copied from the first:
  a retriever whose context is (almost always) irrelevant to the question.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from functools import cache
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@cache
def _index() -> tuple[list[str], list[str], list[str], TfidfVectorizer, object]:
    path = Path(os.environ["TRIAD_CORPUS"])
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    ids = [str(r.get("_id", r.get("id"))) for r in rows]
    titles = [str(r.get("title", "")) for r in rows]
    texts = [r["text"] for r in rows]
    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    return ids, titles, texts, vectorizer, vectorizer.fit_transform(texts)


def _rng(case_id: str) -> np.random.Generator:
    return np.random.default_rng(int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(s.split()) >= 4]


def _best_sentence(query: str, text: str) -> str:
    *_, vectorizer, _ = _index()
    sentences = _sentences(text) or [text]
    scores = (vectorizer.transform(sentences) @ vectorizer.transform([query]).T).toarray().ravel()
    return sentences[int(np.argmax(scores))]


def _tfidf(request: dict) -> list[int]:
    ids, _, _, vectorizer, matrix = _index()
    scores = (matrix @ vectorizer.transform([request["query"]]).T).toarray().ravel()
    return [int(i) for i in np.argsort(-scores, kind="stable")[: request["k"]]]


def _response(request: dict, top: list[int], answer: str, model: str) -> dict:
    ids, _, texts, _, _ = _index()
    return {"retrieved": [{"id": ids[i], "text": texts[i]} for i in top], "answer": answer, "model": model}


def copy_sentence(request: dict) -> dict:
    top = _tfidf(request)
    _, _, texts, _, _ = _index()
    return _response(request, top, _best_sentence(request["query"], texts[top[0]]), "tfidf+copy")


def unrelated(request: dict) -> dict:
    top = _tfidf(request)
    _, titles, texts, _, _ = _index()
    used = {titles[i] for i in top}
    others = [i for i in range(len(texts)) if titles[i] not in used]
    pick = others[int(_rng(request["case_id"]).integers(len(others)))]
    sentences = _sentences(texts[pick]) or [texts[pick]]
    return _response(request, top, sentences[0], "tfidf+unrelated")


def random_retriever(request: dict) -> dict:
    ids, _, texts, _, _ = _index()
    top = [int(i) for i in _rng(request["case_id"]).choice(len(ids), size=request["k"], replace=False)]
    return _response(request, top, _best_sentence(request["query"], texts[top[0]]), "random+copy")
