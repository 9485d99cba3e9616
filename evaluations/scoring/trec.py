"""Score a TREC run file against TREC qrels with the project's retrieval metrics (equal to trec_eval's).

Run file: ``qid Q0 docid rank score tag`` per line (whitespace separated). As trec_eval does, the rank column
is ignored: each query's documents are ordered by ``results.retrieval_metrics.canonical_order`` (score
descending, ties by doc id descending). Qrels: ``qid iter docid grade`` per line (whitespace separated), or a
BEIR TSV ``query-id<TAB>corpus-id<TAB>score`` after its header line (split on tabs: its ids may hold spaces).

Per query: ``results.retrieval_metrics.compute_all``. Means are over queries that have a relevant document in the
qrels; a judged query missing from the run counts with an empty ranking (all 0, trec_eval ``-c``). Queries of
the run without qrels are counted and ignored (as trec_eval); a run none of whose queries has a relevant document
is warned about (``warnings``: its metrics, empty or all 0, say nothing about it). A score of NaN in the run, and
a (query, document) pair graded twice with different grades in the qrels, are errors naming the line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from evaluations.core.errors import EvaluationsError
from evaluations.datasets.rows import is_number, tab_cells, utf8_lines
from evaluations.results.records import CaseRecord
from evaluations.results.retrieval_metrics import canonical_order, compute_all
from evaluations.results.rundata import RunData
from evaluations.results.summary import retrieval_means


def _lines(path: Path, *, tabs: bool = False) -> Iterable[tuple[int, list[str]]]:
    """(number, columns) of every non-blank line, split on whitespace; with ``tabs``, a line holding a tab is split
    on tabs (``tab_cells``: a BEIR TSV, whose ids may hold spaces). Checked:
    the file exists, is UTF-8 text, its gzip stream (.gz) valid and whole (``utf8_lines``: one error naming the
    file and line)."""
    if not path.is_file():
        raise EvaluationsError("file not found", where=str(path), fix="check the path")
    for number, line in utf8_lines(path):
        if not line.strip():
            continue
        yield number, tab_cells(line) if tabs and "\t" in line else line.split()


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """{qid: {docid: score}} from a TREC run file; one error per malformed line (file:line)."""
    path = Path(path)
    run: dict[str, dict[str, float]] = {}
    for number, parts in _lines(path):
        where = f"{path}:{number}"
        if len(parts) != 6:
            raise EvaluationsError(f"expected 6 columns (qid Q0 docid rank score tag), got {len(parts)}", where=where,
                                   fix="write one 'qid Q0 docid rank score tag' per line")
        qid, _, doc_id, _, score, _ = parts
        try:
            value = float(score)
        except ValueError:
            raise EvaluationsError(f"score {score!r} is not a number", where=where, fix="column 5 is the score") from None
        if math.isnan(value):  # no order: the ranking would be undefined (canonical_order)
            raise EvaluationsError(f"document {doc_id!r} of query {qid!r} has a NaN score", where=where,
                                   fix="write a finite score in column 5 (or -inf for a document ranked last)")
        if doc_id in run.setdefault(qid, {}):
            raise EvaluationsError(f"document {doc_id!r} appears twice for query {qid!r}", where=where,
                                   fix="one line per (query, document)")
        run[qid][doc_id] = value
    if not run:
        raise EvaluationsError("the run file has no lines", where=str(path), fix="give a TREC run file")
    return run


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """{qid: {docid: grade}} from TREC qrels (4 columns) or a BEIR qrels TSV (3 columns, header line).

    A (query, document) pair graded twice with different grades is an error naming both lines (which one is meant
    cannot be told, and neither may win silently); the same grade repeated is accepted, as the one judgment it
    is (merged judgment pools repeat lines)."""
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    lines: dict[tuple[str, str], int] = {}  # (qid, docid) -> the line that graded it
    for number, parts in _lines(path, tabs=True):
        where = f"{path}:{number}"
        if not lines and not qrels and len(parts) == 3 and not is_number(parts[2]):
            continue  # a BEIR TSV's header, whatever it names (query-id corpus-id score, query_id ...)
        if len(parts) == 4:
            qid, _, doc_id, grade = parts
        elif len(parts) == 3:
            qid, doc_id, grade = parts
        else:
            raise EvaluationsError(f"expected 4 columns (qid iter docid grade), got {len(parts)}", where=where,
                                   fix="write one 'qid 0 docid grade' per line")
        try:
            value = int(grade)
        except ValueError:
            raise EvaluationsError(f"grade {grade!r} is not an integer", where=where,
                                   fix="the last column is an integer grade") from None
        graded = qrels.setdefault(qid, {})
        if graded.get(doc_id, value) != value:
            raise EvaluationsError(f"document {doc_id!r} of query {qid!r} is graded {value} here and "
                                   f"{graded[doc_id]} at line {lines[qid, doc_id]}", where=where,
                                   fix="keep one line per (query, document), with the grade meant")
        graded[doc_id] = value
        lines.setdefault((qid, doc_id), number)
    if not qrels:
        raise EvaluationsError("the qrels file has no lines", where=str(path), fix="give TREC qrels")
    return qrels


def evaluate_rankings(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]], ks: list[int]) -> dict:
    """Per-query and mean metrics of ranked lists against qrels (module docstring rules)."""
    per_query: dict[str, dict[str, float]] = {}
    for qid, grades in qrels.items():
        values = compute_all(rankings.get(qid, []), grades, ks)
        if values is not None:
            per_query[qid] = values
    records = [CaseRecord(name=qid, retrieved=rankings.get(qid, []), relevant=qrels[qid], metrics=values)
               for qid, values in per_query.items()]
    means, _ = retrieval_means(RunData(records=records))  # the measure registry's means, as a run's summary
    return {
        "metrics": means,
        "counts": {
            "queries": len(per_query),
            "judged_without_relevant": sum(1 for g in qrels.values() if not any(x > 0 for x in g.values())),
            "judged_missing_from_run": sum(1 for qid in per_query if qid not in rankings),
            "run_without_qrels": sum(1 for qid in rankings if qid not in qrels),
        },
        "per_query": per_query,
    }


def score_trec(run_path: str | Path, qrels_path: str | Path, ks: list[int]) -> dict:
    run = read_run(run_path)
    qrels = read_qrels(qrels_path)
    rankings = {qid: canonical_order(scores) for qid, scores in run.items()}
    result = evaluate_rankings(rankings, qrels, ks)
    if result["counts"]["queries"] and not any(d in qrels.get(q, {}) for q, r in rankings.items() for d in r):
        result["warning"] = "no retrieved document id appears in the qrels: the ids of the run and qrels probably differ"
    if warning := _no_relevant(rankings, qrels):
        result["warnings"] = [warning]
    return {"format": "trec", "file": str(run_path), "qrels": str(qrels_path), "ks": ks, **result}


def _no_relevant(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> str | None:
    """A warning when no query of the run has a relevant document (grade > 0) in the qrels: its metrics are then
    empty or all 0, which says nothing about the run (the query ids differ, or the qrels grade nothing above 0)."""
    if any(grade > 0 for qid in rankings for grade in qrels.get(qid, {}).values()):
        return None
    unjudged = sum(qid not in qrels for qid in rankings)
    return (f"no query of the run has a relevant document in the qrels (of its {len(rankings)} queries, {unjudged} "
            f"are not in the qrels and {len(rankings) - unjudged} have no grade above 0): the metrics say nothing "
            "about the run; check that the run and the qrels use the same query ids and grade relevant documents "
            "above 0")
