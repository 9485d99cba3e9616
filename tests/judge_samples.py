"""Samples and held-out splits that a test checks on a few rows and ``benchmarks/judge_accuracy.py`` measures on
all of them: one draw, one split, so the test's sample is the first rows of the benchmark's.

No pytest here: the benchmark imports this module (``tests`` on its path), as it imports nothing of a test.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
OFFLINE_SHIPPED = ROOT / "judges" / "offline_judge.json"
SCIFACT = SHARED / "scifact"
CONTEXT_LABELS = ROOT / "datasets" / "labels" / "context_relevance.jsonl"


def read_jsonl_gz(path: Path) -> list[dict]:
    """The rows of a gzipped JSON Lines file (blank lines skipped), read with gzip and json only."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _squad_paragraphs() -> list[str]:
    rows = read_jsonl_gz(SHARED / "squad2_dev_cs224n" / "paragraphs.jsonl.gz")
    key = next(k for k in ("context", "text", "paragraph") if k in rows[0])
    return [r[key] for r in rows]


def copies_and_swaps(n: int, seed: int = 13) -> list[tuple[str, str, str]]:
    """(passage, copied sentence, the sentence with one number or name swapped for one the passage lacks), for
    ``n`` seeded SQuAD 2.0 passages; the swap is made here from the data (a year + 7, or a name of another
    passage). The first ``m`` of ``copies_and_swaps(n)`` are ``copies_and_swaps(m)``."""
    from evaluations.judging.grounded.claims import split_claims

    paragraphs = _squad_paragraphs()
    rng = random.Random(seed)
    names = sorted({m for p in paragraphs for m in re.findall(r"\b[A-Z][a-z]{3,}\b", p)})
    out = []
    for passage in rng.sample(paragraphs, len(paragraphs)):
        if len(passage) > 900:
            continue
        candidates = [s for s in re.split(r"(?<=\.)\s+(?=[A-Z])", passage) if 60 <= len(s) <= 200]
        rng.shuffle(candidates)
        for sentence in candidates:
            if len(split_claims("", sentence)) != 1:
                continue
            years = re.findall(r"\b1[5-9]\d\d\b", sentence)
            if years and str(int(years[0]) + 7) not in passage:
                out.append((passage, sentence, sentence.replace(years[0], str(int(years[0]) + 7), 1)))
                break
            inner = [w for w in re.findall(r"(?<=\s)[A-Z][a-z]{3,}\b", sentence) if passage.count(w) == 1]
            if inner:
                new = rng.choice([x for x in names if x not in passage])
                out.append((passage, sentence, re.sub(rf"\b{inner[0]}\b", new, sentence, count=1)))
                break
        if len(out) == n:
            return out
    raise AssertionError("not enough passages to draw from")


@dataclass(frozen=True)
class HeldOutEighth:
    """The offline judge fitted (as calibrate-judge fits) on 7/8 of the questions, scored on the other eighth (or
    on every ``every``-th question: ``offline_heldout_eighth(examples, every)``)."""

    train: int  # answers fitted on
    test: int  # answers held out
    questions: int  # questions held out
    accuracy: float  # the refit's, with the non-answer screen
    keyword: float  # keyword_correct's on the same held-out answers
    cv_accuracy: float  # the shipped file's cross-validated accuracy
    tolerance: float  # 3 binomial standard errors of ``accuracy`` + the spread of the shipped file's folds


def offline_heldout_eighth(examples, every: int = 8) -> HeldOutEighth:
    """Every eighth (``every``-th) question (sorted, from the second) held out of the fit; the rest fitted on."""
    from evaluations.judging.correctness import lexical
    from evaluations.judging.validation.calibrate import calibrate

    questions = sorted({e.group for e in examples})
    held = set(questions[1::every])
    train = [e for e in examples if e.group not in held]
    test = [e for e in examples if e.group in held]
    model = calibrate(train, sources=["NQ", "TQ"])
    labels = np.array([e.label for e in test])
    _, verdicts = model.judge_batch([e.references for e in test], [e.answer for e in test],
                                    questions=[e.question for e in test])
    accuracy = float(np.mean(verdicts == labels))
    keyword = float(np.mean(np.array([lexical.keyword_correct(e.references, e.answer) for e in test]) == labels))
    cv = json.loads(OFFLINE_SHIPPED.read_text())["cross_validation"]
    spread = max(cv["fold_accuracies"]) - min(cv["fold_accuracies"])
    return HeldOutEighth(train=len(train), test=len(test), questions=len(held), accuracy=accuracy, keyword=keyword,
                         cv_accuracy=cv["accuracy"],
                         tolerance=3 * float(np.sqrt(accuracy * (1 - accuracy) / len(test))) + spread)


def scifact_qrels() -> dict[str, set[str]]:
    """SciFact's test qrels: claim id -> the ids of the abstracts graded relevant (grade > 0)."""
    qrels: dict[str, set[str]] = {}
    for line in (SCIFACT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        if int(grade) > 0:
            qrels.setdefault(qid, set()).add(doc)
    return qrels


def scifact_pairs(questions: int, seed: int = 20) -> list[tuple[str, list, list[bool]]]:
    """(claim, [passages], expected relevance per passage) for a seeded draw of ``questions`` SciFact test claims
    that ``datasets/labels/context_relevance.jsonl`` does not hold: each with its first qrels abstract and a random
    other one, shuffled (a test takes the first few of the draw a benchmark judges whole)."""
    from evaluations.judging.basics.passages import Passage

    qrels = scifact_qrels()
    labelled = {json.loads(line)["question_ref"]["key"]
                for line in CONTEXT_LABELS.read_text(encoding="utf-8").splitlines() if line.strip()}
    claims = {r["_id"]: r["text"] for r in read_jsonl_gz(SCIFACT / "queries.jsonl.gz")}
    corpus = {r["_id"]: f"{r['title']}\n{r['text']}" if r.get("title") else r["text"]
              for r in read_jsonl_gz(SCIFACT / "corpus.jsonl.gz")}
    rng = random.Random(seed)
    ids = sorted(corpus)
    cases = []
    for qid in rng.sample(sorted(set(qrels) - labelled), questions):
        relevant = sorted(qrels[qid])[0]
        other = rng.choice([d for d in ids if d not in qrels[qid]])
        pair = [(relevant, True), (other, False)]
        rng.shuffle(pair)
        cases.append((claims[qid], [Passage(id=d, text=corpus[d]) for d, _ in pair], [e for _, e in pair]))
    return cases
