"""A small, real Okapi BM25 search over a BEIR folder (the SciFact subsets of conftest), for tests of
systems under test and of scored logs: a stand-in for "the user's own retriever".

BM25(q, d) = sum_{t in q} idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl)),
idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)), k1 = 1.2, b = 0.75; tokens are lowercased \\w+ runs.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    def __init__(self, beir_folder: str | Path, k1: float = 1.2, b: float = 0.75):
        folder = Path(beir_folder)
        rows = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines() if line.strip()]
        self.texts = {r["_id"]: (f"{r['title']}\n{r['text']}" if r.get("title") else r["text"]) for r in rows}
        self.tf = {doc_id: Counter(tokenize(text)) for doc_id, text in self.texts.items()}
        self.length = {doc_id: sum(tf.values()) for doc_id, tf in self.tf.items()}
        self.avgdl = sum(self.length.values()) / len(self.length)
        df = Counter(t for tf in self.tf.values() for t in tf)
        n = len(self.tf)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b
        self.queries = {}
        for line in (folder / "queries.jsonl").read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                self.queries[row["_id"]] = row["text"]

    def scores(self, query: str) -> dict[str, float]:
        terms = [t for t in tokenize(query) if t in self.idf]
        out = {}
        for doc_id, tf in self.tf.items():
            norm = self.k1 * (1 - self.b + self.b * self.length[doc_id] / self.avgdl)
            score = sum(self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in terms if t in tf)
            if score > 0:
                out[doc_id] = score
        return out

    def search(self, query: str, k: int) -> list[dict]:
        """Top k as the system contract's ``retrieved`` items, best first (ties by id descending)."""
        ranked = sorted(self.scores(query).items(), key=lambda item: (item[1], item[0]), reverse=True)[:k]
        return [{"id": doc_id, "text": self.texts[doc_id], "score": score} for doc_id, score in ranked]
