"""`evaluations score`: classic labelled answers (EVOUNA, TechQA), a TREC run from a real BM25 search over SciFact,
and a production log generated from that same real search; every figure checked against an independent oracle."""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from scipy.stats import pointbiserialr, spearmanr
from sklearn.calibration import calibration_curve
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_score, recall_score

from conftest import DATA, write_scifact_subset
from evaluations.judging.correctness.lexical import keyword_overlap
from evaluations.judging.basics.text import keywords
from scifact_bm25 import BM25, tokenize
from inprocess import run_evaluations

REPO = Path(__file__).resolve().parents[1]
_TOKEN = re.compile(r"\w+|[^\w\s]")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_evaluations([*args], capture_output=True, text=True,
                          cwd=cwd or REPO, env={**os.environ, "NO_COLOR": "1"}, timeout=300)


def score_json(*args: str) -> dict:
    proc = cli("score", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# -- classic ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def evouna_classic(tmp_path_factory) -> Path:
    """150 real EVOUNA NQ answers of gpt-3.5 with their human labels, in the classic format."""
    rows = []
    with gzip.open(DATA / "evouna" / "NQ.jsonl.gz", "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            record = json.loads(line)
            if record["improper"] or record["judge_gpt35"] is None:
                continue
            rows.append({"id": f"nq-{number}", "query": record["question"], "context": [],
                         "generated_answer": record["answer_gpt35"] or "",
                         "reference_answer": [a.strip() for a in record["golden_answer"].split("/") if a.strip()],
                         "label": record["judge_gpt35"]})
            if len(rows) == 150:
                break
    path = tmp_path_factory.mktemp("classic") / "evouna_gpt35.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_classic_labelled_matches_judge_agreement_and_sklearn(evouna_classic):
    summary = score_json(str(evouna_classic))
    assert summary["format"] == "classic" and summary["labelled"] is True and summary["rows"] == 150
    agreement = cli("judge-agreement", str(evouna_classic), "--judges", "keyword,f1,em,containment", "--json")
    assert agreement.returncode == 0, agreement.stderr
    assert summary["agreement"] == json.loads(agreement.stdout)  # the same numbers as judge-agreement

    rows = [json.loads(line) for line in evouna_classic.read_text().splitlines()]
    labels = [r["label"] for r in rows]
    verdicts = [keyword_overlap(r["reference_answer"], r["generated_answer"]) > 0.7 for r in rows]
    tn, fp, fn, tp = confusion_matrix(labels, verdicts, labels=[False, True]).ravel()
    assert summary["confusion"] == {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    assert summary["accuracy"] == pytest.approx(accuracy_score(labels, verdicts))
    assert summary["precision"] == pytest.approx(precision_score(labels, verdicts, zero_division=0))
    assert summary["recall"] == pytest.approx(recall_score(labels, verdicts, zero_division=0))
    assert summary["f1"] == pytest.approx(f1_score(labels, verdicts, zero_division=0))
    assert summary["correctness"]["correct"] == sum(verdicts)
    assert summary["coverage"]["n"] == 0  # no context given: coverage is undefined, not 0


def test_classic_unlabelled_techqa_coverage_and_latency(tmp_path):
    """TechQA questions with their gold technote as context and an extractive answer (its first two sentences)."""
    rows = []
    with gzip.open(DATA / "techqa_rag_eval_sample" / "techqa_rag_eval_sample480.jsonl.gz", "rt") as handle:
        for line in handle:
            record = json.loads(line)
            if record["is_impossible"]:
                continue
            t0 = time.perf_counter()
            context = [c["text"] for c in record["contexts"]]
            answer = " ".join(re.split(r"(?<=[.!?])\s+", context[0])[:2])
            rows.append({"query": record["question"], "context": context, "generated_answer": answer,
                         "reference_answer": record["answer"], "latency_ms": (time.perf_counter() - t0) * 1000})
            if len(rows) == 40:
                break
    path = tmp_path / "techqa.json"
    path.write_text(json.dumps(rows))
    summary = score_json(str(path), "--format", "classic")
    assert summary["labelled"] is False and "agreement" not in summary and "confusion" not in summary
    expected = []
    for r in rows:
        answer_kw = keywords(r["generated_answer"])
        if answer_kw:
            context_kw = set().union(*(keywords(c) for c in r["context"]))
            expected.append(len(answer_kw & context_kw) / len(answer_kw))
    assert summary["coverage"]["n"] == len(expected)
    assert summary["coverage"]["mean"] == pytest.approx(statistics.mean(expected))
    assert summary["coverage"]["mean"] > 0.9  # the answer is cut from the context itself
    assert summary["latency_ms"]["mean"] == pytest.approx(statistics.mean(r["latency_ms"] for r in rows))
    correct = sum(keyword_overlap(r["reference_answer"], r["generated_answer"]) > 0.7 for r in rows)
    assert summary["correctness"]["correct"] == correct


# -- TREC -----------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scifact(tmp_path_factory):
    folder = write_scifact_subset(tmp_path_factory.mktemp("scifact60"), 60, 150)
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc_id, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    return folder, BM25(folder), qrels


def test_trec_run_equals_pytrec_eval(scifact, tmp_path):
    folder, bm25, qrels = scifact
    run = {qid: {h["id"]: h["score"] for h in bm25.search(text, 100)} for qid, text in bm25.queries.items()}
    lines = [f"{qid} Q0 {doc} {rank} {score:.6f} bm25" for qid, docs in run.items()
             for rank, (doc, score) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), 1)]
    (tmp_path / "bm25.run").write_text("\n".join(lines) + "\n")
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    summary = score_json(str(tmp_path / "bm25.run"), "--qrels", str(tmp_path / "qrels.txt"), "--k", "1,5,10,100",
                         "--per-query")
    assert summary["format"] == "trec" and summary["counts"]["queries"] == len(qrels)
    rounded = {q: {d: float(f"{s:.6f}") for d, s in docs.items()} for q, docs in run.items()}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "P_5", "recall_100", "map_cut_10", "recip_rank",
                                                     "success_1"}).evaluate(rounded)
    pairs = {"ndcg@10": "ndcg_cut_10", "p@5": "P_5", "recall@100": "recall_100", "map@10": "map_cut_10",
             "mrr@100": "recip_rank", "hit@1": "success_1"}
    for qid, values in oracle.items():
        for ours, theirs in pairs.items():
            assert summary["per_query"][qid][ours] == pytest.approx(values[theirs], abs=1e-9), (qid, ours)
    assert summary["metrics"]["ndcg@10"] == pytest.approx(np.mean([v["ndcg_cut_10"] for v in oracle.values()]))
    assert 0.3 < summary["metrics"]["ndcg@10"] < 1.0  # BM25 on SciFact is decent, not perfect


# -- production logs ---------------------------------------------------------------------------------------------

SMALL, LARGE = "openai:gpt-4o-mini", "openai:gpt-4o"
PRICES = {SMALL: (0.15, 0.60), LARGE: (2.50, 10.00)}


def make_log(bm25: BM25, qrels: dict) -> list[dict]:
    """A router log from the real BM25 ranking: the small tier answers from the top 2 documents with the router's
    confidence = score margin (s1 - s2) / s1; below 0.2 the query is escalated to the large tier (top 5 as context).
    Success = a relevant document is in the context the tier read."""
    log = []
    for qid, query in bm25.queries.items():
        hits = bm25.search(query, 10)
        s1, s2 = hits[0]["score"], hits[1]["score"] if len(hits) > 1 else 0.0
        confidence = (s1 - s2) / s1
        relevant = {d for d, g in qrels[qid].items() if g > 0}
        for attempt, (tier, model, n_context) in enumerate([("small", SMALL, 2), ("large", LARGE, 5)]):
            context = hits[:n_context]
            answer = re.split(r"(?<=[.!?])\s+", context[0]["text"].split("\n", 1)[-1])[0]
            log.append({
                "query_id": qid, "query": query, "attempt": attempt, "tier": tier, "model": model,
                "confidence": round(confidence, 6) if attempt == 0 else None,
                "retrieved": [{"id": h["id"], "text": h["text"], "score": h["score"]} for h in hits],
                "context": [h["id"] for h in context], "answer": answer,
                "correct": any(h["id"] in relevant for h in context),
                "usage": {"input_tokens": len(tokenize(query)) + sum(len(tokenize(h["text"])) for h in context),
                          "output_tokens": len(tokenize(answer))},
            })
            if confidence >= 0.2:
                break
    return log


def test_scored_log_against_oracles(scifact, tmp_path, monkeypatch):
    """Retrieval, tiers, answers, tokens and cost of a log against oracles (the reference-free judges, which read
    each answer against its context, are off: their scores over logs are tests/test_answer_relevance.py's and
    test_score_log_out.py's)."""
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "none")
    folder, bm25, qrels = scifact
    log = make_log(bm25, qrels)
    path = tmp_path / "router.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in log))
    config = tmp_path / "prices.yaml"
    config.write_text("prices:\n" + "".join(f"  {m}: {{input: {i}, output: {o}}}\n" for m, (i, o) in PRICES.items()))
    summary = score_json(str(path), "--golden", str(folder / "qrels" / "test.tsv"), "--config", str(config),
                         "--tiers", "small,large")
    n = len(bm25.queries)
    assert summary["format"] == "log" and summary["queries"] == n and summary["attempts"] == len(log)

    # tier usage and escalation, counted here from the log
    escalated = {r["query_id"] for r in log if r["tier"] == "large"}
    assert summary["escalation"]["escalated_queries"] == len(escalated)
    assert summary["escalation"]["rate"] == pytest.approx(len(escalated) / n)
    assert 0 < len(escalated) < n
    assert summary["tiers"]["attempts"]["small"]["n"] == n
    assert summary["tiers"]["attempts"]["large"]["n"] == len(escalated)
    assert summary["tiers"]["final"]["large"]["share"] == pytest.approx(len(escalated) / n)

    # retrieval of the last attempt vs pytrec_eval
    final = {r["query_id"]: r for r in log}
    run = {q: {s["id"]: s["score"] for s in r["retrieved"]} for q, r in final.items()}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "P_5"}).evaluate(run)
    assert summary["retrieval"]["metrics"]["ndcg@10"] == pytest.approx(np.mean([v["ndcg_cut_10"] for v in oracle.values()]))
    assert summary["retrieval"]["metrics"]["p@5"] == pytest.approx(np.mean([v["P_5"] for v in oracle.values()]))

    # answers, tokens, cost
    correct = sum(r["correct"] for r in final.values())
    tokens = sum(r["usage"]["input_tokens"] + r["usage"]["output_tokens"] for r in log)
    cost = sum(r["usage"]["input_tokens"] * PRICES[r["model"]][0] / 1e6 + r["usage"]["output_tokens"] *
               PRICES[r["model"]][1] / 1e6 for r in log)
    assert summary["answers"]["correct"] == correct
    assert summary["answers"]["judged"] == n and summary["answers"]["accuracy"] == pytest.approx(correct / n)
    assert summary["tokens"]["per_correct_answer"] == pytest.approx(tokens / correct)
    assert summary["cost_usd"]["per_query"] == pytest.approx(cost / n) and summary["cost_usd"]["unpriced_attempts"] == 0

    # context waste: share of context tokens from non-relevant documents
    wastes = []
    for r in log:
        texts = {s["id"]: s["text"] for s in r["retrieved"]}
        sizes = [(len(_TOKEN.findall(texts[i])), qrels[r["query_id"]].get(i, 0) > 0) for i in r["context"]]
        wastes.append(sum(k for k, rel in sizes if not rel) / sum(k for k, _ in sizes))
    assert summary["context_waste"]["mean"] == pytest.approx(statistics.mean(wastes))
    assert summary["context_waste"]["basis"] == {"tokens": len(log)}

    # calibration: bucket accuracies vs sklearn, ECE recomputed by hand, correlations vs scipy
    pairs = [(r["confidence"], r["correct"]) for r in log if r["confidence"] is not None]
    conf = np.array([c for c, _ in pairs])
    ok = np.array([y for _, y in pairs], dtype=float)
    calibration = summary["calibration"]
    prob_true, prob_pred = calibration_curve(ok, conf, n_bins=10, strategy="uniform")
    assert [b["accuracy"] for b in calibration["buckets"]] == pytest.approx(list(prob_true))
    assert [b["confidence"] for b in calibration["buckets"]] == pytest.approx(list(prob_pred))
    ece = 0.0
    for j in range(10):
        lo, hi = j / 10, (j + 1) / 10
        members = [(c, y) for c, y in zip(conf, ok) if (lo < c <= hi) or (j == 0 and c == 0)]
        if members:
            ece += len(members) / len(conf) * abs(np.mean([y for _, y in members]) - np.mean([c for c, _ in members]))
    assert calibration["ece"] == pytest.approx(ece)
    assert calibration["pointbiserial_r"] == pytest.approx(pointbiserialr(ok, conf)[0])
    assert calibration["spearman_rho"] == pytest.approx(spearmanr(conf, ok)[0])
    assert calibration["brier"] == pytest.approx(np.mean((conf - ok) ** 2))
    assert not math.isnan(calibration["ece"])


def test_log_errors_name_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"query_id": "q1", "retrieved": ["a"], "confidence": 0.5}) + "\n"
                    + json.dumps({"query_id": "q2", "retrieved": ["b"], "confidence": 1.7}) + "\n"
                    + json.dumps({"query_id": "q3", "tier": "small", "usage": {"input_tokens": -3}}) + "\n")
    proc = cli("score", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "bad.jsonl:2: field 'confidence'" in proc.stderr and "bad.jsonl:3: field 'usage.input_tokens'" in proc.stderr
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 2.0 x\n")
    proc = cli("score", str(run))
    assert proc.returncode == 2 and "--qrels" in proc.stderr


def test_a_log_of_ids_reads_the_span_texts_from_corpus(scifact, tmp_path, monkeypatch):
    """A log whose spans are ids only: without --corpus the context judges have nothing to read (counted, warned);
    with --corpus (a corpus file of the SciFact subset's documents) it scores exactly as the same log with the texts
    written in, and an id the corpus does not hold is counted. Each document is cut to the first two sentences of
    its abstract (the logged answer is the first), in the corpus file and in the log with texts alike: the judges
    read a few dozen tokens per span instead of a whole abstract (each prompt token costs the model time)."""
    folder, bm25, qrels = scifact
    first = list(bm25.queries)[:1]
    corpus_rows = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines() if line.strip()]
    short = {d["_id"]: " ".join(re.split(r"(?<=[.!?])\s+", d["text"])[:2]) for d in corpus_rows}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in short.items()))
    # one query with its top 3 hits (the first 2 its context): the judges ask the model about every span
    log = [{**r, "retrieved": [{**h, "text": short[h["id"]]} for h in r["retrieved"][:3]]}
           for r in make_log(bm25, qrels) if r["query_id"] in first and r["attempt"] == 0]
    assert all(r["answer"] in r["retrieved"][0]["text"] for r in log)  # the answer is its first span's first sentence
    with_text, ids_only = tmp_path / "text.jsonl", tmp_path / "ids.jsonl"
    with_text.write_text("".join(json.dumps(r) + "\n" for r in log))
    ids = [{**r, "retrieved": [h["id"] for h in r["retrieved"]]} for r in log]
    ids[0]["retrieved"].append("no-such-doc")
    ids_only.write_text("".join(json.dumps(r) + "\n" for r in ids))
    monkeypatch.setenv("EVALUATIONS_LLM_THREADS", "1")
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "faithfulness,answer_relevance,context_relevance")

    def scored(*args: str) -> tuple[dict, str]:
        proc = cli("score", *args, "--format", "log", "--json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout), proc.stderr

    reference, _ = scored(str(with_text))
    blind, warned = scored(str(ids_only))
    assert blind["context_text"] == {"queries": 1, "without_text": 1, "corpus": False}
    assert blind["reference_free"]["metrics"]["faithfulness"]["n"] == 0
    assert "1 of 1 queries have context spans without text" in warned and "pass --corpus" in warned
    looked_up, warned = scored(str(ids_only), "--corpus", str(corpus))
    retrieved = sum(len(r["retrieved"]) for r in ids)
    assert looked_up["context_text"] == {"queries": 1, "without_text": 0, "corpus": True, "retrieved": retrieved,
                                         "unknown_ids": 1, "unknown_examples": ["no-such-doc"]}
    assert f"1 of {retrieved} retrieved ids are not in the corpus" in warned
    for name in ("faithfulness", "answer_relevance", "context_relevance"):
        assert looked_up["reference_free"]["metrics"][name]["mean"] == reference["reference_free"]["metrics"][name][
            "mean"], name
        assert looked_up["reference_free"]["metrics"][name]["n"] == 1
    assert looked_up["context_waste"] == reference["context_waste"]
    proc = cli("score", str(ids_only), "--format", "trec", "--corpus", str(corpus))
    assert proc.returncode == 2 and "--corpus is for logs" in proc.stderr and "Traceback" not in proc.stderr


def test_a_log_counts_failed_and_unanswered_queries_and_never_reports_unknown_as_zero(tmp_path):
    """Four SQuAD 2.0 questions: one answered right (usage logged, priced model), one failed ('error', no usage),
    one unanswered, one answered wrong (usage logged, a model the config does not price). The failed and the
    unanswered query are wrong answers and counted; tokens and cost per query are unknown (null, 'unknown' in the
    table) because some attempts have no usage or price; the totals are over the known attempts. A row in
    RAGAS's names is an error naming the renames (it was scored as nothing, exit 0)."""
    rows = [json.loads(line) for line in gzip.open(DATA / "squad2_dev_cs224n" / "questions.jsonl.gz", "rt")]
    qs = [r for r in rows if not r["is_impossible"]][:4]
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps({"id": q["id"], "query": q["question"], "answers": q["answers"]["text"],
                                          "relevant_doc_ids": [q["paragraph_id"]]}) + "\n" for q in qs))
    log = [
        {"query_id": qs[0]["id"], "query": qs[0]["question"], "retrieved": [qs[0]["paragraph_id"]],
         "answer": qs[0]["answers"]["text"][0], "model": "openai:priced", "usage": {"input_tokens": 100,
                                                                                    "output_tokens": 10}},
        {"query_id": qs[1]["id"], "query": qs[1]["question"], "retrieved": [], "answer": None, "error": "HTTP 500",
         "latency_ms": {"retrieve": 20.0, "llm": 30.0}},
        {"query_id": qs[2]["id"], "query": qs[2]["question"], "retrieved": [qs[2]["paragraph_id"]]},
        {"query_id": qs[3]["id"], "query": qs[3]["question"], "retrieved": ["elsewhere"],
         "answer": "Zanzibar", "model": "openai:unpriced", "usage": {"input_tokens": 50, "output_tokens": 5}},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in log))
    config = tmp_path / "prices.yaml"
    config.write_text("prices:\n  openai:priced: {input: 2.0, output: 8.0}\n")
    args = (str(path), "--golden", str(golden), "--config", str(config), "--no-reference-free")
    summary = score_json(*args)
    assert summary["answers"] == {"judged": 4, "correct": 1, "accuracy": 0.25, "failed": 1, "unanswered": 1}
    assert summary["tokens"] == {"input": 150, "output": 15, "per_query": None, "per_correct_answer": None,
                                 "unreported_attempts": 2}
    assert summary["cost_usd"] == {"total": pytest.approx(100 * 2.0 / 1e6 + 10 * 8.0 / 1e6), "per_query": None,
                                   "unpriced_attempts": 3}
    assert summary["latency_ms"] == {"mean": 50.0, "n": 1}  # a per-stage latency: the sum of its stages
    assert "not_in_golden" not in summary
    stranger = {"query_id": "not-a-golden-id", "query": "Who?", "retrieved": ["x"], "answer": "Nobody"}
    path.write_text("".join(json.dumps(r) + "\n" for r in [*log, stranger]))
    proc = cli("score", *args)
    assert proc.returncode == 0 and "1 of 5 logged queries are not in the golden set (e.g. 'not-a-golden-id')" in \
        proc.stderr, proc.stderr
    assert score_json(*args)["not_in_golden"] == {"queries": 1, "examples": ["not-a-golden-id"]}
    path.write_text("".join(json.dumps(r) + "\n" for r in log))
    table = cli("score", *args).stdout
    assert re.search(r"tokens\.per_query\s*│\s*unknown", table) and re.search(r"cost_usd\.per_query\s*│\s*unknown",
                                                                              table), table
    ragas = tmp_path / "ragas.jsonl"
    ragas.write_text(json.dumps({"query_id": qs[0]["id"], "question": qs[0]["question"], "contexts": [qs[0]["context"]],
                                 "answer": "x"}) + "\n")
    proc = cli("score", str(ragas), "--golden", str(golden), "--no-reference-free")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{ragas}:1: field 'question' is not read: rename it 'query'" in proc.stderr
    assert "field 'contexts' is not read: rename it 'retrieved'" in proc.stderr


def test_beir_qrels_whose_ids_hold_spaces_are_split_on_tabs(tmp_path, cli):
    """A BEIR qrels TSV is split on tabs: 'q1<TAB>doc A<TAB>1' was read as 4 whitespace columns (iteration 'doc',
    document 'A'), so a run retrieving 'A' scored as if it had found the relevant 'doc A' (and a query id with a
    space was 5 columns, an error)."""
    import pytrec_eval

    qrels = {"q1": {"doc A": 1, "D": 1}, "q2 x": {"B b": 2, "C": 0}}
    (tmp_path / "qrels.tsv").write_text("query_id\tcorpus_id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\t\n" for q, docs in qrels.items() for d, g in docs.items()))
    (tmp_path / "run.trec").write_text("q1 Q0 A 1 2.0 t\nq1 Q0 D 2 1.0 t\n")  # TREC runs split on whitespace
    code, out, err = cli(["score", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "qrels.tsv"), "--k", "1,10",
                          "--json"])
    assert code == 0, err
    q1 = pytrec_eval.RelevanceEvaluator({"q1": qrels["q1"]}, {"P_1", "recall_10"}).evaluate(
        {"q1": {"A": 2.0, "D": 1.0}})["q1"]
    assert (q1["P_1"], q1["recall_10"]) == (0.0, 0.5)
    summary = json.loads(out)  # 'q2 x' is judged and not in the run: 0, as trec_eval -c counts it
    assert summary["metrics"]["p@1"] == pytest.approx((q1["P_1"] + 0.0) / 2)
    assert summary["metrics"]["recall@10"] == pytest.approx((q1["recall_10"] + 0.0) / 2)


def test_a_classic_file_labelled_on_some_rows_says_the_labels_were_not_used(tmp_path, cli):
    """Labels on only some rows were dropped without a word ('labelled': false)."""
    rows = [{"query": "Where is the Eiffel Tower?", "generated_answer": "Paris", "reference_answer": "Paris",
             "label": "correct"},
            {"query": "Where is the Colosseum?", "generated_answer": "Milan", "reference_answer": "Rome"}]
    path = tmp_path / "classic.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = cli(["score", str(path), "--resamples", "10", "--json"])
    summary = json.loads(out)
    assert code == 0 and summary["labelled"] is False and "confusion" not in summary
    assert summary["warnings"] == ["1 of 2 rows have a label, so none was used: the confusion matrix and the judges' "
                                   "agreement need every row labelled (label the others, or keep the labelled rows "
                                   "in a file of their own)"]
    assert err.count("warning: 1 of 2 rows have a label") == 1


def test_a_classic_tsv_of_six_columns_is_not_taken_for_a_trec_run(tmp_path, cli):
    """Six tab-separated columns with a header naming generated_answer were detected as a TREC run ('a TREC run
    needs qrels')."""
    path = tmp_path / "classic.tsv"
    path.write_text("query\tcontext\tgenerated_answer\treference_answer\tlabel\tlatency_ms\n"
                    "Where is the Eiffel Tower?\tThe Eiffel Tower is in Paris.\tParis\tParis\ttrue\t12\n"
                    "Where is the Colosseum?\tThe Colosseum is in Rome.\tMilan\tRome\tfalse\t30\n")
    code, out, err = cli(["score", str(path), "--resamples", "10", "--json"])
    assert code == 0, err
    summary = json.loads(out)
    assert summary["format"] == "classic" and summary["labelled"] is True
    assert summary["confusion"] == {"tp": 1, "fp": 0, "fn": 0, "tn": 1} and summary["latency_ms"]["mean"] == 21


def test_a_headerless_qrels_tsv_whose_first_grade_is_not_an_integer_is_an_error(tmp_path, cli):
    """The first line of a BEIR TSV is its header only when its grade column is not a number: 'q1<TAB>D<TAB>2.0'
    on line 1 was skipped as a header (the judgement silently lost), where the same line below it is refused."""
    from conftest import assert_one_error

    (tmp_path / "qrels.tsv").write_text("q1\tD\t2.0\nq1\tE\t1\n")
    (tmp_path / "run.trec").write_text("q1 Q0 D 1 2.0 t\nq1 Q0 E 2 1.0 t\n")
    code, out, err = cli(["score", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "qrels.tsv")])
    assert_one_error(code, out + err, f"{tmp_path / 'qrels.tsv'}:1: grade '2.0' is not an integer")


def test_undefined_precision_and_recall_are_unknown_not_zero(evouna_classic, tmp_path):
    """Real EVOUNA answers all labelled wrong that the keyword rule also calls wrong: the judge agrees on every row,
    and precision and recall are 0/0 (scikit-learn gives nan with zero_division=nan). They were reported as 0.0000,
    which reads as a useless judge; they are null in JSON and "unknown" in the table."""
    rows = [json.loads(line) for line in evouna_classic.read_text().splitlines()]
    wrong = [r for r in rows if not r["label"] and keyword_overlap(r["reference_answer"], r["generated_answer"]) <= 0.7]
    assert len(wrong) >= 5
    path = tmp_path / "all_wrong.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in wrong))
    labels, verdicts = [False] * len(wrong), [False] * len(wrong)
    assert np.isnan(precision_score(labels, verdicts, zero_division=np.nan))
    assert np.isnan(recall_score(labels, verdicts, zero_division=np.nan))
    summary = score_json(str(path))
    assert summary["accuracy"] == pytest.approx(accuracy_score(labels, verdicts)) == 1.0
    assert summary["precision"] is None and summary["recall"] is None and summary["f1"] is None
    table = cli("score", str(path), "--judges", "keyword")
    assert table.returncode == 0, table.stderr
    assert re.search(r"precision\s*│\s*unknown", table.stdout), table.stdout
