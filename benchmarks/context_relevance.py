"""Validate the context relevance judge held out, refit it, and measure its discrimination on SciFact.

``validate``: every hand-labelled (question, passage) pair of ``datasets/labels/context_relevance.jsonl``
(resolved against ``../shared/data``); the model's P(yes) under every wording of ``judging.grounded.context_relevance.
WORDINGS`` (cached in the verdict store: a re-run makes no model call); the judge and its baselines on
question-grouped 5-fold CV (out-of-fold verdicts pooled) and leave-one-dataset-out. In every split the wording,
the logistic weights and the threshold are chosen on the training rows only (the wording: highest ROC AUC of
P(yes) on them). Baselines: the model's P(yes) alone at 0.5 and at the threshold best on the training rows, word
overlap (term coverage) at the threshold best on the training rows; ``oracle`` rows give P(yes)'s best threshold
on the test rows themselves (what the issue quotes as "at its best threshold", not a held-out number). Accuracy
with Wilson 95% CIs (statsmodels), ROC AUC (scikit-learn) with a question-grouped bootstrap CI, Cohen's κ.
``--write-params`` refits on every row and writes ``judges/context_relevance.json`` (parameters + validation).

``discrimination``: ``--questions`` seeded SciFact test claims that are not in the labelled set; per claim the
top 5 of a TF-IDF retriever (scikit-learn, over the whole corpus) and 5 random corpus documents, each judged
with the shipped parameters; mean context relevance of each retriever (goal: random ≥ 0.3 below TF-IDF), and
the per-chunk verdicts on the TF-IDF results against the qrels (accuracy, Cohen's κ).

    python benchmarks/context_relevance.py validate [--write-params] [--only-cached]
    python benchmarks/context_relevance.py discrimination [--questions 50]

Both write their section of ``benchmarks/results/context_relevance.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from evaluations.judging.grounded import context_relevance as cr  # noqa: E402
from evaluations.judging.labels.context_labels import ContextRow, load_context_labels  # noqa: E402
from evaluations.judging.correctness.embedded import VerdictCache  # noqa: E402
from evaluations.judging.basics.fitted import best_threshold  # noqa: E402
from evaluations.judging.basics.passages import Passage  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
LABELS = ROOT / "datasets" / "labels" / "context_relevance.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "context_relevance.json"
PARAMS = ROOT / "judges" / cr.PARAMS_FILE
JUDGES = ("judge", "qwen@0.5", "qwen@train_best", "word_overlap@train_best")
#: the wordings of the passage form (the conversation form's, with ``{id}``, is a served checker's)
PASSAGE_WORDINGS = {name: w for name, w in cr.WORDINGS.items() if "{question}" in w}


# -- signals ----------------------------------------------------------------------------------------------------
class CacheOnly:
    """A stand-in scorer with the real scorer's id and window (``fit``) that never runs the model (``--only-cached``)."""

    def __init__(self, scorer):
        self.id = scorer.id
        self.fit = scorer.fit

    def probability(self, shared: str, tail: str) -> tuple[float, float]:
        raise LookupError("not cached")


def cached_rows(rows: list[ContextRow], cache: VerdictCache) -> list[ContextRow]:
    """The rows whose P(yes) is in the verdict store for every wording."""
    from evaluations.judging.checkers.yesno import cached_probability, load_scorer, passage_shared

    scorers = {w: CacheOnly(load_scorer(cr.system_for(w))) for w in PASSAGE_WORDINGS.values()}
    kept = []
    for row in rows:
        try:
            for wording in PASSAGE_WORDINGS.values():
                cached_probability(scorers[wording], passage_shared(row.context[0]), wording.format(question=row.query),
                                   cache)
        except LookupError:
            continue
        kept.append(row)
    return kept


def model_p(rows: list[ContextRow], cache: VerdictCache) -> dict[str, np.ndarray]:
    """P(yes) per wording per row; all wordings of one passage are asked together (one passage evaluation)."""
    out = {name: np.empty(len(rows)) for name in PASSAGE_WORDINGS}
    start, calls = time.time(), 0
    for i, row in enumerate(rows):
        for name, wording in PASSAGE_WORDINGS.items():
            out[name][i], called = cr.ask(row.query, row.context[0], wording, cache=cache)
            calls += called
        if i % 25 == 0:
            print(f"  {i}/{len(rows)} pairs, {calls} model calls, {time.time() - start:.0f} s", file=sys.stderr)
    return out


def matrices(rows: list[ContextRow], p: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    questions, texts = [r.query for r in rows], [r.context[0] for r in rows]
    return {name: cr.feature_matrix(questions, texts, p[name]) for name in PASSAGE_WORDINGS}


def choose_wording(p: dict[str, np.ndarray], y: np.ndarray) -> str:
    """The wording whose P(yes) ranks the rows best (ROC AUC), first listed on ties. (Choosing the shortest of those
    within 0.005 of the best picked "short", 23 fewer tokens a check: question-grouped CV accuracy 0.817 against
    0.828, lower left-one-dataset-out on 4 of 6 datasets; not shipped, ``benchmarks/NOTES.md``.)"""
    from sklearn.metrics import roc_auc_score

    return max(p, key=lambda name: roc_auc_score(y, p[name]))


# -- one split ----------------------------------------------------------------------------------------------------
def predict(train: np.ndarray, test: np.ndarray, y: np.ndarray, p: dict[str, np.ndarray],
            x: dict[str, np.ndarray]) -> tuple[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """(wording, {judge: (scores, verdicts) on the test rows}) with everything fitted on the training rows."""
    name = choose_wording({k: v[train] for k, v in p.items()}, y[train])
    fitted = cr.fit(x[name][train], y[train], PASSAGE_WORDINGS[name])
    scores = fitted.probability(x[name][test])
    qwen = p[name]
    coverage = x[name][:, cr.FEATURES.index("term_coverage")]
    return name, {
        "judge": (scores, scores >= fitted.threshold),
        "qwen@0.5": (qwen[test], qwen[test] >= 0.5),
        "qwen@train_best": (qwen[test], qwen[test] >= best_threshold(qwen[train], y[train])),
        "word_overlap@train_best": (coverage[test], coverage[test] >= best_threshold(coverage[train], y[train])),
    }


def score(y: np.ndarray, s: np.ndarray, v: np.ndarray, groups: np.ndarray, *, resamples: int = 1000,
          seed: int = 0) -> dict:
    """Accuracy (Wilson 95% CI), ROC AUC (question-grouped bootstrap 95% CI), Cohen's κ, positive rate."""
    from sklearn.metrics import cohen_kappa_score, roc_auc_score
    from statsmodels.stats.proportion import proportion_confint

    hits = int((v == y).sum())
    low, high = proportion_confint(hits, len(y), alpha=0.05, method="wilson")
    rng = np.random.default_rng(seed)
    unique = np.unique(groups)
    members = {g: np.flatnonzero(groups == g) for g in unique}
    aucs = []
    for _ in range(resamples):
        idx = np.concatenate([members[g] for g in rng.choice(unique, len(unique))])
        if len(set(y[idx].tolist())) == 2:
            aucs.append(roc_auc_score(y[idx], s[idx]))
    two = len(set(y.tolist())) == 2
    return {
        "n": int(len(y)), "accuracy": round(hits / len(y), 4), "accuracy_ci95": [round(low, 4), round(high, 4)],
        "roc_auc": round(float(roc_auc_score(y, s)), 4) if two else None,
        "roc_auc_ci95": [round(float(q), 4) for q in np.quantile(aucs, [0.025, 0.975])] if aucs else None,
        "kappa": round(float(cohen_kappa_score(y, v)), 4) if two else None,
        "judge_positive_rate": round(float(v.mean()), 4),
    }


def oracle(y: np.ndarray, s: np.ndarray) -> dict:
    t = best_threshold(s, y)
    return {"threshold": t, "accuracy": round(float(((s >= t) == y).mean()), 4)}


# -- validate -----------------------------------------------------------------------------------------------------
def validate(write_params: bool, only_cached: bool = False) -> dict:
    from sklearn.model_selection import GroupKFold

    labelled = load_context_labels(LABELS, SHARED)
    rows = cached_rows(labelled, VerdictCache()) if only_cached else labelled
    y = np.array([r.label for r in rows], bool)
    groups = np.array([r.group for r in rows])
    datasets = np.array([r.dataset for r in rows])
    print(f"{len(rows)} labelled pairs, {len(set(groups.tolist()))} questions, {y.mean():.2f} relevant",
          file=sys.stderr)
    p = model_p(rows, VerdictCache())
    x = matrices(rows, p)

    pooled = {name: (np.empty(len(y)), np.empty(len(y), bool)) for name in JUDGES}
    wordings = []
    for train_idx, test_idx in GroupKFold(n_splits=5).split(groups, groups=groups):
        train = np.zeros(len(y), bool)
        train[train_idx] = True
        name, out = predict(train, ~train, y, p, x)
        wordings.append(name)
        for judge, (s, v) in out.items():
            pooled[judge][0][~train], pooled[judge][1][~train] = s, v
    cv = {judge: score(y, s, v, groups) for judge, (s, v) in pooled.items()}
    cv["wordings_chosen"] = wordings
    cv["per_dataset"] = {d: {judge: score(y[m], s[m], v[m], groups[m])["accuracy"]
                             for judge, (s, v) in pooled.items()} for d in sorted(set(datasets.tolist()))
                         if (m := datasets == d).any()}
    cv["oracle_qwen_best_threshold"] = {name: oracle(y, p[name]) for name in PASSAGE_WORDINGS}

    lodo = {}
    for d in sorted(set(datasets.tolist())):
        test = datasets == d
        if test.all() or len(set(y[test].tolist())) < 2:
            continue
        name, out = predict(~test, test, y, p, x)
        lodo[d] = {"wording": name, **{judge: score(y[test], s, v, groups[test]) for judge, (s, v) in out.items()},
                   "oracle_qwen_best_threshold": oracle(y[test], p[name][test])}

    wording = choose_wording(p, y)
    fitted = cr.fit(x[wording], y, PASSAGE_WORDINGS[wording])
    result = {
        "date": dt.date.today().isoformat(), "labels": str(LABELS.relative_to(ROOT)), "pairs": int(len(y)),
        "labelled_pairs_not_scored": len(labelled) - len(rows),
        "questions": int(len(set(groups.tolist()))), "relevant_share": round(float(y.mean()), 4),
        "datasets": {d: int((datasets == d).sum()) for d in sorted(set(datasets.tolist()))},
        "goal": "held-out accuracy >= 0.85 at the shipped threshold",
        "cv5_question_grouped": cv, "leave_one_dataset_out": lodo,
        "fitted_on_all": {"wording_name": wording, **fitted.model_dump()},
        "wording_auc_on_all": {name: score(y, p[name], p[name] >= 0.5, groups, resamples=0)["roc_auc"]
                               for name in PASSAGE_WORDINGS},
    }
    if write_params:
        PARAMS.write_text(json.dumps({
            "params": fitted.model_dump(),
            "model": "logistic regression (scikit-learn, L2, C=1) on standardised features; threshold maximising "
                     "accuracy on the fitting rows; wording: highest ROC AUC of P(yes) on them",
            "features": "judging/grounded/context_relevance.py module docstring",
            "training_data": {k: result[k] for k in ("labels", "pairs", "labelled_pairs_not_scored", "questions",
                                                     "relevant_share", "datasets")},
            "fitted": result["date"],
            "validation": {
                "cv5_question_grouped": {j: cv[j] for j in JUDGES},
                "leave_one_dataset_out": {d: {j: v[j]["accuracy"] for j in JUDGES} for d, v in lodo.items()},
                "details": str(RESULTS.relative_to(ROOT)),
            },
        }, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {PARAMS}", file=sys.stderr)
    return result


# -- discrimination -----------------------------------------------------------------------------------------------
def discrimination(n_questions: int, k: int = 5, seed: int = 0) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics import cohen_kappa_score
    from sklearn.metrics.pairwise import linear_kernel

    from evaluations.datasets import beir
    from evaluations.datasets.spec import LoadOptions

    corpus = beir.load(LoadOptions(source=SHARED / "scifact", split="test"))
    labelled = {json.loads(line)["question_ref"]["key"] for line in LABELS.read_text().splitlines() if line.strip()}
    queries = [q for q in corpus.queries if q.id not in labelled and any(g > 0 for g in q.relevant.values())]
    rng = np.random.default_rng(seed)
    sample = [queries[i] for i in sorted(rng.choice(len(queries), min(n_questions, len(queries)), replace=False))]
    docs = corpus.documents
    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    matrix = vectorizer.fit_transform([d.text for d in docs])
    fitted = cr.params(PARAMS)
    cache = VerdictCache()
    cutoffs = [c for c in (1, 3) if c < k] + [k]
    means: dict[str, dict[int, list[float]]] = {"tfidf": {c: [] for c in cutoffs}, "random": {c: [] for c in cutoffs}}
    qrels_p: dict[int, list[float]] = {c: [] for c in cutoffs}
    labels, verdicts, per_question, calls, start = [], [], [], 0, time.time()
    for i, q in enumerate(sample):
        sims = linear_kernel(vectorizer.transform([q.text]), matrix)[0]
        runs = {"tfidf": [docs[j] for j in np.argsort(-sims)[:k]],
                "random": [docs[j] for j in rng.choice(len(docs), k, replace=False)]}
        row = {"query": q.id}
        for name, hits in runs.items():
            for d in hits:  # every wording of a passage together: the others cost a tail each, and stay cached
                for wording in PASSAGE_WORDINGS.values():
                    calls += cr.ask(q.text, d.text, wording, cache=cache)[1]
            verdict = cr.judge_context_relevance(q.text, [Passage(id=d.id, text=d.text) for d in hits],
                                                 cache=cache, params=fitted)
            for c in cutoffs:  # precision@c of the first c chunks' verdicts
                means[name][c].append(float(np.mean([v.relevant for v in verdict.chunks[:c]])))
                if name == "tfidf":
                    qrels_p[c].append(float(np.mean([q.relevant.get(d.id, 0) > 0 for d in hits[:c]])))
            row[name] = {"score": verdict.score, "first_relevant_rank": verdict.first_relevant_rank,
                         "qrels_relevant": sum(q.relevant.get(d.id, 0) > 0 for d in hits)}
            if name == "tfidf":
                labels += [q.relevant.get(d.id, 0) > 0 for d in hits]
                verdicts += [c.relevant for c in verdict.chunks]
        per_question.append(row)
        print(f"  {i + 1}/{len(sample)} questions, {calls} model calls, {time.time() - start:.0f} s", file=sys.stderr)
    y, v = np.array(labels), np.array(verdicts)
    tfidf, random = float(np.mean(means["tfidf"][k])), float(np.mean(means["random"][k]))
    return {
        "date": dt.date.today().isoformat(), "questions": len(sample), "k": k, "seed": seed,
        "sample": "SciFact test claims with qrels, not in the labelled set",
        "mean_context_relevance": {"tfidf": round(tfidf, 4), "random": round(random, 4)},
        "difference": round(tfidf - random, 4), "goal": "random at least 0.3 below tfidf",
        "goal_met": bool(tfidf - random >= 0.3),
        "mean_precision_at": {f"{name}@{c}": round(float(np.mean(v)), 4) for name, by in means.items()
                              for c, v in by.items()},
        "qrels_precision_at_tfidf": {f"@{c}": round(float(np.mean(v)), 4) for c, v in qrels_p.items()},
        "qrels_agreement_tfidf_chunks": {
            "n": int(len(y)), "accuracy": round(float((y == v).mean()), 4),
            "cohen_kappa": round(float(cohen_kappa_score(y, v)), 4),
            "qrels_relevant_share": round(float(y.mean()), 4), "judge_relevant_share": round(float(v.mean()), 4),
        },
        "model_calls": calls, "seconds": round(time.time() - start, 1),
        "per_question": per_question,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate")
    v.add_argument("--write-params", action="store_true")
    v.add_argument("--only-cached", action="store_true",
                   help="use only the labelled pairs whose P(yes) is already in the verdict store (no model call)")
    d = sub.add_parser("discrimination")
    d.add_argument("--questions", type=int, default=50)
    args = parser.parse_args()
    result = (validate(args.write_params, args.only_cached) if args.command == "validate"
              else discrimination(args.questions))
    stored = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    stored[args.command] = result
    RESULTS.write_text(json.dumps(stored, indent=2) + "\n", encoding="utf-8")
    summary = {k: v for k, v in result.items() if k not in {"per_question", "leave_one_dataset_out"}}
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
