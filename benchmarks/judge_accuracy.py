"""The judges' accuracy on hundreds of labelled rows: the figures the test suite measured until issue 43.

Each section computes the figure one test asserted over all its rows, with that test's bound, and says whether the
bound holds; the tests now check the real judge on a small fixed sample of the same rows (named in each section).

    python benchmarks/judge_accuracy.py [--only SECTION ...]

Sections (test they came from → what is measured):

* ``offline_heldout`` (test_judge_calibration): ``calibrate`` (as calibrate-judge fits) on 7/8 of the EVOUNA NQ + TQ
  questions, scored with the screen on the other eighth: accuracy ≥ 0.85, above keyword > 0.7, and within three
  binomial standard errors (plus the spread of the shipped file's folds) of the shipped file's CV accuracy.
* ``nonanswer_screen`` (test_nonanswer): the non-answer screen on every EVOUNA answer: rejects < 1% of the answers
  people marked correct, catches > 5% of those they marked incorrect.
* ``lexical_rules`` (test_judges_lexical): keyword > 0.7, containment and exact match against the labels of the
  first 600 NQ answers: keyword and containment in (0.75, 0.95), exact match < 0.5 < keyword.
* ``answer_relevance_controls`` (test_answer_relevance): judge-check's controls of answer_relevance on the first
  300 answerable questions of CLAPNQ, WixQA (held out), SQuAD 2.0 and EVOUNA NQ, each category at ≥ 95% (SQuAD's
  other_gold ≥ 0.93; NQ's other_gold < 0.5, reported apart; CLAPNQ/WixQA: no options control).
* ``answer_relevance_choice`` (test_answer_relevance): every EVOUNA answer judged correct to a question saying
  "or": ≥ 90% addressed (kind relevant).
* ``context_relevance_scifact`` (test_context_relevance): 12 seeded held-out SciFact claims, each with a qrels
  abstract and a random one: accepted ≥ 4/12, random rejected ≥ 11/12.
* ``context_relevance_multihop`` (test_context_relevance): both passages of the probe's 25 comparison and yes/no
  questions: ≥ 70% of the 50 relevant.
* ``faithfulness_bridge`` (test_faithfulness): the probe's 50 short answers to its 25 bridge questions: supported
  accepted ≥ 70%, unsupported rejected ≥ 40%, claims read across both passages ≥ 70% of the supported answers.
* ``faithfulness_copies_swaps`` (test_faithfulness): 10 seeded SQuAD 2.0 paragraphs, each with one of its sentences
  copied and the same sentence with a year or a name swapped for one the paragraph lacks: copied supported ≥ 9/10,
  swaps rejected ≥ 8/10.
* ``comparison_by_date`` (test_comparison): the probe's 16 short answers to its 8 comparisons by date through the
  faithfulness judge with the real checker: every verdict the label, decided by the rule.

The sole-source rule over every answerable SQuAD 2.0 question (no model call, under a second) stays whole in
test_context_relevance. The draw of copies and swaps and the held-out eighth are ``tests/judge_samples.py``'s, the
tests' own.

Verdicts of the embedded model go to the user's verdict store (``$EVALUATIONS_CACHE_DIR`` or the data home), the
offline judge's embeddings to its embedding cache: a re-run makes no model call. Writes
``benchmarks/results/judge_accuracy.json`` (the sections run are replaced, the others kept).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
# the tests' draws and split
from judge_samples import copies_and_swaps, offline_heldout_eighth, read_jsonl_gz, scifact_pairs  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
EVOUNA = SHARED / "evouna"
LABELS = ROOT / "datasets" / "labels"
OUT = ROOT / "benchmarks" / "results" / "judge_accuracy.json"


def _probe() -> list[dict]:
    path = LABELS / "multihop_faithfulness.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _scorer():
    from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, load_scorer

    return load_scorer(PASSAGE_SYSTEM)


def offline_heldout() -> dict:
    from evaluations.judging.labels.data import load_labelled

    split = offline_heldout_eighth(load_labelled(EVOUNA / "NQ.jsonl.gz") + load_labelled(EVOUNA / "TQ.jsonl.gz"))
    return {"train_answers": split.train, "test_answers": split.test, "test_questions": split.questions,
            "accuracy": split.accuracy, "keyword_accuracy": split.keyword, "shipped_cv_accuracy": split.cv_accuracy,
            "tolerance": split.tolerance,
            "bound": "accuracy >= 0.85, > keyword, |accuracy - shipped CV| <= 3 SE + fold spread",
            "passes": bool(split.accuracy >= 0.85 and split.accuracy > split.keyword
                           and abs(split.accuracy - split.cv_accuracy) <= split.tolerance)}


def nonanswer_screen() -> dict:
    from evaluations.judging.correctness.nonanswer import screen
    from evaluations.judging.validation.heldout import load_evouna

    rows = load_evouna(EVOUNA)
    correct = [e for e in rows if e.label]
    wrong = [e for e in rows if not e.label]
    false_rejections = sum(screen(e.question, e.references, e.answer).decided is False for e in correct)
    caught = sum(screen(e.question, e.references, e.answer).decided is False for e in wrong)
    return {"correct": len(correct), "wrong": len(wrong), "false_rejections": false_rejections,
            "false_rejection_rate": false_rejections / len(correct), "caught": caught,
            "caught_rate": caught / len(wrong), "bound": "false rejection rate < 0.01, caught rate > 0.05",
            "passes": bool(false_rejections / len(correct) < 0.01 and caught / len(wrong) > 0.05)}


def lexical_rules() -> dict:
    from evaluations.judging.correctness import lexical
    from evaluations.judging.labels.data import load_labelled

    rows = load_labelled(EVOUNA / "NQ.jsonl.gz", limit=600)
    rules = {"keyword": lexical.keyword_correct, "em": lexical.exact_match, "containment": lexical.containment}
    acc = {name: sum(rule(e.references, e.answer) == e.label for e in rows) / len(rows) for name, rule in rules.items()}
    return {"rows": len(rows), "accuracy": acc,
            "bound": "0.75 < keyword < 0.95, 0.75 < containment < 0.95, em < 0.5 < keyword",
            "passes": bool(0.75 < acc["keyword"] < 0.95 and 0.75 < acc["containment"] < 0.95
                           and acc["em"] < 0.5 < acc["keyword"])}


def answer_relevance_controls() -> dict:
    from evaluations.judging.labels.questions import load_questions
    from evaluations.judging.validation.agreement import JUDGES
    from evaluations.judging.validation.controls import CATEGORIES, build_controls, run_controls

    files = {"clapnq": ("clapnq_dev/clapnq_dev_answerable.jsonl.gz", 290),
             "wixqa": ("wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz", 150),
             "squad2": ("squad2_dev_cs224n/questions.jsonl.gz", 250),
             "evouna_nq": ("evouna/NQ.jsonl.gz", 250)}
    out, passes = {}, True
    for name, (file, n_min) in files.items():
        items = load_questions(SHARED / file, limit=300)
        report = run_controls(build_controls(items), {"answer_relevance": JUDGES["answer_relevance"](0.0)})
        rates = {r.category: {"rate": r.rate, "n": r.n} for r in report.judges["answer_relevance"]}
        ok = True
        for category in CATEGORIES:
            rate, n = rates[category]["rate"], rates[category]["n"]
            if name in ("clapnq", "wixqa") and category == "options":
                ok &= n == 0
            elif name == "evouna_nq" and category == "other_gold":
                ok &= rate < 0.5
            else:
                ok &= n >= n_min and rate >= (0.93 if (name, category) == ("squad2", "other_gold") else 0.95)
        out[name] = {"file": file, "rates": rates, "passes": bool(ok)}
        passes &= ok
    return {"files": out, "bound": "every category >= 0.95 of >= n_min controls (SQuAD other_gold >= 0.93; "
                                   "NQ other_gold < 0.5; CLAPNQ/WixQA: no options control)", "passes": bool(passes)}


def answer_relevance_choice() -> dict:
    from evaluations.judging.grounded.answer_relevance import answer_relevance

    rows = []
    for name in ("NQ", "TQ"):
        for row in read_jsonl_gz(EVOUNA / f"{name}.jsonl.gz"):
            if row.get("improper") or not re.search(r"\bor\b", row["question"]):
                continue
            rows += [(row["question"], row[f"answer_{m}"]) for m in ("fid", "gpt35", "chatgpt", "gpt4", "newbing")
                     if row.get(f"answer_{m}") and row.get(f"judge_{m}") is True]
    rejected = [(q, a, kind) for q, a in rows if (kind := answer_relevance(q, a).kind) != "relevant"]
    rate = 1 - len(rejected) / len(rows)
    return {"answers": len(rows), "relevant_rate": rate, "bound": ">= 250 answers, relevant rate >= 0.90",
            "passes": bool(len(rows) >= 250 and rate >= 0.90)}


def context_relevance_scifact(questions: int = 12) -> dict:
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.context_relevance import judge_context_relevance, params

    cache, fitted = VerdictCache(), params()
    accepted = rejected = 0
    for claim, passages, expected in scifact_pairs(questions):  # the test's draw
        verdict = judge_context_relevance(claim, passages, cache=cache)
        for chunk, relevant in zip(verdict.chunks, expected):
            flag = chunk.p >= fitted.threshold
            accepted += relevant and flag
            rejected += (not relevant) and not flag
    return {"claims": questions, "qrels_accepted": accepted, "random_rejected": rejected,
            "bound": f"accepted >= 4/12 of {questions}, random rejected >= 11/12 of {questions}",
            "passes": bool(accepted / questions >= 4 / 12 and rejected / questions >= 11 / 12)}


def context_relevance_multihop() -> dict:
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.context_relevance import judge_context_relevance

    questions = {r["query"]: r["context"] for r in _probe() if r["type"] in ("comparison", "polar")}
    cache = VerdictCache()
    chunks = [c for q, texts in questions.items()
              for c in judge_context_relevance(q, [Passage(id=f"p{i}", text=t) for i, t in enumerate(texts)],
                                               cache=cache).chunks]
    relevant = sum(c.relevant for c in chunks)
    return {"questions": len(questions), "passages": len(chunks), "relevant": relevant,
            "sole_source": sum(c.sole_source for c in chunks), "bound": "relevant >= 0.7 of the passages",
            "passes": bool(relevant >= 0.7 * len(chunks))}


def faithfulness_bridge() -> dict:
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.faithfulness import judge_faithfulness

    rows = [r for r in _probe() if r["type"] == "bridge" and r["form"] == "short"]
    cache, scorer = VerdictCache(), _scorer()
    verdicts = {r["id"]: judge_faithfulness(r["query"], r["generated_answer"],
                                            [Passage(id=f"p{i}", text=t) for i, t in enumerate(r["context"])],
                                            cache=cache, scorer=scorer) for r in rows}
    supported = [r for r in rows if r["label"]]
    accepted = [r["id"] for r in supported if verdicts[r["id"]].score == 1.0]
    rejected = [r["id"] for r in rows if not r["label"] and verdicts[r["id"]].score == 0.0]
    named = [{c.passage, c.bridge} for r in supported for c in verdicts[r["id"]].claims if c.bridge]
    n = len(supported)
    return {"rows": len(rows), "supported": n, "unsupported": len(rows) - n, "accepted": len(accepted),
            "rejected": len(rejected), "claims_read_across": len(named),
            "all_applicable": all(v.applicable for v in verdicts.values()),
            "accepted_ids": accepted, "rejected_ids": rejected,
            "bound": "accepted >= 0.7 x 25, rejected >= 0.4 x 25, claims read across both passages >= 0.7 x 25",
            "passes": bool(len(accepted) >= 0.7 * n and len(rejected) >= 0.4 * (len(rows) - n)
                           and len(named) >= 0.7 * n and all(pair == {"p0", "p1"} for pair in named))}


def faithfulness_copies_swaps(pairs: int = 10) -> dict:
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.faithfulness import judge_faithfulness

    cache, scorer = VerdictCache(), _scorer()
    drawn = copies_and_swaps(pairs)
    copied = [judge_faithfulness("", s, [Passage(id="p", text=p)], cache=cache, scorer=scorer) for p, s, _ in drawn]
    swapped = [judge_faithfulness("", w, [Passage(id="p", text=p)], cache=cache, scorer=scorer) for p, _, w in drawn]
    supported = sum(v.applicable and v.score == 1.0 for v in copied)
    rejected = sum(v.applicable and v.score < 0.5 and not v.claims[0].supported for v in swapped)
    return {"pairs": pairs, "copied_supported": supported, "swaps_rejected": rejected,
            "copied_supported_by_pair": [v.applicable and v.score == 1.0 for v in copied],
            "swaps_rejected_by_pair": [v.applicable and v.score < 0.5 and not v.claims[0].supported for v in swapped],
            "bound": "copied supported >= 0.9, swaps rejected >= 0.8 of the pairs",
            "passes": bool(supported >= 0.9 * pairs and rejected >= 0.8 * pairs
                           and all(len(v.claims) == 1 for v in copied + swapped))}


def comparison_by_date() -> dict:
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.comparison import resolve
    from evaluations.judging.grounded.faithfulness import judge_faithfulness

    rows = [r for r in _probe() if r["type"] == "comparison" and r["form"] == "short"
            and resolve(r["query"], r["context"]) is not None]
    cache, scorer = VerdictCache(), _scorer()
    right = 0
    for row in rows:
        verdict = judge_faithfulness(row["query"], row["generated_answer"],
                                     [Passage(id=f"p{i}", text=t) for i, t in enumerate(row["context"])],
                                     cache=cache, scorer=scorer)
        right += bool(verdict.applicable and verdict.score == float(row["label"]) and all(
            c.rule and c.rule.startswith("compared by date") for c in verdict.claims))
    return {"rows": len(rows), "right_and_decided_by_the_rule": right, "bound": "every row",
            "passes": right == len(rows) == 16}


SECTIONS = {f.__name__: f for f in (offline_heldout, nonanswer_screen, lexical_rules, answer_relevance_controls,
                                    answer_relevance_choice, context_relevance_scifact, context_relevance_multihop,
                                    faithfulness_bridge, faithfulness_copies_swaps,
                                    comparison_by_date)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(SECTIONS), help="sections to run (default: all)")
    args = parser.parse_args(argv)
    results = json.loads(OUT.read_text()) if OUT.is_file() else {}
    results.setdefault("sections", {})
    for name in args.only or SECTIONS:
        t0 = time.perf_counter()
        section = SECTIONS[name]()
        section["seconds"] = round(time.perf_counter() - t0, 1)
        section["load_average_1min"] = round(os.getloadavg()[0], 2)
        section["date"] = dt.date.today().isoformat()
        results["sections"][name] = section
        print(f"{name}: {'PASS' if section['passes'] else 'FAIL'} "
              f"{json.dumps({k: v for k, v in section.items() if not k.endswith('_ids')}, default=str)[:600]}",
              flush=True)
        OUT.write_text(json.dumps(results, indent=2, default=float) + "\n")
    return 0 if all(s["passes"] for s in results["sections"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
