"""``summary.json``'s ``reference_free`` section: the reference-free judges' metrics over the case records.

For each metric M of ``METRICS`` that the run computed (a record has its score or its ``M_kind`` label), with D the
records M applies to in principle (its *domain*: the cases to answer for the answer judges, every case for context
relevance) and v(r) the record's value in the measure registry (``results.measures``; None where M does not apply:
a refusal, no retrieved context, no answer):

* ``mean`` = Σ v(r) / n over the n records of D with a value; ``failed`` = records of D without a value whose
  case failed (the system, or the answer stage for a judge of the answer, raised: nothing to judge; kind "case
  failed") or whose judge raised (a model or server error; kind "judge failed"): counted, never a score;
  ``not_applicable`` = |D| − n − failed (``kind_of`` names why a record has no value; compare names it the same);
* ``ci95``: 0/1 values (a verdict such as ``answer_relevance``): the Wilson interval of the proportion
  (``judging.validation.agreement.wilson``: statsmodels' ``proportion_confint(method="wilson")``, exact at 0 / n and n / n); other scores: the Student t interval
  mean ± t₀.₉₇₅,ₙ₋₁ · s/√n (``scipy.stats.t``), clipped to [0, 1]; None for n < 2 (t) or n = 0;
* ``kinds``: how many records of D had each ``M_kind`` label ("claims", "refusal", "no_context", …).

``context_relevance.first_relevant``: over the cases whose chunks were judged, the share with a chunk judged
relevant (``hit_rate``, Wilson ``ci95``) and the mean reciprocal rank of the first one (``mrr``, 0 without one).
Where the cases have qrels (a case whose judged documents all have grade 0 too: its chunks are all negatives),
``context_relevance.qrels_agreement`` compares every chunk verdict with the qrels (a chunk is relevant by the qrels
when its document has grade > 0; a document absent from the qrels counts as not relevant, the BEIR/trec_eval
convention): confusion counts, accuracy and Cohen's κ with 95% bootstrap CIs over
cases (``judging.validation.agreement.agreement``), and ``qrels_precision`` = the same precision@k by the qrels. The qrels
judge documents, and a chunk of a relevant document need not hold what made it relevant, so ``documents`` gives the
same figures per (case, retrieved document): judged relevant when one of its retrieved chunks is.
``model_calls`` = forward passes the reference-free judges made for the records (0 on a fully cached run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evaluations.results import measures
from evaluations.results.records import CaseRecord
from evaluations.results.rundata import RunData

__all__ = ["CASE_FAILED", "JUDGE_FAILED", "METRICS", "first_relevant", "kind_of", "language_warning", "mean_ci",
           "qrels_agreement", "reference_free_summary", "score_summary"]

#: metric -> its domain (the records it applies to in principle), in report order
METRICS: dict[str, Callable[[CaseRecord], bool]] = {
    "faithfulness": measures.to_answer,
    "answer_relevance": measures.to_answer,
    "context_relevance": lambda record: True,
}


def mean_ci(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """The confidence interval of the mean of ``values`` (module docstring)."""
    n = len(values)
    if n == 0:
        return None
    if all(v in (0.0, 1.0) for v in values):
        from evaluations.judging.validation.agreement import wilson

        return wilson(int(sum(values)), n, level)
    if n < 2:
        return None
    from scipy import stats

    data = np.asarray(values, dtype=float)
    sem = float(data.std(ddof=1) / np.sqrt(n))
    if sem == 0:
        return float(data.mean()), float(data.mean())
    low, high = stats.t.interval(level, n - 1, loc=float(data.mean()), scale=sem)
    return max(0.0, float(low)), min(1.0, float(high))


#: the kinds of a record without a value that count as failed, not as not applicable
CASE_FAILED = "case failed"
JUDGE_FAILED = "judge failed"

#: the judges that read the answer: a failed answer stage leaves them nothing to judge
_READ_THE_ANSWER = frozenset({"faithfulness", "answer_relevance"})


def _failed(name: str, record: CaseRecord) -> bool:
    """The judge of metric ``name`` raised for this case (its evaluator is named by the metric)."""
    return any(e.evaluator == name for e in record.judge_errors)


def kind_of(name: str, record: CaseRecord, value: float | None) -> str:
    """Why ``record`` has ``value`` (None: no value) for reference-free metric ``name``: ``CASE_FAILED`` (the system
    raised, or the answer stage for a judge that reads the answer), ``JUDGE_FAILED`` (the judge raised), else the
    judge's own kind label (``<name>_kind``: "claims", "refusal", "no_context", …; "not judged" without one)."""
    if value is None:
        if record.status == "failed" or (name in _READ_THE_ANSWER and record.qa.status == "failed"):
            return CASE_FAILED
        if _failed(name, record):
            return JUDGE_FAILED
    return record.judge_labels.get(f"{name}_kind", "not judged")


def _ran(name: str, records: list[CaseRecord]) -> bool:
    return any(name in r.judges or f"{name}_kind" in r.judge_labels or _failed(name, r) for r in records)


def score_summary(records: list[CaseRecord] | RunData, name: str) -> dict[str, Any]:
    """One metric's entry (module docstring): ``mean``, ``n``, ``not_applicable``, ``failed``, ``ci95``, ``kinds``."""
    run = records if isinstance(records, RunData) else RunData(records=records)
    family = measures.family_of(name, run)
    domain = [r for r in run.records if METRICS[name](r)]
    valued = [(r, family.value(name, r, run) if family is not None else None) for r in domain]
    values = [v for _, v in valued if v is not None]
    kinds = Counter(kind_of(name, r, v) for r, v in valued)
    failed = kinds[CASE_FAILED] + kinds[JUDGE_FAILED]
    ci = mean_ci(values)
    return {"mean": sum(values) / len(values) if values else None, "n": len(values),
            "not_applicable": len(domain) - len(values) - failed, "failed": failed,
            "ci95": list(ci) if ci else None, "kinds": dict(sorted(kinds.items()))}


def first_relevant(records: list[CaseRecord]) -> dict[str, Any] | None:
    """Over the cases whose chunks were judged: ``hit_rate`` = share with a chunk judged relevant (Wilson
    ``ci95``), ``mrr`` = mean of 1 / ``first_relevant_rank`` (0 without one). Precision@k falls as k grows past the
    relevant chunks; these say whether, and how high, the retriever put one. None without judged chunks."""
    judged = [r for r in records if r.chunk_relevance]
    if not judged:
        return None
    hits = [1.0 if r.first_relevant_rank else 0.0 for r in judged]
    ci = mean_ci(hits)
    return {"cases": len(judged), "hit_rate": sum(hits) / len(hits), "ci95": list(ci) if ci else None,
            "mrr": sum(1.0 / r.first_relevant_rank for r in judged if r.first_relevant_rank) / len(judged)}


def qrels_agreement(records: list[CaseRecord], *, resamples: int = 1000, seed: int = 0) -> dict[str, Any] | None:
    """The chunk verdicts of the cases with qrels against the qrels, and the same per document (module docstring);
    None without any."""
    from evaluations.judging.validation.agreement import agreement

    labels, verdicts, groups, precision = [], [], [], []
    documents: dict[tuple[str, str], list[bool]] = {}  # (case, document) -> [qrels label, judged relevant]
    for record in records:
        if not record.relevant or not record.chunk_relevance:  # judged only grade 0: every chunk is a negative
            continue
        case = record.case or record.name
        by_qrels = [record.relevant.get(c.doc or c.id, 0) > 0 for c in record.chunk_relevance]
        labels += by_qrels
        verdicts += [c.relevant for c in record.chunk_relevance]
        groups += [case] * len(by_qrels)
        precision.append(sum(by_qrels) / len(by_qrels))
        for chunk, label in zip(record.chunk_relevance, by_qrels):
            seen = documents.setdefault((case, chunk.doc or chunk.id), [label, False])
            seen[1] = seen[1] or chunk.relevant
    if not labels:
        return None
    result = agreement("context_relevance", labels, verdicts, groups, resamples=resamples, seed=seed).to_dict()
    per_doc = agreement("context_relevance", [v[0] for v in documents.values()], [v[1] for v in documents.values()],
                        [case for case, _ in documents], resamples=resamples, seed=seed).to_dict()
    return {"chunks": result["n"], "cases": len(precision), "confusion": result["confusion"],
            "accuracy": result["accuracy"], "kappa": result["kappa"],
            "judge_relevant_rate": result["judge_positive_rate"], "qrels_relevant_rate": result["human_positive_rate"],
            "qrels_precision": sum(precision) / len(precision),
            "rule": "a chunk is relevant by the qrels when its document has grade > 0 (absent: not relevant)",
            "documents": {"documents": per_doc["n"], "confusion": per_doc["confusion"],
                          "accuracy": per_doc["accuracy"], "kappa": per_doc["kappa"],
                          "judge_relevant_rate": per_doc["judge_positive_rate"],
                          "qrels_relevant_rate": per_doc["human_positive_rate"],
                          "rule": "per case, a retrieved document is judged relevant when one of its chunks is "
                                  "(the qrels' own unit)"}}


def language_warning(records: list[CaseRecord], share: float = 0.1) -> str | None:
    """A warning when at least ``share`` of the cases have a question or answer that does not look English
    (``judging.basics.text.looks_english``): the reference-free judges' word lists, rules and fitted parameters are
    English, and their figures on another language are not validated (a right answer in French is "off topic"
    and unsupported). None otherwise."""
    from evaluations.judging.basics.text import looks_english

    def english(record: CaseRecord) -> bool:
        answer = (record.answer or {}).get("answer")
        return looks_english(record.query) and (not isinstance(answer, str) or looks_english(answer))

    other = [r.name for r in records if not english(r)]
    if not other or len(other) < share * len(records):
        return None
    return (f"{len(other)} of {len(records)} cases have a question or answer that is not English (e.g. "
            f"{other[0]!r}): the reference-free judges read English (their word lists, rules and fitted parameters); "
            "on another language their figures are not validated and mostly wrong")


def reference_free_summary(run: RunData, asked: Sequence[str] = ()) -> dict[str, Any] | None:
    """The section (module docstring), or None when the run computed no reference-free metric; ``asked``: the
    judges the run asked for, given their entry even when no case has a verdict (every case failed: ``failed``
    says so, where a missing entry would read as judges that were off)."""
    names = [name for name in METRICS if name in asked or _ran(name, run.records)]
    if not names:
        return None
    section: dict[str, Any] = {"metrics": {name: score_summary(run, name) for name in names}}
    if "context_relevance" in names and (first := first_relevant(run.records)) is not None:
        section["metrics"]["context_relevance"]["first_relevant"] = first
    if "context_relevance" in names and (agreed := qrels_agreement(run.records)) is not None:
        section["metrics"]["context_relevance"]["qrels_agreement"] = agreed
    section["model_calls"] = sum(r.reference_free_calls or 0 for r in run.records)
    return section
