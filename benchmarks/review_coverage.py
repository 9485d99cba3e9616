"""Does ``review``'s correction hold? Simulated users on labelled sets whose truth is known.

For each labelled set, a judge's per-answer prediction and score are computed once (``rows``, kept in
``benchmarks/results/review_rows.json.gz`` so the simulation re-runs in seconds), and turned into the case records
a run would hold. Then, for 200 seeds: ``review``'s own design (``evaluations.review.design.draw``) picks n = 50
cases, the set's human labels of those cases are the person's, and ``evaluations.review.corrected`` corrects the
judge's figure. Reported per set: the true share (every human label of the set), the judge's own figure, the
coverage of the corrected 95% interval, its mean bias and mean width, and the mean width of the Wilson interval of
50 labels drawn at random (labels alone).

Sets (every labelled set the project has for these judges):

* ``evouna_nq_offline`` / ``evouna_tq_offline``: EVOUNA's human correctness labels (1,000 answers each, seeded
  sample), the offline judge's P(correct) and verdict;
* ``weak_llm``: ``datasets/labels/weak_answers.jsonl`` (weak models' answers, labelled by hand), the embedded LLM
  judge (Qwen2.5-Coder-1.5B yes/no) at its shipped threshold: the judge that is most biased there;
* ``weak_combined``: the same answers, the combined judge;
* ``faithfulness_hand`` / ``faithfulness_multihop``: ``datasets/labels/faithfulness.jsonl`` and
  ``multihop_faithfulness.jsonl``, the faithfulness judge (every claim supported), score = the least P of a claim;
* ``answer_relevance_rubric``: ``datasets/relevance`` answers labelled under its rubric (design and held-out), the
  shipped answer-relevance judge (its rules, then the naming screen); ``answer_relevance_rubric_rules``: its rules
  alone;
* ``context_relevance_hand``: ``datasets/labels/context_relevance.jsonl``, its passages of each question read as
  one retrieved set (a case: a passage needed, by hand; by the judge: a chunk judged relevant, best P its score).

Run: ``python benchmarks/review_coverage.py [--seeds 200] [--n 50] [--sets a,b]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
ROWS = RESULTS / "review_rows.json.gz"
LABELS = ROOT / "datasets" / "labels"
#: at most this many labelled rows of a faithfulness file (``--rows``; None: all): a claim check costs 1.5-7 s
ROWS_LIMIT: int | None = None


# --- the judges' rows: (id, prediction, score, label) --------------------------------------------------------

def _evouna(name: str, n: int = 1000) -> list[dict]:
    from evaluations.judging.correctness.offline import load_model
    from evaluations.judging.labels.read import read_answers

    rows = read_answers([DATA / "evouna" / f"{name}.jsonl.gz"])
    rows = random.Random(0).sample(rows, min(n, len(rows)))
    p, v = load_model().judge_batch([e.references for e in rows], [e.answer for e in rows],
                                    questions=[e.question for e in rows], answerable=[e.answerable for e in rows])
    return [{"id": f"{name}-{i}", "f": float(v[i]), "s": float(p[i]), "y": bool(e.label)} for i, e in enumerate(rows)]


def _weak(combined: bool) -> list[dict]:
    from evaluations.core.config import Config
    from evaluations.judging.basics.fitted import llm_logit
    from evaluations.judging.correctness.embedded import (combined_params_path, judge_many, judge_params, load_judge,
                                                          verdict_cache)
    from evaluations.judging.correctness.offline import load_model
    from evaluations.judging.labels.read import read_answers

    rows = read_answers([LABELS / "weak_answers.jsonl"])
    config = Config()
    p = judge_many(load_judge(data_dir=config.data_dir()), [(e.question, e.references, e.answer) for e in rows],
                   cache=verdict_cache(True, config.judge_cache_dir()), answerable=[e.answerable for e in rows])
    if combined:
        p, v = load_model(combined_params_path()).judge_batch(
            [e.references for e in rows], [e.answer for e in rows], extras={"llm_logit": llm_logit(p)},
            questions=[e.question for e in rows], answerable=[e.answerable for e in rows])
    else:
        v = p >= judge_params()["threshold"]
    return [{"id": f"weak-{i}", "f": float(v[i]), "s": float(p[i]), "y": bool(e.label)} for i, e in enumerate(rows)]


def _faithfulness(file: str, limit: int | None = None) -> list[dict]:
    from evaluations.core.config import Config
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.checkers.served_checker import judge_tools
    from evaluations.judging.correctness.embedded import verdict_cache
    from evaluations.judging.grounded.faithfulness import judge_faithfulness
    from evaluations.judging.labels.read import read_answers

    config = Config()
    scorer, decompose = judge_tools(config, "faithfulness")
    store = verdict_cache(True, config.judge_cache_dir())
    out = []
    for i, e in enumerate(read_answers([LABELS / file], passages=True, judges=["faithfulness"], limit=limit)):
        passages = [Passage(id=str(r), text=t) for r, t in enumerate(e.passages, 1)]
        result = judge_faithfulness(e.question, e.answer, passages, cache=store, scorer=scorer, decompose=decompose)
        if not result.applicable or not result.claims:
            continue
        out.append({"id": f"{Path(file).stem}-{i}", "f": float(all(c.supported for c in result.claims)),
                    "s": float(min(c.p for c in result.claims)), "y": bool(e.label)})
    return out


def _context_relevance() -> list[dict]:
    """Per question of ``context_relevance.jsonl`` (its labelled passages together, as a run's retrieved set): the
    person's label = a passage is labelled needed; the judge's = a chunk judged relevant; score = the best P."""
    from evaluations.core.config import Config
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.checkers.served_checker import judge_tools
    from evaluations.judging.correctness.embedded import verdict_cache
    from evaluations.judging.grounded.context_relevance import judge_context_relevance
    from evaluations.judging.labels.read import read_answers

    config = Config()
    scorer = judge_tools(config, "context_relevance")[0]
    store = verdict_cache(True, config.judge_cache_dir())
    questions: dict[str, tuple[list[str], list[bool]]] = {}
    for e in read_answers([LABELS / "context_relevance.jsonl"], passages=True, judges=["context_relevance"]):
        texts, labels = questions.setdefault(e.question, ([], []))
        texts += list(e.passages)
        labels.append(bool(e.label))
    out = []
    for i, (question, (texts, labels)) in enumerate(questions.items()):
        result = judge_context_relevance(question, [Passage(id=str(r), text=t) for r, t in enumerate(texts, 1)],
                                         cache=store, scorer=scorer)
        if not result.applicable:
            continue
        out.append({"id": f"context-{i}", "f": float(any(c.relevant for c in result.chunks)),
                    "s": float(max(c.p for c in result.chunks)), "y": any(labels)})
    return out


def _answer_relevance(screen: bool = True) -> list[dict]:
    from evaluations.judging.correctness.embedded import verdict_cache
    from evaluations.judging.grounded.answer_relevance import judge_answer_relevance
    from evaluations.judging.grounded.naming import Naming

    folder = ROOT / "datasets" / "relevance"
    naming = Naming(cache=verdict_cache(True)) if screen else None  # one model load for both splits
    out = []
    for split in ("design", "heldout"):
        with gzip.open(folder / f"answers_{split}.jsonl.gz", "rt", encoding="utf-8") as handle:
            answers = {(r := json.loads(line))["id"]: r for line in handle if line.strip()}
        labels = [json.loads(line) for line in (folder / f"labels_{split}.jsonl").read_text().splitlines() if line]
        labels = [lab for lab in labels if lab.get("id") in answers and isinstance(lab.get("label"), bool)]
        rows = [answers[lab["id"]] for lab in labels]
        verdicts = judge_answer_relevance([(r["question"], r["answer"], " ".join(r.get("context") or []), True)
                                           for r in rows], naming)
        for lab, v in zip(labels, verdicts):
            value = float(v.verdict)
            out.append({"id": f"{split}-{lab['id']}", "f": value, "s": value, "y": bool(lab["label"])})
    return out


MAKERS = {
    "evouna_nq_offline": ("accuracy", lambda: _evouna("NQ")),
    "evouna_tq_offline": ("accuracy", lambda: _evouna("TQ")),
    "weak_llm": ("accuracy", lambda: _weak(False)),
    "weak_combined": ("accuracy", lambda: _weak(True)),
    "faithfulness_hand": ("faithfulness", lambda: _faithfulness("faithfulness.jsonl", ROWS_LIMIT)),
    "faithfulness_multihop": ("faithfulness", lambda: _faithfulness("multihop_faithfulness.jsonl", ROWS_LIMIT)),
    "faithfulness_hand_all": ("faithfulness", lambda: _faithfulness("faithfulness.jsonl")),
    "answer_relevance_rubric": ("answer_relevance", _answer_relevance),
    "answer_relevance_rubric_rules": ("answer_relevance", lambda: _answer_relevance(screen=False)),
    "context_relevance_hand": ("context_relevance", _context_relevance),
}


# --- a run of the rows, and the simulated reviews ---------------------------------------------------------------

def as_run(measure: str, rows: list[dict]):
    """The case records a run would hold for these judge outputs."""
    from evaluations.results.records import ClaimRecord, ChunkRecord, CaseRecord, QARecord
    from evaluations.results.rundata import AnswersSummary, RunData, RunSummary

    records = []
    for r in rows:
        base = {"name": r["id"], "case": r["id"], "query": "q", "qa": QARecord(status="ok"),
                "answer": {"answer": "a"}, "gold_answers": ["g"]}
        if measure == "accuracy":
            judges = {"judge_correct": bool(r["f"]), "judge_p_correct": r["s"]}
            records.append(CaseRecord(**base, judges=judges))
        elif measure == "faithfulness":
            records.append(CaseRecord(**base, judges={"faithfulness": 1.0 if r["f"] else 0.5},
                                      claims=[ClaimRecord(claim="c", supported=bool(r["f"]), p=r["s"])]))
        elif measure == "answer_relevance":
            records.append(CaseRecord(**base, judges={"answer_relevance": r["f"]}))
        else:
            records.append(CaseRecord(**base, chunk_relevance=[ChunkRecord(rank=1, id="d", relevant=bool(r["f"]),
                                                                           p=r["s"])]))
    return RunData(records=records, summary=RunSummary(answers=AnswersSummary(primary_judge="judge_correct")))


def simulate(measure_name: str, rows: list[dict], seeds: int, n: int) -> dict:
    from evaluations.judging.validation.agreement import wilson
    from evaluations.review.corrected import estimate_measure
    from evaluations.review.design import draw
    from evaluations.review.measures import MEASURES

    measure = MEASURES[measure_name]
    run = as_run(measure_name, rows)
    truth_of = {r["id"]: r["y"] for r in rows}
    truth = float(np.mean([r["y"] for r in rows]))
    judge = float(np.mean([r["f"] for r in rows]))
    covered, errors, widths, srs_widths, lams = [], [], [], [], []
    for seed in range(seeds):
        design = draw(measure, run, seed)
        chosen = design.chosen(n)
        est = estimate_measure(run, measure, {c: truth_of[c] for c in chosen}, design)
        lo, hi = est.ci95
        covered.append(lo <= truth <= hi)
        errors.append(est.estimate - truth)
        widths.append(hi - lo)
        lams.append(est.ppi_lambda)
        srs = random.Random(10_000 + seed).sample(rows, n)
        a, b = wilson(sum(r["y"] for r in srs), n)
        srs_widths.append(b - a)
    return {"measure": measure_name, "answers": len(rows), "true_share": round(truth, 4),
            "judge_share": round(judge, 4), "judge_bias": round(judge - truth, 4),
            "coverage": round(float(np.mean(covered)), 4), "mean_bias": round(float(np.mean(errors)), 4),
            "mean_abs_error": round(float(np.mean(np.abs(errors))), 4),
            "mean_width": round(float(np.mean(widths)), 4), "labels_only_width": round(float(np.mean(srs_widths)), 4),
            "narrower": bool(np.mean(widths) < np.mean(srs_widths)), "mean_lambda": round(float(np.mean(lams)), 3),
            "strata_sizes": {str(h): len(o) for h, o in draw(measure, run, 0).orders.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--sets", default=",".join(MAKERS))
    parser.add_argument("--rows", type=int, default=None, help="At most N labelled rows of a faithfulness file.")
    args = parser.parse_args()
    global ROWS_LIMIT
    ROWS_LIMIT = args.rows
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    stored = json.loads(gzip.decompress(ROWS.read_bytes())) if ROWS.exists() else {}
    results = {}
    for name in args.sets.split(","):
        measure, make = MAKERS[name]
        if name not in stored:
            start = time.perf_counter()
            stored[name] = make()
            print(f"{name}: {len(stored[name])} rows judged in {time.perf_counter() - start:.0f} s", flush=True)
            ROWS.write_bytes(gzip.compress(json.dumps(stored).encode()))
        results[name] = simulate(measure, stored[name], args.seeds, args.n)
        print(name, json.dumps(results[name]), flush=True)
    out = RESULTS / "review_coverage.json"
    previous = json.loads(out.read_text()) if out.exists() else {}
    previous.update({"seeds": args.seeds, "n": args.n, "date": time.strftime("%Y-%m-%d"),
                     "goal": "coverage >= 0.93, |mean bias| <= 0.02, mean width < labels alone (Wilson, 50 at random)",
                     "sets": {**previous.get("sets", {}), **results}})
    out.write_text(json.dumps(previous, indent=2) + "\n")


if __name__ == "__main__":
    main()
