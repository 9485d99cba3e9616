"""Our retrieval metrics against trec_eval (pytrec-eval-terrier), per query, on a real BM25 run over SciFact.

The run is built in the fixture with LanceDB's native full-text search (BM25) over the 5,183 SciFact
abstracts, top 100 for each of the 300 test claims. trec_eval sees the raw scores; we see
``canonical_order(scores)``. Equality per query and per k is the claim under test.

What pytrec_eval does with an empty result list (checked in ``test_empty_result_list``): a query present
in the run with an empty dict is scored 0 on every measure; a query absent from the run is omitted from
the output (plain trec_eval without ``-c``). Our metrics give 0.0, i.e. trec_eval ``-c`` (missing = 0).
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path

import lancedb
import pytest
import pytrec_eval
from lancedb.index import FTS
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EvaluatorContext
from pydantic_evals.otel import SpanTree

from evaluations.evaluators.retrieval import retrieval_evaluators
from evaluations.results.retrieval_metrics import METRICS, canonical_order, compute, compute_all, metric_key
from evaluations.core.types import CaseMetadata, CaseOutput, RetrievalInputs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SCIFACT = DATA / "scifact"
KS = (1, 3, 5, 10, 100)
DEPTH = 100

# our metric name -> trec_eval measure family (cutoff k appended as "_k"); mrr is recip_rank on the run cut to k
_TREC_MEASURE = {"map": "map_cut", "ndcg": "ndcg_cut", "precision": "P", "recall": "recall", "hit": "success"}

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]


@pytest.fixture(scope="module")
def scifact(tmp_path_factory):
    """Real SciFact test split and a real BM25 run (LanceDB native FTS), top 100 per query."""
    assert SCIFACT.is_dir(), f"SciFact data missing at {SCIFACT}"
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [{"id": d["_id"], "title": d["title"], "text": d["text"]} for d in map(json.loads, f)]
    with gzip.open(SCIFACT / "queries.jsonl.gz", "rt", encoding="utf-8") as f:
        queries = {q["_id"]: q["text"] for q in map(json.loads, f)}
    qrels: Qrels = {}
    with open(SCIFACT / "qrels" / "test.tsv", newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t")
        assert next(reader) == ["query-id", "corpus-id", "score"]
        for qid, doc_id, grade in reader:
            qrels.setdefault(qid, {})[doc_id] = int(grade)

    db = lancedb.connect(tmp_path_factory.mktemp("lancedb"))
    table = db.create_table("scifact", data=rows)
    table.create_index("text", config=FTS())

    def search(text: str) -> dict[str, float]:
        hits = table.search(text, query_type="fts").select(["id", "_score"]).limit(DEPTH).to_list()
        return {hit["id"]: float(hit["_score"]) for hit in hits}

    run: Run = {qid: search(queries[qid]) for qid in qrels}
    return {"queries": queries, "qrels": qrels, "run": run, "search": search}


def _trec(qrels: Qrels, run: Run) -> dict[str, dict[str, float]]:
    """trec_eval's per-query values, keyed like ours ("ndcg@10", ...). Run cut to k for recip_rank."""
    cut = ",".join(map(str, KS))
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"{m}.{cut}" for m in _TREC_MEASURE.values()})
    raw = evaluator.evaluate(run)
    out = {
        qid: {metric_key(ours, k): values[f"{trec}_{k}"] for ours, trec in _TREC_MEASURE.items() for k in KS}
        for qid, values in raw.items()
    }
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    for k in KS:
        run_k = {qid: {d: scores[d] for d in canonical_order(scores)[:k]} for qid, scores in run.items()}
        for qid, values in rr.evaluate(run_k).items():
            out[qid][metric_key("mrr", k)] = values["recip_rank"]
    return out


def _ours(qrels: Qrels, run: Run) -> dict[str, dict[str, float] | None]:
    return {qid: compute_all(canonical_order(run[qid]), qrels[qid], KS) for qid in run}


def _assert_equal_per_query(ours: dict, trec: dict) -> int:
    assert set(ours) == set(trec)
    checked = 0
    for qid, expected in trec.items():
        assert set(ours[qid]) == set(expected), qid
        for key, value in expected.items():
            assert ours[qid][key] == pytest.approx(value, abs=1e-9), (qid, key)
            checked += 1
    return checked


def test_tie_direction_matches_trec_eval():
    """trec_eval breaks score ties by document id DESCENDING, as plain strings ("9" before "10")."""
    for tied, relevant in [({"a": 1.0, "b": 1.0}, "b"), ({"10": 1.0, "9": 1.0}, "9"), ({"x": 2.0, "z": 1.0}, "x")]:
        got = pytrec_eval.RelevanceEvaluator({"q": {relevant: 1}}, {"recip_rank"}).evaluate({"q": tied})
        assert got["q"]["recip_rank"] == 1.0  # trec_eval put `relevant` first
        assert canonical_order(tied)[0] == relevant


def test_every_metric_equals_trec_eval_per_query(scifact):
    qrels, run = scifact["qrels"], scifact["run"]
    assert len(run) == 300 and sum(len(r) == DEPTH for r in run.values()) >= 290
    checked = _assert_equal_per_query(_ours(qrels, run), _trec(qrels, run))
    assert checked == 300 * len(KS) * len(METRICS)
    # a real BM25 run, not a degenerate one: most claims find their abstract in the top 100
    mean_recall_100 = sum(v["recall@100"] for v in _ours(qrels, run).values()) / len(run)
    assert mean_recall_100 > 0.7


def test_tied_scores_equal_trec_eval_on_raw_ties(scifact):
    qrels = scifact["qrels"]
    tied: Run = {qid: {d: round(s, 1) for d, s in scores.items()} for qid, scores in scifact["run"].items()}
    n_ties = sum(len(s) - len(set(s.values())) for s in tied.values())
    assert n_ties > 10_000  # rounding to 0.1 makes most of each top 100 tie with a neighbour
    trec = _trec(qrels, tied)
    _assert_equal_per_query(_ours(qrels, tied), trec)
    # the test discriminates: breaking ties by ascending id disagrees with trec_eval somewhere
    ascending = {qid: [d for d, _ in sorted(s.items(), key=lambda kv: (-kv[1], kv[0]))] for qid, s in tied.items()}
    assert any(
        compute_all(ascending[qid], qrels[qid], KS) != pytest.approx(trec[qid], abs=1e-9) for qid in tied
    )


def _graded_qrels(qrels: Qrels, run: Run) -> Qrels:
    """Grade 2 for the BEIR relevant docs; grade 1 for the run's docs at ranks 2 and 7 and grade 0 (judged,
    not relevant) for rank 4, unless BEIR already marks them relevant. Deterministic through canonical_order."""
    graded: Qrels = {}
    for qid, scores in run.items():
        order = canonical_order(scores)
        grades = {d: 2 for d, g in qrels[qid].items() if g > 0}
        for rank, grade in ((2, 1), (7, 1), (4, 0)):
            if len(order) >= rank and order[rank - 1] not in grades:
                grades[order[rank - 1]] = grade
        graded[qid] = grades
    return graded


def test_graded_relevance_equals_trec_eval(scifact):
    qrels, run = scifact["qrels"], scifact["run"]
    graded = _graded_qrels(qrels, run)
    assert sum(1 in g.values() for g in graded.values()) > 250
    ours = _ours(graded, run)
    _assert_equal_per_query(ours, _trec(graded, run))
    # grades matter: graded nDCG is not binary nDCG over the same relevant set
    binary = {qid: {d: int(g > 0) for d, g in grades.items()} for qid, grades in graded.items()}
    assert any(ours[q]["ndcg@10"] != pytest.approx(compute("ndcg", canonical_order(run[q]), binary[q], [10])["ndcg@10"])
               for q in run)


def test_empty_result_list(scifact):
    qrels = scifact["qrels"]
    qid_empty, qid_missing, qid_kept = sorted(qrels)[:3]
    run = {qid_empty: {}, qid_kept: scifact["run"][qid_kept]}
    ours = compute_all([], qrels[qid_empty], KS)
    assert ours == {key: 0.0 for key in ours} and len(ours) == len(KS) * len(METRICS)
    trec = _trec(qrels, run)
    # pytrec_eval scores a query with an empty result dict 0 on every measure ...
    assert trec[qid_empty] == ours
    # ... and omits a query absent from the run; trec_eval -c (missing = 0) equals ours
    assert qid_missing not in trec
    assert {key: trec.get(qid_missing, {}).get(key, 0.0) for key in ours} == compute_all([], qrels[qid_missing], KS)
    assert trec[qid_kept] == pytest.approx(compute_all(canonical_order(run[qid_kept]), qrels[qid_kept], KS))


def test_query_without_relevant_docs(scifact):
    qid = sorted(scifact["qrels"])[0]
    order = canonical_order(scifact["run"][qid])
    judged_not_relevant = {d: 0 for d in order[:5]}
    for name, fn in METRICS.items():
        for k in KS:
            assert fn(order, judged_not_relevant, k) is None, name
            assert fn(order, {}, k) is None, name
    assert compute_all(order, judged_not_relevant, KS) is None
    # trec_eval would score it 0 and average it in; we exclude it instead
    trec = pytrec_eval.RelevanceEvaluator({qid: judged_not_relevant}, {"ndcg_cut.10"})
    assert trec.evaluate({qid: scifact["run"][qid]})[qid]["ndcg_cut_10"] == 0.0

    ctx = EvaluatorContext(
        name=qid,
        inputs=RetrievalInputs(query=scifact["queries"][qid]),
        metadata=CaseMetadata(query_id=qid, relevant=judged_not_relevant),
        expected_output=None,
        output=CaseOutput(documents=order),
        duration=0.0,
        _span_tree=SpanTree(),
        attributes={},
        metrics={},
    )
    for evaluator in retrieval_evaluators(KS):
        assert evaluator.evaluate(ctx) == {}


def test_evaluators_in_a_real_dataset(scifact):
    qrels, queries, search = scifact["qrels"], scifact["queries"], scifact["search"]
    chosen = sorted(qrels)[:6]
    no_relevant = next(q for q in sorted(queries) if q not in qrels)  # a train claim, judged nothing here
    cases = [
        Case(
            name=qid,
            inputs=RetrievalInputs(query=queries[qid]),
            metadata=CaseMetadata(query_id=qid, relevant=qrels.get(qid, {})),
        )
        for qid in [*chosen, no_relevant]
    ]
    dataset = Dataset[RetrievalInputs, CaseOutput, CaseMetadata](
        name="scifact-oracle", cases=cases, evaluators=retrieval_evaluators(KS)
    )

    def task(inputs: RetrievalInputs) -> CaseOutput:
        scores = search(inputs.query)
        order = canonical_order(scores)
        return CaseOutput(documents=order, scores=[scores[d] for d in order])

    report = dataset.evaluate_sync(task, progress=False, max_concurrency=1)
    assert not report.failures
    by_name = {case.name: case for case in report.cases}
    assert set(by_name) == {*chosen, no_relevant}
    expected = {}
    for name, case in by_name.items():
        assert not case.evaluator_failures, case.evaluator_failures
        want = compute_all(case.output.documents, qrels.get(name, {}), KS)
        got = {key: result.value for key, result in case.scores.items()}
        if name == no_relevant:
            assert want is None and got == {}
            continue
        assert got == pytest.approx(want, abs=1e-12) and len(got) == len(KS) * len(METRICS)
        expected[name] = want
    # averages exclude the case without relevant documents
    averages = report.averages().scores
    for key in expected[chosen[0]]:
        mean = sum(v[key] for v in expected.values()) / len(expected)
        assert math.isclose(averages[key], mean, abs_tol=1e-12), key
