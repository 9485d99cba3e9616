"""Answer relevance and context relevance on data nobody here wrote their rules from (issue 44).

    python benchmarks/relevance_outside.py SECTION [--split SPLIT] [--n N] [--start I] [--no-cache]

Sections:

* ``context_multihop``: ``datasets/multihop/{split}.jsonl.gz`` (HotpotQA questions through HaluEval, built by
  ``scripts/build_multihop_sets.py``): each question's retrieved set of 10 passages, 2 needed (HotpotQA's
  supporting paragraphs, labelled by people) and 8 hard distractors (TF-IDF neighbours of the question). The judge
  reads each whole set as a run would (``judge_context_relevance``); reported per passage: balanced accuracy against
  "needed", recall (needed passages called relevant), specificity (distractors called not relevant), seconds and
  model calls per passage; beside it a word-overlap baseline (a passage is needed when at least half of the
  question's informative terms occur in it). Goal (issue 44): balanced accuracy ≥ 0.85, ≤ 0.5 s a passage.
  With ``--config FILE`` (its ``judge.model`` a served model) the sets are judged through that checker, in the
  conversation form a served checker asks in (``judges/context_relevance_served.json``), kept as
  ``context_multihop:{split}:served``.
* ``answer_controls``: ``datasets/relevance/answers_{split}.jsonl.gz`` (answers the embedded Qwen models wrote to
  the same questions, ``scripts/write_relevance_controls.py``) with their labels read under the rubric
  (``labels_{split}.jsonl``), each judged with its question's two supporting passages as the context: per kind and
  label, the share the judge rejects (labelled not relevant) or accepts (labelled relevant), with Wilson 95%
  intervals. Goal: ≥ 0.95 each. The judge is the shipped one (``judge_answer_relevance``: the rules, then the naming
  screen on the embedded model and its probe, its P(answers) in the user's verdict store); ``--rules-only`` the rules
  alone (the entry's key then ends in ``:rules``; the entries before 2026-12-05 are the rules alone and are kept so).
  The probe was fitted on some splits (``scripts/fit_answer_probe.py``): their figures here are in-sample; the
  file ``judges/answer_relevance_probe.json`` holds each one's figure when left out of the fit.
* ``run_without_labels``: two systems over the multi-hop sets judged for answer relevance as a run without labels
  would be: one answers with the first sentence of a needed passage (its context the set), one is given 5 random
  passages of other questions and answers with the first sentence of one. Goal: random ≤ 0.10, top ≥ 0.80.
* ``scifact_p5``: SciFact test claims (``../shared/data/scifact``), each with its top 5 abstracts by TF-IDF over the
  whole corpus: the mean context precision@5 the judge gives against the mean P@5 the qrels give. Goal: within 0.1.
* ``fit_claim_threshold`` (design only): the threshold of a query that asks nothing, chosen on the read SciFact
  design pairs and written into ``judges/context_relevance.json``.
* ``scifact_read`` (design only): the pairs of those top 5s read under the rubric
  (``datasets/relevance/scifact_top5_read.jsonl``, ``SCIFACT_READ.md``): the judge and the qrels each against
  reading, and precision@5 by reading (strata weighted by size): are the qrels or the judge off?

The held-out splits are for reporting only: no rule or parameter is chosen by reading them (for answer relevance
``heldout4``, answers to the multi-hop design questions 160-219 that nothing had used, unread; ``heldout3``, answers
to held-out questions 250-299, read once; ``heldout`` and ``heldout2`` were read after rules changed and are design
material since). Verdicts go through the
user's verdict store (a re-run makes no model call). Writes ``benchmarks/results/relevance_outside.json`` (the entry
of the section and split run is replaced, the others kept).
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from judge_samples import SCIFACT, SHARED, read_jsonl_gz, scifact_qrels  # noqa: E402  (the tests' shared-data readers)

RESULTS = ROOT / "benchmarks" / "results" / "relevance_outside.json"


def _wilson(k: int, n: int) -> list[float | None]:
    from evaluations.judging.validation.agreement import wilson

    return [round(x, 4) for x in wilson(k, n)] if n else [None, None]


def _overlap(question: str, passage: str) -> bool:
    from evaluations.judging.grounded.context_relevance import features

    return features(question, passage, 0.5)[1] >= 0.5


def _scorer(config: str | None) -> Any:
    """The checker of ``--config``'s ``judge.model`` when it is served (``served_tools``: the conversation form),
    else None (the embedded model)."""
    if config is None:
        return None
    from evaluations.core.config import load_config
    from evaluations.judging.checkers.served_checker import served_tools

    return served_tools(load_config(Path(config)), "context_relevance")[0]


def context_multihop(split: str, n: int, config: str | None = None, *, fresh: bool = False, start: int = 0) -> dict:
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.context_relevance import judge_context_relevance

    sets = read_jsonl_gz(ROOT / "datasets" / "multihop" / f"{split}.jsonl.gz")[start:start + n]
    cache, scorer = (None if fresh else VerdictCache()), _scorer(config)
    counts = {"tp": 0, "fn": 0, "tn": 0, "fp": 0}
    base = dict(counts)
    calls, started = 0, time.perf_counter()
    for i, s in enumerate(sets, 1):
        verdict = judge_context_relevance(s["question"], [Passage(id=p["id"], text=p["text"]) for p in s["passages"]],
                                          cache=cache, scorer=scorer)
        calls += verdict.model_calls
        for p, chunk in zip(s["passages"], verdict.chunks):
            for tally, said in ((counts, chunk.relevant), (base, _overlap(s["question"], p["text"]))):
                tally[("t" if said == p["needed"] else "f") + ("p" if said else "n")] += 1
        print(f"\r{i}/{len(sets)} sets", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    seconds = time.perf_counter() - started
    passages = sum(len(s["passages"]) for s in sets)

    def scores(t: dict) -> dict:
        recall = t["tp"] / (t["tp"] + t["fn"])
        specificity = t["tn"] / (t["tn"] + t["fp"])
        return {"balanced_accuracy": round((recall + specificity) / 2, 4), "recall": round(recall, 4),
                "recall_ci95": _wilson(t["tp"], t["tp"] + t["fn"]), "specificity": round(specificity, 4),
                "specificity_ci95": _wilson(t["tn"], t["tn"] + t["fp"]), **t}

    return {"sets": len(sets), "passages": passages, "judge": scores(counts), "word_overlap": scores(base),
            "seconds_per_passage": round(seconds / passages, 3), "model_calls": calls,
            "verdicts": "asked afresh (--no-cache)" if fresh else "through the verdict store",
            "goal": "balanced accuracy >= 0.85 at <= 0.5 s a passage"}


def labelled_answers(split: str, n: int) -> tuple[list[str], list[dict]]:
    """The first ``n`` questions of ``datasets/relevance/answers_{split}.jsonl.gz`` and their labelled answers, each
    row with its ``label`` from ``labels_{split}.jsonl`` (answers without a label left out)."""
    folder = ROOT / "datasets" / "relevance"
    labels = {row["id"]: row["label"] for row in map(json.loads, (folder / f"labels_{split}.jsonl").open())}
    rows = [r | {"label": labels[r["id"]]} for r in read_jsonl_gz(folder / f"answers_{split}.jsonl.gz")
            if r["id"] in labels]
    questions = list(dict.fromkeys(r["question"] for r in rows))[:n]
    keep = set(questions)
    return questions, [r for r in rows if r["question"] in keep]


def _judge(cases: list[tuple[str, str, str, bool]], rules_only: bool) -> list:
    """The shipped answer-relevance judge (the rules, then the naming screen, its P(answers) in the user's verdict
    store), or with ``rules_only`` the rules alone."""
    from evaluations.judging.correctness.embedded import verdict_cache
    from evaluations.judging.grounded.answer_relevance import judge_answer_relevance
    from evaluations.judging.grounded.naming import Naming

    return judge_answer_relevance(cases, None if rules_only else Naming(cache=verdict_cache(True)))


def answer_controls(split: str, n: int, rules_only: bool = False) -> dict:
    questions, rows = labelled_answers(split, n)
    started = time.perf_counter()
    verdicts = _judge([(r["question"], r["answer"], "\n\n".join(r["context"]), True) for r in rows], rules_only)
    kinds: dict[str, dict] = {}  # (kind, label) -> how often the judge agreed: the kinds as labelled, not as asked
    for r, v in zip(rows, verdicts):
        name = f"{r['kind']}:{'relevant' if r['label'] else 'not_relevant'}"
        k = kinds.setdefault(name, {"n": 0, "right": 0, "said": {}})
        k["n"] += 1
        k["right"] += v.verdict == r["label"]
        k["said"][v.kind] = k["said"].get(v.kind, 0) + 1
    for name, k in kinds.items():
        k["rate"] = round(k["right"] / k["n"], 4)
        k["ci95"] = _wilson(k["right"], k["n"])
        k["measures"] = "accepted" if name.endswith(":relevant") else "rejected"
    agree = sum(k["right"] for k in kinds.values())
    return {"questions": len(questions), "answers": len(rows), "accuracy": round(agree / len(rows), 4),
            "kinds": dict(sorted(kinds.items())),
            "seconds": round(time.perf_counter() - started, 1), "goal": ">= 0.95 of each kind"}


def scifact_p5(split: str, n: int, start: int = 0) -> dict:
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.context_relevance import judge_context_relevance

    texts, _, _ = _scifact_index()
    queries = {q["_id"]: q["text"] for q in read_jsonl_gz(SCIFACT / "queries.jsonl.gz")}
    qrels = scifact_qrels()
    # design: the first half of the test claims in file order, held out: the second half
    ids = sorted(qrels, key=int)
    ids = ids[:len(ids) // 2] if split == "design" else ids[len(ids) // 2:]
    ids = ids[start:start + n]
    cache = VerdictCache()
    qrels_p5, judged_p5, calls, started = [], [], 0, time.perf_counter()
    for i, qid in enumerate(ids, 1):
        top = _scifact_top5(queries[qid])
        qrels_p5.append(sum(doc in qrels[qid] for doc in top) / 5)
        verdict = judge_context_relevance(queries[qid], [Passage(id=doc, text=texts[doc]) for doc in top], cache=cache)
        judged_p5.append(verdict.score)
        calls += verdict.model_calls
        print(f"\r{i}/{len(ids)} claims", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    mean_q, mean_j = sum(qrels_p5) / len(ids), sum(judged_p5) / len(ids)
    return {"claims": len(ids), "qrels_p_at_5": round(mean_q, 4), "judged_precision_at_5": round(mean_j, 4),
            "difference": round(mean_j - mean_q, 4), "model_calls": calls,
            "seconds_per_passage": round((time.perf_counter() - started) / (5 * len(ids)), 3),
            "goal": "|difference| <= 0.1"}


@functools.lru_cache(maxsize=1)
def _scifact_index() -> tuple[dict[str, str], Any, Any]:
    """SciFact's abstracts as the judge reads them (id -> "title. text", in corpus order), and a TF-IDF over them
    (word unigrams, sublinear tf, English stopwords out): (texts, vectoriser, matrix), built once."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = {d["_id"]: f"{d.get('title', '')}. {d['text']}".strip(". ") for d in read_jsonl_gz(SCIFACT / "corpus.jsonl.gz")}
    vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    return texts, vectorizer, vectorizer.fit_transform(list(texts.values()))


def _scifact_top5(claim: str) -> list[str]:
    """The claim's top 5 abstract ids by TF-IDF over the whole corpus (``_scifact_index``)."""
    texts, vectorizer, matrix = _scifact_index()
    ids = list(texts)
    scores = (matrix @ vectorizer.transform([claim]).T).toarray().ravel()
    return [ids[j] for j in scores.argsort()[::-1][:5]]


def _read_pairs(params: Any = None) -> tuple[list[dict], dict[tuple[str, str], Any], int]:
    """The read SciFact design pairs (``scifact_top5_read.jsonl``), each claim's whole top 5 judged as
    ``scifact_p5`` judges it (``params``: other fitted parameters): (rows, (claim id, doc id) -> chunk verdict,
    model calls)."""
    from evaluations.judging.basics.passages import Passage
    from evaluations.judging.correctness.embedded import VerdictCache
    from evaluations.judging.grounded.context_relevance import judge_context_relevance

    rows = [json.loads(line) for line in (ROOT / "datasets" / "relevance" / "scifact_top5_read.jsonl").open()]
    texts, _, _ = _scifact_index()
    queries = {q["_id"]: q["text"] for q in read_jsonl_gz(SCIFACT / "queries.jsonl.gz")}
    cache, calls, chunks = VerdictCache(), 0, {}
    for qid in dict.fromkeys(r["claim_id"] for r in rows):
        docs = _scifact_top5(queries[qid])
        verdict = judge_context_relevance(queries[qid], [Passage(id=d, text=texts[d]) for d in docs], cache=cache,
                                          params=params)
        calls += verdict.model_calls
        chunks |= {(qid, c.id): c for c in verdict.chunks}
    return rows, chunks, calls


def scifact_read(split: str, n: int) -> dict:
    """The SciFact top-5 pairs read under the rubric (``datasets/relevance/scifact_top5_read.jsonl``, design claims
    only): the judge's and the qrels' agreement with reading on the pairs read, and precision@5 by reading over the
    design claims' 300 pairs, each stratum weighted by its size (the estimate of a stratified sample)."""
    if split != "design":
        raise SystemExit("scifact_read: only design claims were read")
    rows, chunks, calls = _read_pairs()
    judged = {pair: c.relevant for pair, c in chunks.items()}
    qrels = scifact_qrels()

    def agreement(said: list[bool], read: list[bool]) -> dict:
        tp = sum(s and r for s, r in zip(said, read))
        fp = sum(s and not r for s, r in zip(said, read))
        fn = sum(r and not s for s, r in zip(said, read))
        return {"precision": round(tp / (tp + fp), 4) if tp + fp else None,
                "recall": round(tp / (tp + fn), 4) if tp + fn else None, "tp": tp, "fp": fp, "fn": fn}

    read = [r["label"] for r in rows]
    strata: dict[str, dict] = {}
    for r in rows:
        s = strata.setdefault(r["stratum"], {"size": r["stratum_size"], "read": 0, "relevant": 0})
        s["read"] += 1
        s["relevant"] += r["label"]
    estimate = sum(s["size"] * s["relevant"] / s["read"] for s in strata.values())
    total = sum(s["size"] for s in strata.values())
    return {"pairs_read": len(rows), "strata": strata, "model_calls": calls,
            "judge_vs_reading": agreement([judged[(r["claim_id"], r["doc_id"])] for r in rows], read),
            "qrels_vs_reading": agreement([r["doc_id"] in qrels[r["claim_id"]] for r in rows], read),
            "p_at_5_by_reading": round(estimate / total, 4),
            "note": "agreement is over the pairs read (a stratified sample, not the 300): compare the judge with the "
                    "qrels on it, not with other sets"}


def fit_claim_threshold(split: str, n: int) -> dict:
    """The threshold of a query that asks nothing (``ContextParams.claim_threshold``), chosen on the read SciFact
    design pairs (``scifact_top5_read.jsonl``): each pair's P(relevant) from the passage model, then the threshold
    (0.40 to 0.98 by 0.01) of the highest balanced accuracy against reading, each stratum weighted by its size (ties:
    the lowest). Written into ``judges/context_relevance.json``; held-out claims only report (``scifact_p5``)."""
    import numpy as np

    from evaluations.judging.grounded.context_relevance import PARAMS_FILE, params

    if split != "design":
        raise SystemExit("fit_claim_threshold: only the design pairs were read")
    passage_model = params().model_copy(update={"claim_threshold": None})
    rows, chunks, _ = _read_pairs(passage_model)
    p = {pair: c.p for pair, c in chunks.items()}
    weight = {r["stratum"]: r["stratum_size"] / sum(x["stratum"] == r["stratum"] for x in rows) for r in rows}
    said = np.array([p[(r["claim_id"], r["doc_id"])] for r in rows])
    read, w = np.array([r["label"] for r in rows]), np.array([weight[r["stratum"]] for r in rows])

    def balanced(t: float) -> float:
        yes = said >= t
        return float((w[yes & read].sum() / w[read].sum() + w[~yes & ~read].sum() / w[~read].sum()) / 2)

    grid = [round(t, 2) for t in np.arange(0.40, 0.985, 0.01)]
    scores = {t: balanced(t) for t in grid}
    best = max(grid, key=lambda t: (round(scores[t], 6), -t))
    path = ROOT / "judges" / PARAMS_FILE
    doc = json.loads(path.read_text())
    doc["params"]["claim_threshold"] = best
    doc["claim_threshold"] = {
        "what": "the threshold of a query that asks nothing (a claim to check, keywords: question_forms.asks)",
        "data": "datasets/relevance/scifact_top5_read.jsonl (108 SciFact design pairs read under the rubric)",
        "rule": "highest stratum-weighted balanced accuracy against reading, thresholds 0.40-0.98 by 0.01",
        "balanced_accuracy": round(scores[best], 4), "at_threshold": round(balanced(passage_model.threshold), 4)}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return {"pairs": len(rows), "claim_threshold": best, "balanced_accuracy": round(scores[best], 4),
            "at_the_passage_threshold": {"threshold": passage_model.threshold,
                                         "balanced_accuracy": round(balanced(passage_model.threshold), 4)},
            "curve": {str(t): round(v, 4) for t, v in scores.items()}}


def copied_sentences(s: dict) -> dict[str, str]:
    """The sentences a system answering from a multi-hop set's needed passages copies (the kinds of
    ``answers_toppassage*``, ``scripts/writer_sheets.py extracted``): ``first_sentence_a`` and ``first_sentence_b``,
    the first sentence of the first and of the last needed passage, and ``gold_sentence``, the first sentence of
    them that holds the gold answer (left out when none does)."""
    from evaluations.judging.grounded.claims import sentences

    needed = [p["text"] for p in s["passages"] if p["needed"]]
    out = {"first_sentence_a": sentences(needed[0])[0], "first_sentence_b": sentences(needed[-1])[0]}
    holding = [c for text in needed for c in sentences(text) if s["answer"].lower() in c.lower()]
    if holding:
        out["gold_sentence"] = holding[0]
    return out


def run_without_labels(split: str, n: int, start: int = 0, rules_only: bool = False) -> dict:
    """Three systems over the multi-hop sets, judged as a run without labels would judge them (question, answer,
    the context the system was given; ``copied_sentences``): ``top_passage`` answers with the first sentence of the
    first needed passage, its context the set; ``answer_sentence`` with the first sentence of the needed passages
    that holds the gold answer (a system that found the answer in what it retrieved; questions without such a
    sentence left out);
    ``random_documents`` is given 5 passages of other questions (seeded) and answers with the first sentence of one.
    Mean answer relevance of each; goal: random ≤ 0.10, top passage ≥ 0.80. A first sentence is cut as
    ``claims.sentences`` cuts (not after an initial or an abbreviation); until 2026-12-04 it was cut after any
    period, which made bare fragments of some ("Russell P.", "U.S.", "The Lorax (also known as Dr.").

    The held-out split's first sentences are labelled (``datasets/relevance/labels_toppassage.jsonl``, questions
    0-149, and ``labels_toppassage2.jsonl``, 150-299; read blind
    under the rubric; 2026-12-06): ``top_passage`` then also gives the share labelled relevant and the judge's
    agreement with those labels. A first sentence of a needed passage often answers nothing asked (a bridge
    entity's nationality and occupation to the year of a film), so its share relevant is the truth a judge's
    figure is to be read against."""
    import random

    from evaluations.judging.grounded.claims import sentences

    sets = read_jsonl_gz(ROOT / "datasets" / "multihop" / f"{split}.jsonl.gz")
    labels = {row["id"]: row["label"] for name in ("toppassage", "toppassage2") if split == "heldout"
              for row in map(json.loads, (ROOT / "datasets" / "relevance" / f"labels_{name}.jsonl").open())}
    rng = random.Random(44)
    top, rand, holding, truth = [], [], [], []
    for i in range(start, min(start + n, len(sets))):
        s = sets[i]
        context, copied = "\n\n".join(p["text"] for p in s["passages"]), copied_sentences(s)
        top.append((s["question"], copied["first_sentence_a"], context, True))
        truth.append(labels.get(f"{s['id']}:first_sentence_a"))
        if "gold_sentence" in copied:
            holding.append((s["question"], copied["gold_sentence"], context, True))
        others = [sets[j]["passages"][rng.randrange(10)]["text"] for j in rng.sample(
            [j for j in range(len(sets)) if j != i], 5)]
        rand.append((s["question"], sentences(others[0])[0], "\n\n".join(others), True))
    started = time.perf_counter()
    out: dict[str, Any] = {}
    for name, cases in (("top_passage", top), ("answer_sentence", holding), ("random_documents", rand)):
        verdicts = _judge(cases, rules_only)
        kinds: dict[str, int] = {}
        for v in verdicts:
            kinds[v.kind] = kinds.get(v.kind, 0) + 1
        k = sum(v.verdict for v in verdicts)
        out[name] = {"answers": len(cases), "relevance": round(k / len(cases), 4), "ci95": _wilson(k, len(cases)),
                     "kinds": dict(sorted(kinds.items()))}
        if name == "top_passage" and None not in truth:
            right = sum(v.verdict == t for v, t in zip(verdicts, truth))
            out[name] |= {"labelled_relevant": round(sum(truth) / len(truth), 4),
                          "labelled_ci95": _wilson(sum(truth), len(truth)),
                          "agreement_with_labels": round(right / len(truth), 4),
                          "accepted_of_labelled_relevant": round(sum(
                              v.verdict for v, t in zip(verdicts, truth) if t) / max(1, sum(truth)), 4),
                          "rejected_of_labelled_not": round(sum(
                              not v.verdict for v, t in zip(verdicts, truth) if not t) / max(1, len(truth) - sum(
                                  truth)), 4)}
    return out | {"seconds": round(time.perf_counter() - started, 1),
                  "goal": "random_documents <= 0.10, top_passage >= 0.80 (read beside its labelled share)"}


GOLD_FORMS = ("gold_bare", "gold_sentence", "gold_after_question", "gold_detail", "paraphrase")
SUPPORT_FILES = {"techqa": "techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz",
                 "wixqa": "wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz"}


def judge_check_golds(split: str, n: int) -> dict:
    """judge-check's gold controls (``GOLD_FORMS``, its first ``n`` questions, seed 0) of a support file (``split``:
    techqa or wixqa), scored against two readers' labels of each bare gold (``datasets/relevance/
    judge_check_golds.jsonl``): judge-check counts every gold as an answer, and some do not answer what is asked.
    A form takes its gold's labels. Acceptance by form over the golds both readers call answers, and over the rest."""
    from evaluations.cli.judge_check import controls_for
    from evaluations.judging.labels.read import read_questions

    file = SUPPORT_FILES[split]
    labels = {}
    for row in map(json.loads, (ROOT / "datasets" / "relevance" / "judge_check_golds.jsonl").open()):
        if row["file"] == file:
            labels[row["group"]] = tuple(row["labels"].values())
    _, controls = controls_for(read_questions([str(SHARED / file)]), n, 0)
    golds = [c for c in controls if c.category in GOLD_FORMS]
    started = time.perf_counter()
    verdicts = _judge([(c.answer.question, c.answer.answer, c.answer.context, True) for c in golds], False)
    forms: dict[str, dict] = {}
    for c, v in zip(golds, verdicts):
        read = labels[c.answer.group.split("::", 1)[-1]]
        side = "both_relevant" if all(read) else "not_both_relevant"
        k = forms.setdefault(c.category, {}).setdefault(side, {"n": 0, "accepted": 0})
        k["n"] += 1
        k["accepted"] += bool(v.verdict)
    for by_side in forms.values():
        for k in by_side.values():
            k["rate"] = round(k["accepted"] / k["n"], 4)
            k["ci95"] = _wilson(k["accepted"], k["n"])
    agree = sum(a == b for a, b in labels.values())
    return {"questions": len(labels), "readers_agree": agree, "both_relevant": sum(all(v) for v in labels.values()),
            "forms": forms, "seconds": round(time.perf_counter() - started, 1),
            "goal": ">= 0.95 of the golds both readers call answers, each form"}

SECTIONS = {"context_multihop": context_multihop, "answer_controls": answer_controls, "scifact_p5": scifact_p5,
            "scifact_read": scifact_read, "run_without_labels": run_without_labels,
            "fit_claim_threshold": fit_claim_threshold, "judge_check_golds": judge_check_golds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("section", choices=sorted(SECTIONS))
    splits = ("design", *(f"heldout{n}" for n in ("", 2, 3, 4, 5, 6)), "clapnq", "clapnq2", "clapnq3", "clapnq4",
              "writers", *(f"writers{n}" for n in range(2, 12)), "long", "long2", "long3", "tech", "toppassage",
              "toppassage2", *SUPPORT_FILES)
    parser.add_argument("--split", choices=splits,
                        default="design",
                        help="heldout2-6, clapnq: answer_controls only (answers to held-out questions 150-249, "
                             "250-299, to design questions 160-219, 220-279 and 280-299 nothing had used, and to "
                             "CLAPNQ questions 200-259, 0-59, 60-119 and 120-179; writers, writers2 … writers11: "
                             "answers written by helper agents, not by the embedded models; long, long2, long3: long "
                             "replies written by helper agents, LONG_BRIEF.md; tech: judge-check's controls to unused "
                             "TechQA and WixQA questions; toppassage, toppassage2: sentences copied from the needed "
                             "passages of held-out multi-hop questions 0-149 and 150-299, labelled); "
                             "judge_check_golds --split techqa / wixqa: judge-check's gold controls of that file; "
                             "context_multihop --split "
                             "heldout2 / heldout3 / heldout4 / heldout5: the 100 multi-hop sets of "
                             "datasets/multihop/heldout2.jsonl.gz (built 2026-12-04) / heldout3.jsonl.gz / "
                             "heldout4.jsonl.gz / heldout5.jsonl.gz (built 2026-12-05)")
    parser.add_argument("--n", type=int, default=30, help="sets / questions / claims to take")
    parser.add_argument("--start", type=int, default=0,
                        help="context_multihop, run_without_labels, scifact_p5: the first set / question / claim to "
                             "take (a later range of a split is a fresh sample when the earlier ones have been read)")
    parser.add_argument("--config", help="context_multihop: a config whose judge.model is a served checker (the "
                                         "conversation form); the result is kept under its own key")
    parser.add_argument("--rules-only", action="store_true",
                        help="answer_controls, run_without_labels: the answer-relevance rules without the naming "
                             "screen (kept under the key's ':rules')")
    parser.add_argument("--no-cache", action="store_true",
                        help="context_multihop: ask every passage afresh (no verdict store), to time the judge")
    args = parser.parse_args()
    if (args.config or args.no_cache) and args.section != "context_multihop":
        parser.error("--config and --no-cache are for context_multihop")
    if args.rules_only and args.section not in ("answer_controls", "run_without_labels"):
        parser.error("--rules-only is for answer_controls and run_without_labels")
    if args.start and args.section not in ("context_multihop", "run_without_labels", "scifact_p5"):
        parser.error("--start is for context_multihop, run_without_labels and scifact_p5")
    multihop = ("design", "heldout", "heldout2", "heldout3", "heldout4", "heldout5")
    if (args.split in SUPPORT_FILES) != (args.section == "judge_check_golds"):
        parser.error("judge_check_golds takes --split techqa or wixqa, and only it does")
    if args.split not in multihop and args.section not in ("answer_controls", "judge_check_golds"):
        parser.error(f"--split {args.split} holds labelled answers only: it is for answer_controls")
    if args.split in multihop[2:] and args.section not in ("answer_controls", "context_multihop"):
        parser.error(f"--split {args.split} is labelled answers (answer_controls) and multi-hop sets "
                     "(context_multihop)")
    result = (context_multihop(args.split, args.n, args.config, fresh=args.no_cache, start=args.start)
              if args.section == "context_multihop"
              else run_without_labels(args.split, args.n, args.start, args.rules_only)
              if args.section == "run_without_labels"
              else scifact_p5(args.split, args.n, args.start) if args.section == "scifact_p5"
              else answer_controls(args.split, args.n, args.rules_only) if args.section == "answer_controls"
              else SECTIONS[args.section](args.split, args.n))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    result |= {"split": args.split, **({"start": args.start} if args.start else {}), "commit": commit.strip(),
               "date": dt.date.today().isoformat()}
    doc = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.config:
        from evaluations.core.config import load_config

        result["checker"] = f"{load_config(Path(args.config)).judge.model.provider}:" \
                            f"{load_config(Path(args.config)).judge.model.name}"
    doc[f"{args.section}:{args.split}" + (f"@{args.start}" if args.start else "") + (":served" if args.config else "")
        + (":timing" if args.no_cache else "")  # a timing run leaves the split's read in place
        + (":rules" if args.rules_only else "")] = result
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
