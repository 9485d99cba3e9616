"""What a person's label means for each measure a run can have reviewed, and the judge's prediction of it.

Each ``ReviewMeasure`` says, for a case record: whether the measure applies (its *domain*), the judge's
prediction f ∈ {0, 1} of the person's label (the judge's verdict on the same question), the judge's score
(higher = more sure of "yes"; it orders cases by certainty for ``review.design``) and the evidence a person reads.
The corrected figure estimates the *target*: the share of the domain's cases a person labels "yes".

| measure | a person answers "yes" when | target |
|---|---|---|
| ``accuracy`` | the answer is correct (it gives what the gold answers give; on an unanswerable question, it declines) | the primary judge's accuracy: the share of the cases to answer that are answered correctly |
| ``faithfulness`` | every claim of the answer is supported by the context the model was given | the share of judged answers that are wholly supported (the judge's own prediction: all its claims supported) |
| ``answer_relevance`` | the answer gives information the question asks for (not the question back, a refusal or another subject) | the share of relevant answers |
| ``context_relevance`` | a retrieved passage holds what is needed to answer | the share of cases whose retrieved set holds one (the judge's hit rate) |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.results.measures import verdict_outcome
from evaluations.results.records import CaseRecord
from evaluations.results.rundata import RunData

__all__ = ["MEASURES", "ReviewMeasure", "case_id", "measure"]


def case_id(record: CaseRecord) -> str:
    """The run's id of a case: the dataset's or log's query id (with ``--repeat``, the repeat's own name)."""
    return record.name


def _number(value: Any) -> float | None:
    return None if isinstance(value, bool) or not isinstance(value, (int, float)) else float(value)


@dataclass(frozen=True)
class ReviewMeasure:
    name: str
    question: str  # what a person answers y/n to
    target: str  # what the corrected figure estimates
    #: (record, run) -> the judge's prediction of the label (None: the measure does not apply to the case)
    predict: Callable[[CaseRecord, RunData], float | None]
    #: (record, run) -> the judge's score, higher = surer of "yes"
    score: Callable[[CaseRecord, RunData], float]
    #: record -> what the judge said, for the person reading the case
    evidence: Callable[[CaseRecord, RunData], dict[str, Any]]


def primary(run: RunData) -> str:
    judge = run.summary.primary_judge
    if not judge:
        raise EvaluationsError("the run has no primary correctness judge (no gold answers, or no answers)",
                               where=str(run.path), fix="review --measure faithfulness, answer_relevance or "
                               "context_relevance, which need no gold answers")
    return judge


def _p_correct(judge: str) -> str:
    """The probability a verdict judge records beside its verdict: combined_correct -> combined_p_correct,
    llm_judge -> llm_p_correct."""
    return judge.removesuffix("_correct").removesuffix("_judge") + "_p_correct"


def _accuracy(record: CaseRecord, run: RunData) -> float | None:
    outcome = verdict_outcome(record, primary(run))
    return None if outcome is None else float(outcome)


def _accuracy_score(record: CaseRecord, run: RunData) -> float:
    p = _number(record.judges.get(_p_correct(primary(run))))
    return p if p is not None else float(_accuracy(record, run) or 0.0)


def _accuracy_evidence(record: CaseRecord, run: RunData) -> dict[str, Any]:
    judge = primary(run)
    return {"judge": judge, "gold_answers": record.gold_answers, "reason": record.judge_reasons.get(judge),
            "kind": record.judge_labels.get("answer_kind")}


def _faithful(record: CaseRecord, run: RunData) -> float | None:
    value = _number(record.judges.get("faithfulness"))
    return None if value is None else float(value >= 1.0 - 1e-9)


def _faithful_score(record: CaseRecord, run: RunData) -> float:
    if record.claims:
        return min(c.p for c in record.claims)
    return float(_faithful(record, run) or 0.0)


def _claims(record: CaseRecord, run: RunData) -> dict[str, Any]:
    return {"faithfulness": record.judges.get("faithfulness"),
            "claims": [c.model_dump(exclude_none=True) for c in record.claims or []]}


def _relevant_answer(record: CaseRecord, run: RunData) -> float | None:
    return _number(record.judges.get("answer_relevance"))


def _answer_evidence(record: CaseRecord, run: RunData) -> dict[str, Any]:
    return {"kind": record.judge_labels.get("answer_relevance_kind"),
            "reason": record.judge_reasons.get("answer_relevance")}


def _has_relevant(record: CaseRecord, run: RunData) -> float | None:
    if not record.chunk_relevance:
        return None
    return float(any(c.relevant for c in record.chunk_relevance))


def _context_score(record: CaseRecord, run: RunData) -> float:
    return max(max(c.p, c.p_set or 0.0) for c in record.chunk_relevance or []) if record.chunk_relevance else 0.0


def _chunks(record: CaseRecord, run: RunData) -> dict[str, Any]:
    return {"first_relevant_rank": record.first_relevant_rank,
            "chunks": [c.model_dump(exclude_none=True) for c in record.chunk_relevance or []]}


MEASURES: dict[str, ReviewMeasure] = {m.name: m for m in (
    ReviewMeasure("accuracy", "Is the answer correct (what the gold answers give; a refusal where there is no answer)?",
                  "the share of the cases to answer that are answered correctly (the primary judge's accuracy)",
                  _accuracy, _accuracy_score, _accuracy_evidence),
    ReviewMeasure("faithfulness", "Is every claim of the answer supported by the context?",
                  "the share of judged answers whose every claim the context supports",
                  _faithful, _faithful_score, _claims),
    ReviewMeasure("answer_relevance", "Does the answer give information the question asks for?",
                  "the share of judged answers that answer the question asked",
                  _relevant_answer, lambda r, run: float(_relevant_answer(r, run) or 0.0), _answer_evidence),
    ReviewMeasure("context_relevance", "Does a retrieved passage hold what is needed to answer?",
                  "the share of cases whose retrieved passages hold what is needed to answer",
                  _has_relevant, _context_score, _chunks),
)}


def measure(name: str) -> ReviewMeasure:
    if name not in MEASURES:
        raise EvaluationsError(f"no measure {name!r} to review", where="--measure",
                               fix=f"one of {', '.join(MEASURES)}")
    return MEASURES[name]
