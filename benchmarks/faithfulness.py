"""Fit and validate the ``faithfulness`` judge on the hand-labelled answers (``datasets/labels/faithfulness.jsonl``).

    python benchmarks/faithfulness.py [--labels FILE] [--cache PATH] [--evidence PATH] [--ask WORDING]
                                      [--cached-only] [--timing PATH] [--write-params]

1. Evidence (``collect``): for every row (not-applicable rows included: they must come out not applicable), the
   claims and their features (``faithfulness.applicability``, ``faithfulness.claim_evidence``: the embedded model
   over the claim's best sentence window, verdicts cached in the verdict store, so a re-run makes no model call),
   and two baselines: the issue's word-overlap rule (every content word of the answer occurs in the passages or
   the question) and "Qwen single yes/no on the whole answer" (P(yes) of the whole answer under the ``answer``
   ask over its best window, verdict at 0.5). Rows are taken in a seeded random order; one JSON line per row in
   ``--evidence`` (resumed).
2. The ask wording: the wordings of ``ASKS_TRIED`` are compared on a fitting split only (fold 0 of a
   question-grouped 5-fold split) by the ROC AUC of the answer's worst-claim P(yes); ``--ask`` overrides.
3. Validation, held out: question-grouped 5-fold CV and leave-one-population-out (weak models' own answers vs
   edited/copied answers), accuracy with Wilson 95% CIs and Cohen's κ per population and per origin, beside the
   two baselines and the alignment signals alone. The answer's verdict is "every claim supported" (the fitted
   model applied per claim, P ≥ threshold); a labelled row the judge finds not applicable counts as an error.
   The fit: logistic regression of the answer label on the answer's worst-claim features (``faithfulness.worst``).
4. ``--write-params``: refit on every labelled row, write ``judges/faithfulness.json`` (parameters, training data,
   validation) and ``benchmarks/results/faithfulness.json``. ``seconds_per_claim_check``: wall time of the
   evidence pass per claim and per model call (``--timing``: an evidence file written with model calls, when this
   run read its verdicts from the store).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ASKS_TRIED = ("statement", "stated", "answer")  # the wordings compared on the fitting split
DEFAULT_ASK = "statement"  # the wording of the evidence pass over every row
TOP_M = 1
C = 1.0


def wilson(k: int, n: int) -> list[float]:
    """The Wilson score 95% interval of k successes in n trials (statsmodels); [0, 1] when n is 0."""
    from statsmodels.stats.proportion import proportion_confint

    if n == 0:
        return [0.0, 1.0]
    return [float(x) for x in proportion_confint(k, n, alpha=0.05, method="wilson")]


def overlap_rule(question: str, answer: str, context: list[str]) -> bool:
    """The issue's word-overlap baseline: every content word of the answer occurs in the passages or question."""
    from evaluations.judging.basics.text import keywords

    have = keywords(" ".join(context) + " " + question)
    return keywords(answer) <= have


class Uncached(Exception):
    """A verdict the store does not hold (``--cached-only``)."""


class CacheOnly:
    """Stands in for the scorer when only stored verdicts may be used: same id and window (``fit``: the bridge's fit
    gate and the passage budget decide as the scorer does, so the same texts are looked up), no forward pass."""

    def __init__(self, scorer):
        self.id = scorer.id
        self.fit = scorer.fit

    def probability(self, shared: str, tail: str):
        raise Uncached


def collect(rows, cache_path: Path, out: Path, limit: int | None = None, cached_only: bool = False,
            asks: tuple[str, ...] = ASKS_TRIED) -> list[dict]:
    """The evidence of every row (module docstring, step 1), one JSON line per row in ``out`` (resumed).
    ``cached_only``: no model call; a row with a verdict missing from the store is left out."""
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.faithfulness import applicability
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, load_scorer

    done = {}
    if out.exists():
        for line in out.read_text().splitlines():
            rec = json.loads(line)
            done[rec["id"]] = rec
    scorer = load_scorer(PASSAGE_SYSTEM)
    if cached_only:
        scorer = CacheOnly(scorer)
    cache = VerdictCache(cache_path)
    # a seeded random order: a partial pass (``limit``) is a sample of every origin
    order = np.random.default_rng(0).permutation(len(rows))
    todo = [rows[i] for i in order][:limit]
    with out.open("a") as fh:
        for i, r in enumerate(todo):
            if r.id in done:
                continue
            passages = [Passage(id=f"p{j}", text=t) for j, t in enumerate(r.context)]
            kind, claims = applicability(r.query, r.generated_answer, passages)
            rec = {"id": r.id, "group": r.group, "origin": r.origin, "system": r.system, "label": r.label,
                   "kind": kind, "overlap": overlap_rule(r.query, r.generated_answer, r.context), "claims": []}
            start = time.perf_counter()
            try:
                rec.update(_evidence(r, claims, passages, scorer, cache, asks))
            except Uncached:
                continue
            rec["seconds"] = time.perf_counter() - start
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            done[r.id] = rec
            print(f"{i + 1}/{len(todo)} {r.id} claims={len(claims)} calls={rec['calls']} {rec['seconds']:.1f}s",
                  file=sys.stderr, flush=True)
    return [done[r.id] for r in rows if r.id in done]


def _evidence(r, claims, passages, scorer, cache, asks: tuple[str, ...]) -> dict:
    """Per claim and ask: features, the best passage, P(yes); the whole-answer baseline's P(yes)."""
    from evaluations.judging.grounded.claims import Claim
    from evaluations.judging.grounded.faithfulness import claim_evidence

    rec: dict = {"claims": []}
    calls = 0
    for claim in claims:
        per_ask = {}
        for ask in asks:
            e = claim_evidence(r.query, claim, passages, scorer=scorer, cache=cache, ask=ask, top_m=TOP_M)
            per_ask[ask] = {"features": list(e.features), "passage": e.passage, "p": e.p_llm}
            calls += e.calls
        rec["claims"].append({"text": claim.text, "short": claim.short, **per_ask})
    if claims:
        whole = claim_evidence(r.query, Claim(r.generated_answer.strip(), short=True), passages,
                               scorer=scorer, cache=cache, top_m=TOP_M)
        rec["whole_p"] = whole.p_llm
        calls += whole.calls
    rec["calls"] = calls
    return rec


def fitting_split(rows) -> set[str]:
    """Ids of the rows of fold 0 of a question-grouped 5-fold split: where the ask wording is chosen."""
    from sklearn.model_selection import GroupKFold

    groups = [r.group for r in rows]
    _, test = next(GroupKFold(n_splits=5).split(groups, groups=groups))
    return {rows[i].id for i in test}


def choose_ask(records: list[dict]) -> dict:
    """Per wording, on the fitting split's labelled rows the judge scores: ROC AUC of the answer's worst-claim
    P(yes) (llm_logit) against the label; the wording with the highest AUC is chosen."""
    from sklearn.metrics import roc_auc_score

    out = {}
    rows = [r for r in records if r["label"] is not None and r["claims"]]
    y = [bool(r["label"]) for r in rows]
    for ask in ASKS_TRIED:
        worst_logit = [min(c[ask]["features"][0] for c in r["claims"]) for r in rows]
        out[ask] = {"n": len(rows), "roc_auc": float(roc_auc_score(y, worst_logit))}
    out["chosen"] = max(ASKS_TRIED, key=lambda a: out[a]["roc_auc"])
    return out


# -- validation ------------------------------------------------------------------------------------------
def population(origin: str) -> str:
    """weak: a weak model's own answer (its origin starts with "weak:"); edited: an answer we copied or edited."""
    return "weak" if origin.startswith("weak:") else "edited"


class Table:
    """The labelled rows the judge scores, as arrays: worst-claim features, per-claim features, labels, groups."""

    def __init__(self, records: list[dict], ask: str = "statement", names: tuple[str, ...] | None = None):
        from evaluations.judging.grounded.faithfulness import FEATURES, worst

        self.names = names or FEATURES
        keep = [FEATURES.index(n) for n in self.names]

        self.rows = [r for r in records if r["label"] is not None]
        self.y = np.array([bool(r["label"]) for r in self.rows])
        self.groups = np.array([r["group"] for r in self.rows])
        self.pop = np.array([population(r["origin"]) for r in self.rows])
        self.origin = np.array([r["origin"] for r in self.rows])
        self.applicable = np.array([r["kind"] is None and bool(r["claims"]) for r in self.rows])
        self.claims = [[[c[ask]["features"][j] for j in keep] for c in r["claims"]]
                       for r in self.rows]
        self.x = np.array([worst(c, self.names) if c else [0.0] * len(keep) for c in self.claims])
        self.overlap = np.array([bool(r["overlap"]) for r in self.rows])
        self.whole = np.array([r.get("whole_p", 0.0) >= 0.5 for r in self.rows])


def fit(table: Table, train: np.ndarray):
    from evaluations.judging.grounded.faithfulness import fit_params

    rows = train & table.applicable
    return fit_params(table.x[rows], table.y[rows], names=table.names, c=C)


def verdicts(params, table: Table, test: np.ndarray) -> np.ndarray:
    """Every claim supported (P >= threshold per claim); a row the judge finds not applicable counts as
    'not supported' (it gets no score: never faithful by default)."""
    out = np.zeros(len(table.y), bool)
    for i in np.flatnonzero(test & table.applicable):
        out[i] = bool((params.probability(np.array(table.claims[i])) >= params.threshold).all())
    return out


def scores(table: Table, mask: np.ndarray, judged: np.ndarray) -> dict:
    """Accuracy with Wilson CIs of the judge and the two baselines on the rows of ``mask``."""
    from sklearn.metrics import cohen_kappa_score

    n, out = int(mask.sum()), {"n": int(mask.sum()), "supported_share": float(table.y[mask].mean()) if mask.any() else 0}
    for name, v in (("judge", judged), ("word_overlap", table.overlap), ("qwen_whole_answer", table.whole)):
        k = int((v[mask] == table.y[mask]).sum())
        kappa = cohen_kappa_score(table.y[mask], v[mask]) if len(set(table.y[mask])) > 1 else None
        out[name] = {"accuracy": k / n if n else None, "ci95": wilson(k, n),
                     "kappa": None if kappa is None or np.isnan(kappa) else float(kappa)}
    return out


def validate(records: list[dict], ask: str = "statement", names: tuple[str, ...] | None = None) -> dict:
    """Question-grouped 5-fold CV and leave-one-population-out (module docstring, step 3)."""
    from sklearn.model_selection import GroupKFold

    table = Table(records, ask, names)
    out_of_fold = np.zeros(len(table.y), bool)
    for train, test in GroupKFold(n_splits=5).split(table.x, groups=table.groups):
        tr = np.zeros(len(table.y), bool)
        tr[train] = True
        out_of_fold[test] = verdicts(fit(table, tr), table, ~tr)[test]
    everything = np.ones(len(table.y), bool)
    result: dict = {"ask": ask, "cv": {"all": scores(table, everything, out_of_fold)}}
    for pop in ("weak", "edited"):
        result["cv"][pop] = scores(table, table.pop == pop, out_of_fold)
    for origin in sorted(set(table.origin.tolist())):
        result["cv"][f"origin:{origin}"] = scores(table, table.origin == origin, out_of_fold)
    result["leave_one_population_out"] = {}
    for pop in ("weak", "edited"):
        test = table.pop == pop
        train = ~np.isin(table.groups, table.groups[test])
        result["leave_one_population_out"][f"test:{pop}"] = {
            "train_n": int(train.sum()), **scores(table, test, verdicts(fit(table, train), table, test))}
    result["not_applicable"] = {
        "labelled_rows_judged_not_applicable": int((~table.applicable).sum()),
        "null_rows": sum(r["label"] is None for r in records),
        "null_rows_judged_not_applicable": sum(r["label"] is None and (r["kind"] is not None or not r["claims"])
                                               for r in records)}
    result["errors"] = [{"id": r["id"], "origin": r["origin"], "label": r["label"]}
                        for r, v, y in zip(table.rows, out_of_fold, table.y) if v != y]
    return result


def seconds_per_claim(records: list[dict]) -> dict:
    """Measured seconds per claim check (rows whose evidence made model calls), and the machine's load."""
    import os

    timed = [r for r in records if r.get("calls") and r["claims"]]
    claims = sum(len(r["claims"]) for r in timed)
    total = sum(r["seconds"] for r in timed)
    calls = sum(r["calls"] for r in timed)
    return {"claims": claims, "seconds": total, "seconds_per_claim": total / claims if claims else None,
            "model_calls": calls, "seconds_per_model_call": total / calls if calls else None,
            "cpus": os.cpu_count(),
            "note": "wall time of the evidence pass with model calls (per claim its best sentence window; the whole-answer "
                    "baseline call beside it), EVALUATIONS_LLM_THREADS=1, on a machine shared with other model jobs"}


def write_params(records: list[dict], result: dict, ask: str = "statement") -> Path:
    """Refit on every labelled row and write judges/faithfulness.json with the training data and validation."""
    import collections
    import datetime as dt

    from evaluations.judging.grounded.faithfulness import SUPPORT_FEATURES

    table = Table(records, ask)
    params = fit(table, np.ones(len(table.y), bool))
    params.ask, params.top_m = ask, TOP_M
    params.info = {
        "model": "logistic regression (scikit-learn, L2, C=1) on standardised worst-claim features of the answer "
                 f"(min over claims of {sorted(SUPPORT_FEATURES)}, max of the others); applied per claim; a claim "
                 "is supported when P >= threshold",
        "training_data": {
            "file": result.get("labels_file"), "labelled_rows": int(len(table.y)),
            "fitted_rows": int(table.applicable.sum()), "supported": int(table.y.sum()),
            "by_origin": dict(collections.Counter(table.origin.tolist())),
            "labels": "read by hand under datasets/labels/FAITHFULNESS_RUBRIC.md (helper h11)"},
        "validation": {k: result[k] for k in ("cv", "leave_one_population_out", "not_applicable")},
        "fitted": dt.date.today().isoformat(),
        "written_by": "python benchmarks/faithfulness.py --write-params",
    }
    path = ROOT / "judges/faithfulness.json"
    path.write_text(json.dumps(params.model_dump(), indent=2) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", default=str(ROOT / "datasets/labels/faithfulness.jsonl"))
    parser.add_argument("--cache", default=None, help="verdict store (default: the user's verdict cache)")
    parser.add_argument("--evidence", default="/tmp/faithfulness_evidence.jsonl")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--collect-only", action="store_true")
    parser.add_argument("--timing", default=None, help="an evidence file written with model calls, for the "
                        "seconds per claim check (default: this run's)")
    parser.add_argument("--ask", default=None, choices=ASKS_TRIED, help="the wording used on every row (default: "
                        "the one chosen on the fitting split)")
    parser.add_argument("--asks-only", action="store_true", help="only the wordings' evidence on the fitting split")
    parser.add_argument("--cached-only", action="store_true", help="no model call: rows with every verdict stored")
    parser.add_argument("--write-params", action="store_true")
    args = parser.parse_args(argv)

    from evaluations.judging.correctness.embedded import default_verdict_cache
    from evaluations.judging.labels.faith_labels import load_faithfulness_labels
    from evaluations.judging.grounded.faithfulness import FEATURES

    rows = load_faithfulness_labels(args.labels)
    cache = Path(args.cache) if args.cache else default_verdict_cache()
    evidence = Path(args.evidence)
    split = fitting_split(rows)
    fitting = collect([r for r in rows if r.id in split], cache, evidence.with_suffix(".asks.jsonl"), args.limit,
                      cached_only=args.cached_only, asks=ASKS_TRIED)
    if args.asks_only:
        return 0
    records = collect(rows, cache, evidence, args.limit, cached_only=args.cached_only, asks=(DEFAULT_ASK,))
    if args.collect_only:
        return 0
    result = {"ask_selection": choose_ask(fitting)}
    ask = args.ask or result["ask_selection"]["chosen"]
    result["ask_used"] = ask
    if ask != DEFAULT_ASK:  # the chosen wording on every row
        records = collect(rows, cache, evidence.with_suffix(f".{ask}.jsonl"), args.limit,
                          cached_only=args.cached_only, asks=(ask,))
    result.update(validate(records, ask))
    result["signals_only"] = validate(records, ask, names=tuple(f for f in FEATURES if not f.startswith("llm_logit")))["cv"]
    result["labels_file"] = str(Path(args.labels).resolve().relative_to(ROOT)) if Path(args.labels).resolve(
    ).is_relative_to(ROOT) else args.labels
    timing = [json.loads(line) for line in Path(args.timing).read_text().splitlines()] if args.timing else records
    result["seconds_per_claim_check"] = seconds_per_claim(timing)
    out = ROOT / "benchmarks/results/faithfulness.json"
    if args.write_params:
        write_params(records, result, ask)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "errors"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
