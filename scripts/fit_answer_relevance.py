"""Fit the off-topic score of ``answer_relevance`` (``evaluations.judging.grounded.answer_relevance``: ``TOPIC_WEIGHTS``,
``TOPIC_BIAS``, ``TOPIC_THRESHOLD``) on the judge-check controls of the FIT datasets, and print the rates on every
dataset (the others held out).

Examples: another question's gold (``other_gold``, label 0) and the gold answer bare, in a sentence, with detail
and paraphrased (label 1), of 300 answerable questions per file (``judging.validation.controls``, seed 0), whose answer form
passes rules 1-2 and which have a context. Each example's signals are ``relevance.topic``'s; the model is
scikit-learn's ``LogisticRegression(C=10)`` with each (dataset, label) weighted equally; the threshold is the one
(step 0.05) that maximises the smallest per-category rate on the fit datasets. Prints the constants to paste into
``judging/grounded/answer_relevance/topic.py``, then the diagnostic of the docs' last row: each gold answer (bare) with the context of
another question of its file (question k gets the passage of question (7k + 13) mod n), which the judge should accept.
Run from the repository root: ``python scripts/fit_answer_relevance.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from evaluations.judging.validation.controls import build_controls
from evaluations.judging.labels.questions import load_questions
from evaluations.judging.grounded.answer_relevance import MIN_ABOUT, answer_form, answer_relevance_batch, topic
from evaluations.judging.correctness.semantic import embed_texts

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FIT = {"squad2": "squad2_dev_cs224n/questions.jsonl.gz",
       "techqa": "techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz"}
HELD_OUT = {"clapnq": "clapnq_dev/clapnq_dev_answerable.jsonl.gz",
            "wixqa": "wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz",
            "repliqa": "repliqa_samples/repliqa_sample20.jsonl.gz"}
CATEGORIES = ("other_gold", "gold_bare", "gold_sentence", "gold_detail", "paraphrase")


def examples(name: str, file: str) -> list[dict]:
    """One dict per control of CATEGORIES: dataset, category, form verdict (rules 1-2) and topic signals."""
    controls = [c for c in build_controls(load_questions(SHARED / file, limit=300)) if c.category in CATEGORIES]
    cases = [(c.answer.question, c.answer.answer, c.answer.context, True) for c in controls]
    answer_relevance_batch(cases)  # embeds every text once (cached), so ``topic`` below reads the cache
    out = []
    for c, (q, a, ctx, _) in zip(controls, cases):
        form_ok = answer_form(q, a, True) is None  # rules 1-2
        out.append({"dataset": name, "category": c.category, "form_ok": form_ok,
                    "topic": topic(q, a, ctx or "", embed_texts) if form_ok else None})
    return out


def rates(rows: list[dict], score, threshold: float) -> dict[tuple[str, str], float]:
    out = {}
    for key in sorted({(r["dataset"], r["category"]) for r in rows}):
        group = [r for r in rows if (r["dataset"], r["category"]) == key]
        rejected = sum(1 for r in group if not r["form_ok"] or (r["topic"] is not None and r["topic"].about >= MIN_ABOUT
                                                                and score(r["topic"]) < threshold))
        out[key] = rejected / len(group) if key[1] == "other_gold" else 1 - rejected / len(group)
    return out


def wrong_context(file: str) -> tuple[int, int]:
    """(accepted, n): gold answers judged with another question's context (module docstring)."""
    golds = [c.answer for c in build_controls(load_questions(SHARED / file, limit=300)) if c.category == "gold_bare"]
    cases = [(g.question, g.answer, other, True) for k, g in enumerate(golds)
             if (other := golds[(7 * k + 13) % len(golds)].context) and other != g.context]
    return sum(r.verdict for r in answer_relevance_batch(cases)), len(cases)


def main() -> None:
    rows = [r for name, file in {**FIT, **HELD_OUT}.items() for r in examples(name, file)]
    train = [r for r in rows if r["dataset"] in FIT and r["topic"] is not None]
    names = list(train[0]["topic"].features())
    x = np.array([[r["topic"].features()[n] for n in names] for r in train])
    y = np.array([r["category"] != "other_gold" for r in train])
    groups = [(r["dataset"], bool(label)) for r, label in zip(train, y)]
    weight = np.array([1.0 / groups.count(g) for g in groups])
    model = LogisticRegression(C=10.0).fit(x, y, sample_weight=weight)
    coef = dict(zip(names, model.coef_[0]))

    def score(t) -> float:
        return float(model.intercept_[0] + sum(coef[n] * v for n, v in t.features().items()))

    fit_rows = [r for r in rows if r["dataset"] in FIT]
    threshold = max(np.arange(-2.0, 2.001, 0.05), key=lambda t: min(rates(fit_rows, score, t).values()))
    print("TOPIC_WEIGHTS =", {n: round(float(v), 2) for n, v in coef.items()})
    print(f"TOPIC_BIAS = {model.intercept_[0]:.2f}\nTOPIC_THRESHOLD = {threshold:.2f}")
    for (dataset, category), rate in rates(rows, score, threshold).items():
        print(f"{dataset:8s} {category:14s} {rate:.3f} {'fit' if dataset in FIT else 'held out'}")
    for name, file in {**FIT, **HELD_OUT}.items():
        accepted, n = wrong_context(file)
        print(f"{name:8s} gold with another question's context accepted {accepted}/{n} = {accepted / n:.3f}")


if __name__ == "__main__":
    sys.exit(main())
