"""Build the unlabelled (question, passage) candidates of ``datasets/labels/context_relevance.jsonl`` and the
reading sheets the labeller reads them from (reproducible: seeded, deterministic TF-IDF).

Per question one positive candidate (the qrels document / the question's own passage) and one hard negative
(what a lexical retriever ranks high that is not the source's answer passage):

- BEIR SciFact (test qrels): the first qrels document vs the top TF-IDF document (cosine over title + abstract
  of the whole corpus) that is not in any qrels split for that claim.
- SQuAD 2.0 dev (answerable questions): the question's paragraph vs the TF-IDF closest other paragraph of the
  same article (same title).
- CLAPNQ dev (answerable): the gold passage vs the TF-IDF closest passage of another question (answerable and
  unanswerable files pooled).
- TechQA / WixQA: the gold technote / article (``contexts[0]``, already cut at 2,400 chars by the source) vs the
  TF-IDF closest ``contexts[0]`` of another question with a different document.
- RepliQA samples: long documents are cut into windows; the window of the question's own document that TF-IDF
  ranks first vs the first window of the closest other document.

Candidates carry ``source_label`` (what the dataset says) and ``label: null``; labels are added by reading the
sheets (``datasets/labels/CONTEXT_RUBRIC.md``). Re-running keeps the labels already in OUT for the same ids
(the candidate list is a pure function of the shared data and the seed).

    python scripts/context_pairs.py [--shared ../shared/data] [--out datasets/labels/context_relevance.jsonl]
                                    [--sheets /tmp/h12_sheets]
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import linear_kernel

from evaluations.datasets import beir
from evaluations.datasets.rows import iter_rows
from evaluations.datasets.spec import LoadOptions
from evaluations.judging.labels.weak_labels import Question, read_questions

SEED = 20
CUT = 2000  # characters of a long passage the judge sees (SciFact abstracts)
WINDOW = 1500  # RepliQA document windows
COUNTS = {"scifact": 60, "squad2": 40, "clapnq": 30, "techqa": 15, "wixqa": 15, "repliqa": 20}

SCIFACT = "scifact"
SQUAD = "squad2_dev_cs224n/questions.jsonl.gz"
CLAPNQ = ("clapnq_dev/clapnq_dev_answerable.jsonl.gz", "clapnq_dev/clapnq_dev_unanswerable.jsonl.gz")
TECHQA = "techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz"
WIXQA = "wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz"
REPLIQA = ("repliqa_samples/repliqa_sample20.jsonl.gz", "repliqa_samples/repliqa3_news_questions50.jsonl.gz")


@dataclass
class Pair:
    dataset: str
    question_ref: dict
    passage_ref: dict
    question: str
    passage: str  # the cut text
    kind: str
    source_label: bool
    start: int = 0

    def row(self, number: int) -> dict:
        row = {"id": f"cr-{number:04d}", "question_ref": self.question_ref, "passage_ref": self.passage_ref}
        if self.start:
            row["passage_start"] = self.start
        row.update(passage_chars=len(self.passage), kind=self.kind, source_label=self.source_label,
                   label=None, label_note="")
        return row


def _ref(dataset: str, file: str, key: str) -> dict:
    return {"dataset": dataset, "file": file, "key": key}


def _ranker(texts: list[str]):
    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    matrix = vectorizer.fit_transform(texts)
    return lambda query: np.argsort(-linear_kernel(vectorizer.transform([query]), matrix)[0], kind="stable")


def scifact(shared: Path, rng: random.Random, n: int) -> list[Pair]:
    folder = shared / SCIFACT
    test = beir.load(LoadOptions(source=folder, split="test"))
    train = beir.load(LoadOptions(source=folder, split="train"))
    relevant = {q.id: set(q.relevant) for q in train.queries}
    for q in test.queries:
        relevant.setdefault(q.id, set()).update(q.relevant)
    docs = test.documents
    rank = _ranker([d.text for d in docs])
    out = []
    for query in rng.sample(test.queries, n):
        qref = _ref("scifact", f"{SCIFACT}/qrels/test.tsv", query.id)
        gold = next(iter(query.relevant))
        gold_doc = next(d for d in docs if d.id == gold)
        negative = next(docs[i] for i in rank(query.text) if docs[i].id not in relevant[query.id])
        for doc, kind, source in ((gold_doc, "qrels", True), (negative, "tfidf_negative", False)):
            out.append(Pair("scifact", qref, _ref("scifact", f"{SCIFACT}/corpus.jsonl.gz", doc.id), query.text,
                            doc.text[:CUT], kind, source))
    return out


def squad(shared: Path, rng: random.Random, n: int) -> list[Pair]:
    questions = [q for q in read_questions(shared, "squad2", SQUAD) if q.answerable]
    rows = {str(r["id"]): r for _, r in iter_rows(shared / SQUAD)}
    by_paragraph: dict[str, Question] = {}
    for q in read_questions(shared, "squad2", SQUAD):
        by_paragraph.setdefault(rows[q.key]["paragraph_id"], q)  # one question row stands for each paragraph
    out = []
    for q in rng.sample(questions, n):
        title, own = rows[q.key]["title"], rows[q.key]["paragraph_id"]
        others = [(pid, p) for pid, p in by_paragraph.items() if rows[p.key]["title"] == title and pid != own]
        rank = _ranker([p.passage for _, p in others])
        _, negative = others[rank(q.question)[0]]
        qref = _ref("squad2", SQUAD, q.key)
        out.append(Pair("squad2", qref, qref, q.question, q.passage, "own", True))
        out.append(Pair("squad2", qref, _ref("squad2", SQUAD, negative.key), q.question, negative.passage,
                        "same_article", False))
    return out


def _nearest_other(shared: Path, dataset: str, files: tuple[str, ...], n: int, rng: random.Random,
                   doc_id, kind: str) -> list[Pair]:
    """Own passage vs the TF-IDF closest passage of another row with a different document (``doc_id``)."""
    pool = [(f, q) for f in files for q in read_questions(shared, dataset, f) if q.passage.strip()]
    ids = {(f, q.key): doc_id(shared, f, q) for f, q in pool}
    unique: dict[str, tuple[str, Question]] = {}
    for f, q in pool:
        unique.setdefault(ids[(f, q.key)], (f, q))
    passages = list(unique.items())
    rank = _ranker([q.passage for _, (_, q) in passages])
    candidates = [(f, q) for f, q in pool if f == files[0] and q.answerable]
    out = []
    for f, q in rng.sample(candidates, n):
        own = ids[(f, q.key)]
        other = next(passages[i] for i in rank(q.question) if passages[i][0] != own)
        of, oq = other[1]
        qref = _ref(dataset, f, q.key)
        out.append(Pair(dataset, qref, qref, q.question, q.passage, "own", True))
        out.append(Pair(dataset, qref, _ref(dataset, of, oq.key), q.question, oq.passage, kind, False))
    return out


def _context_id(shared: Path, file: str, question: Question) -> str:
    row = _row_index(shared, file)[question.key]
    context = row["contexts"][0]
    return str(context.get("id") or context.get("filename"))


_ROWS: dict[tuple[Path, str], dict[str, dict]] = {}


def _row_index(shared: Path, file: str) -> dict[str, dict]:
    if (shared, file) not in _ROWS:
        _ROWS[(shared, file)] = {str(r.get("id", r.get("sample_id", f"line:{line}"))): r
                                 for line, r in iter_rows(shared / file)}
    return _ROWS[(shared, file)]


def _windows(text: str) -> list[int]:
    starts, position = [0], WINDOW // 2
    while position < len(text) - WINDOW // 3:
        space = text.find(" ", position)
        if space < 0:
            break
        starts.append(space + 1)
        position = space + WINDOW // 2
    return starts


def repliqa(shared: Path, rng: random.Random, n: int) -> list[Pair]:
    docs: dict[str, tuple[str, Question]] = {}
    pool = []
    for f in REPLIQA:
        for q in read_questions(shared, "repliqa", f):
            docs.setdefault(q.passage, (f, q))
            if q.answerable:
                pool.append((f, q))
    texts = list(docs)
    rank = _ranker(texts)
    out = []
    for f, q in rng.sample(pool, n):
        qref = _ref("repliqa", f, q.key)
        window_rank = _ranker([q.passage[s:s + WINDOW] for s in _windows(q.passage)])
        start = _windows(q.passage)[window_rank(q.question)[0]]
        out.append(Pair("repliqa", qref, qref, q.question, q.passage[start:start + WINDOW], "own_window", True,
                        start))
        other_text = next(texts[i] for i in rank(q.question) if texts[i] != q.passage)
        of, oq = docs[other_text]
        windows = _windows(other_text)
        other_rank = _ranker([other_text[s:s + WINDOW] for s in windows])
        ostart = windows[other_rank(q.question)[0]]
        out.append(Pair("repliqa", qref, _ref("repliqa", of, oq.key), q.question,
                        other_text[ostart:ostart + WINDOW], "tfidf_negative", False, ostart))
    return out


def build(shared: Path) -> list[Pair]:
    rng = random.Random(SEED)
    pairs = scifact(shared, rng, COUNTS["scifact"]) + squad(shared, rng, COUNTS["squad2"])
    pairs += _nearest_other(shared, "clapnq", CLAPNQ, COUNTS["clapnq"], rng, lambda s, f, q: q.passage,
                            "tfidf_negative")
    pairs += _nearest_other(shared, "techqa", (TECHQA,), COUNTS["techqa"], rng, _context_id, "tfidf_negative")
    pairs += _nearest_other(shared, "wixqa", (WIXQA,), COUNTS["wixqa"], rng, _context_id, "tfidf_negative")
    return pairs + repliqa(shared, rng, COUNTS["repliqa"])


def write_sheets(pairs: list[Pair], rows: list[dict], folder: Path, per_sheet: int = 20) -> None:
    """Blind reading sheets: question and passage as cut, shuffled within a dataset, no kind/source label."""
    folder.mkdir(parents=True, exist_ok=True)
    order = list(range(len(pairs)))
    random.Random(SEED + 1).shuffle(order)
    order.sort(key=lambda i: list(COUNTS).index(pairs[i].dataset))
    for start in range(0, len(order), per_sheet):
        chunk = order[start:start + per_sheet]
        text = "".join(f"### {rows[i]['id']} [{pairs[i].dataset}]\nQ: {pairs[i].question}\nP: {pairs[i].passage}\n\n"
                       for i in chunk)
        (folder / f"sheet_{start // per_sheet + 1:02d}.md").write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("datasets/labels/context_relevance.jsonl"))
    parser.add_argument("--sheets", type=Path, default=Path("/tmp/h12_sheets"))
    args = parser.parse_args()
    pairs = build(args.shared)
    rows = [p.row(i) for i, p in enumerate(pairs, 1)]
    if args.out.is_file():  # keep the labels already read
        old = {r["id"]: r for _, r in iter_rows(args.out)}
        for row in rows:
            kept = old.get(row["id"])
            if kept and kept["question_ref"] == row["question_ref"] and kept["passage_ref"] == row["passage_ref"]:
                row["label"], row["label_note"] = kept.get("label"), kept.get("label_note", "")
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    write_sheets(pairs, rows, args.sheets)
    print(f"{len(rows)} pairs -> {args.out}; sheets in {args.sheets}")


if __name__ == "__main__":
    main()
