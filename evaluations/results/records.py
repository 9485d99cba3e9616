"""``CaseRecord``: the one per-case contract, written to ``cases.jsonl`` and read by everything downstream.

A record is derived from pydantic-evals' own ``ReportCase`` (the task ran) or ``ReportCaseFailure`` (the task
raised: the case's retrieval / system call itself failed). Stages fail separately:

- ``status``: "ok" | "failed" — whether the system produced a retrieval result at all;
- ``qa.status``: "ok" | "failed" | "skipped" — the answer stage; on failure ``qa.error`` and ``qa.raw_text``
  (what the model actually said) are kept and the retrieval fields stay intact;
- ``judge_errors``: evaluators (judges) that raised for this case; the other verdicts stay.

The reference-free judges keep their evidence (``claims``: every claim of the answer with its verdict, P(supported)
and the passage that supports it best; ``chunk_relevance``: every retrieved chunk's verdict; ``first_relevant_rank``)
in typed optional fields, absent from a line when the judge did not run (so older lines and runs read as before);
so does ``judge_cost``: per judge that measured itself, the wall seconds and model calls judging the case took.

Schema version ``SCHEMA``; older records (version 1: no ``qa`` block) still load.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_evals.evaluators import EvaluationReason
from pydantic_evals.reporting import ReportCase, ReportCaseFailure

from evaluations.core.types import CaseMetadata, CaseOutput
from evaluations.results.retrieval_metrics import is_retrieval_metric

SCHEMA = 2

#: latency stages every case may record, in report order (a system may add its own after these)
STAGES = ("embed", "retrieve", "rerank", "llm", "total")

#: ``qa.mode`` of an answer a user's system gave (``pipeline.task``): its ``usage`` is what the system reported
SYSTEM_ANSWER = "system"

#: the answer judges whose per-case value is a verdict (accuracy over all cases, failed = incorrect)
#: the assertion names the judges emit (JudgeAgreement's default set, plus any ``*_correct`` assertion);
#: ``llm_judge`` is the LLM judge's verdict (served: ``judging.correctness.llm``, embedded: ``judging.correctness.embedded``)
VERDICT_NAMES = (
    "keyword_correct", "exact_match", "contains_gold", "semantic_correct", "offline_correct", "llm_judge",
    "combined_correct",
)

#: reference-free scores (no gold needed; per case in [0, 1], in a record's ``judges`` as floats): ``faithfulness``,
#: ``answer_relevance`` (``judging.grounded.answer_relevance``: 1 or 0) and ``context_relevance``. A case the judge does not apply
#: to has no value (not applicable). Not correctness: never a verdict (``measures.is_verdict_name``), a primary
#: judge, nor in the "judges disagree" count (``summary.DISAGREEMENT_JUDGES``); summarised with n and a 95% CI
#: (``results.reference_free``). ``faithfulness`` = supported claims / claims of the answer, ``context_relevance``
#: = precision@k of the retrieved chunks judged relevant.
REFERENCE_FREE_SCORES = ("faithfulness", "answer_relevance", "context_relevance")


class ClaimRecord(BaseModel):
    """One claim of the answer as the faithfulness judge saw it."""

    claim: str
    supported: bool
    p: float  # P(supported)
    passage: str | None = None  # id of the passage that supports it best (None: no passage)
    bridge: str | None = None  # id of another passage read together with it (a multi-hop claim's other step)
    rule: str | None = None  # why the verdict is not the model's (a comparison by date), None: the model's


class ChunkRecord(BaseModel):
    """One retrieved chunk as the context-relevance judge saw it (``rank`` 1-based, in the order given)."""

    rank: int
    id: str
    doc: str = ""  # the document id the chunk belongs to (what qrels name); "" when unknown
    relevant: bool
    p: float  # P(relevant)
    sole_source: bool = False  # relevant as the only chunk naming one of the question's names, not by p
    joined: bool = False  # relevant through the set stage (tied to a name of the question or to a relevant chunk)
    p_set: float | None = None  # the set stage's P(relevant), when a set signal applies


class FaithfulnessEvidence(BaseModel):
    """What the ``faithfulness`` evaluator hands to the record (the reason of its label ``faithfulness_kind``,
    as JSON)."""

    claims: list[ClaimRecord] = Field(default_factory=list)
    model_calls: int = 0

    def record_fields(self) -> dict[str, Any]:
        return {"claims": self.claims}


class ContextEvidence(BaseModel):
    """What the ``context_relevance`` evaluator hands to the record (the reason of its label
    ``context_relevance_kind``, as JSON)."""

    chunks: list[ChunkRecord] = Field(default_factory=list)
    first_relevant_rank: int | None = None
    model_calls: int = 0

    def record_fields(self) -> dict[str, Any]:
        return {"chunk_relevance": self.chunks, "first_relevant_rank": self.first_relevant_rank}


#: evaluator label whose reason carries the evidence as JSON (pydantic-evals' results are scalars; a reason is
#: kept in report.json but not printed) -> its evidence type; ``record_from_case`` reads it into typed fields
EVIDENCE_LABELS: dict[str, type[FaithfulnessEvidence] | type[ContextEvidence]] = {
    "faithfulness_kind": FaithfulnessEvidence,
    "context_relevance_kind": ContextEvidence,
}


class JudgeCost(BaseModel):
    """What judging one case cost one judge: ``seconds``, the wall time its evaluator took for the case (waiting
    for a model another case or judge holds included), and ``calls``, the model calls it actually made
    (``models.meter``: forward passes of an embedded model, requests sent to a served one, texts embedded; 0 when
    every answer came from a cache or no model was needed)."""

    seconds: float
    calls: int = 0
    #: when the judge began on the case (Unix seconds); None in records written before it was kept. The judges of
    #: one case run at once (pydantic-evals runs a case's evaluators concurrently), so a case's judging took the
    #: span its judges' intervals cover (``results.judging``), not the sum of their seconds
    started: float | None = None


#: a judge that costs time adds the label ``<judge>`` + ``COST_SUFFIX`` to its results (``judge_cost_result``);
#: its reason is the ``JudgeCost`` as JSON, read into the record's ``judge_cost`` (never a ``judge_labels`` entry)
COST_SUFFIX = "_cost"


def judge_cost_result(judge: str, cost: JudgeCost) -> dict[str, EvaluationReason]:
    """The evaluator result that carries ``cost`` (``COST_SUFFIX``): a label, "model" when the judge made a model
    call for the case, "no model call" when not (cached, or decided without a model)."""
    value = "model" if cost.calls else "no model call"
    return {judge + COST_SUFFIX: EvaluationReason(value, reason=cost.model_dump_json())}


def is_cost_label(name: str) -> bool:
    """Whether an evaluator label carries a judge's cost (``judge_cost_result``), not a judge's label."""
    return name.endswith(COST_SUFFIX)


def judge_costs(reasons: dict[str, str | None]) -> dict[str, JudgeCost]:
    """judge -> its cost, from the reasons of the cost labels among ``reasons`` (label -> reason; an unreadable one
    is left out)."""
    costs: dict[str, JudgeCost] = {}
    for name, reason in reasons.items():
        if not is_cost_label(name) or not reason:
            continue
        try:
            costs[name.removesuffix(COST_SUFFIX)] = JudgeCost.model_validate_json(reason)
        except ValidationError:
            continue
    return costs


class QARecord(BaseModel):
    status: Literal["ok", "failed", "skipped"] = "skipped"
    error: str | None = None
    raw_text: str | None = None
    mode: str | None = None


class JudgeError(BaseModel):
    evaluator: str
    error: str


class CaseRecord(BaseModel):
    schema_version: int = Field(default=SCHEMA, alias="schema")
    name: str
    case: str = ""  # the source case name (== name unless --repeat)
    repeat: int = 0
    query: str = ""
    tags: list[str] = Field(default_factory=list)
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    retrieved: list[str] = Field(default_factory=list)
    scores: list[float | None] = Field(default_factory=list)  # None: a user's system gave no score
    relevant: dict[str, int] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)
    qa: QARecord = Field(default_factory=QARecord)
    answer: dict[str, Any] | None = None
    gold_answers: list[str] = Field(default_factory=list)
    answerable: bool = True
    label: bool | None = None
    judges: dict[str, bool | float] = Field(default_factory=dict)
    judge_reasons: dict[str, str] = Field(default_factory=dict)
    judge_labels: dict[str, str] = Field(default_factory=dict)  # e.g. answer_kind: the non-answer screen's kind
    judge_errors: list[JudgeError] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)
    context_text: str | None = None
    latency_ms: dict[str, float] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)
    tier: str | None = None
    model: str | None = None
    # the reference-free judges' evidence (None: the judge did not run on this case; left out of the line then)
    claims: list[ClaimRecord] | None = None
    chunk_relevance: list[ChunkRecord] | None = None
    first_relevant_rank: int | None = None
    reference_free_calls: int | None = None  # model forward passes the reference-free judges made for this case
    # judge -> what judging this case cost it (``JudgeCost``; None, left out of the line: no judge measured itself,
    # e.g. a record made before this field)
    judge_cost: dict[str, JudgeCost] | None = None
    # a user's system: its retrieved ids that are not in the corpus (None, left out of the line: the built-in
    # pipeline, or a record made before this field)
    unknown_ids: list[str] | None = None

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    @property
    def has_relevant(self) -> bool:
        return any(g > 0 for g in self.relevant.values())

    @property
    def failed_stages(self) -> list[str]:
        """The stages that failed for this case: "retrieval", "qa", "judge"."""
        stages = []
        if self.status == "failed":
            stages.append("retrieval")
        if self.qa.status == "failed":
            stages.append("qa")
        if self.judge_errors:
            stages.append("judge")
        return stages

    def dump_line(self) -> str:
        unset = {k for k in _OPTIONAL_EVIDENCE if getattr(self, k) is None}
        if self.chunk_relevance is not None:
            unset.discard("first_relevant_rank")  # None there says: no chunk was judged relevant
        return self.model_dump_json(by_alias=True, exclude=unset) + "\n"


_OPTIONAL_EVIDENCE = ("claims", "chunk_relevance", "first_relevant_rank", "reference_free_calls", "judge_cost",
                      "unknown_ids")


def evidence_fields(reasons: dict[str, str | None]) -> dict[str, Any]:
    """The record fields of the evidence in the reasons of ``EVIDENCE_LABELS`` labels (label -> its reason; an
    unreadable one is left out): ``claims``, ``chunk_relevance``, ``first_relevant_rank``, ``reference_free_calls``;
    and ``judge_cost`` from the cost labels (``judge_costs``)."""
    fields: dict[str, Any] = {}
    calls = 0
    for name, kind in EVIDENCE_LABELS.items():
        if not reasons.get(name):
            continue
        try:
            evidence = kind.model_validate_json(str(reasons[name]))
        except ValidationError:
            continue
        calls += evidence.model_calls
        fields.update(evidence.record_fields())
    if fields:
        fields["reference_free_calls"] = calls
    if costs := judge_costs(reasons):
        fields["judge_cost"] = costs
    return fields


def results_fields(results: dict[str, Any]) -> dict[str, Any]:
    """The record fields (``judges``, ``judge_reasons``, ``judge_labels`` and the evidence) of evaluator results
    made outside a pydantic-evals run (``scoring.logs``), read as ``record_from_case`` reads a case's: a text is a
    label, a number or boolean a judge value (an ``EvaluationReason``'s reason kept)."""
    judges: dict[str, bool | float] = {}
    reasons: dict[str, str] = {}
    labels: dict[str, str] = {}
    label_reasons: dict[str, str | None] = {}
    for name, result in results.items():
        value, reason = getattr(result, "value", result), getattr(result, "reason", None)
        if isinstance(value, str):
            label_reasons[name] = reason
            if not is_cost_label(name):
                labels[name] = value
            continue
        judges[name] = value if isinstance(value, bool) else float(value)
        if reason:
            reasons[name] = reason
    return {"judges": judges, "judge_reasons": reasons, "judge_labels": labels, **evidence_fields(label_reasons)}


def _metadata(value: Any) -> CaseMetadata:
    return value if isinstance(value, CaseMetadata) else CaseMetadata.model_validate(value or {"query_id": ""})


def _query(inputs: Any) -> str:
    return inputs.query if hasattr(inputs, "query") else (inputs or {}).get("query", "")


def _repeat_index(name: str, source: str | None) -> int:
    """pydantic-evals names repeats ``"<case> [i/N]"``; 0-based i, 0 without repeats."""
    if not source or not name.endswith("]") or "[" not in name:
        return 0
    try:
        return int(name.rsplit("[", 1)[1].split("/", 1)[0]) - 1
    except ValueError:
        return 0


def record_from_case(case: ReportCase | ReportCaseFailure) -> CaseRecord:
    meta = _metadata(case.metadata)
    common = dict(
        name=case.name, case=case.source_case_name or case.name,
        repeat=_repeat_index(case.name, case.source_case_name), query=_query(case.inputs), tags=meta.tags,
        relevant=meta.relevant, gold_answers=meta.answers, answerable=meta.answerable, label=meta.label,
    )
    if isinstance(case, ReportCaseFailure):
        return CaseRecord(status="failed", error=case.error_message, **common)
    out = case.output if isinstance(case.output, CaseOutput) else CaseOutput.model_validate(case.output)
    scores = {k: v.value for k, v in case.scores.items()}
    judges: dict[str, bool | float] = {k: v for k, v in scores.items() if not is_retrieval_metric(k)}
    judges.update({k: bool(v.value) for k, v in case.assertions.items()})
    reasons = {k: v.reason for k, v in {**case.scores, **case.assertions}.items()
               if v.reason and not is_retrieval_metric(k)}
    return CaseRecord(
        retrieved=out.documents, scores=out.scores,
        metrics={k: float(v) for k, v in scores.items() if is_retrieval_metric(k)},
        qa=QARecord(status=out.qa_status, error=out.qa_error, raw_text=out.raw_text, mode=out.qa_mode),
        answer=out.answer.model_dump() if out.answer else None,
        judges=judges, judge_reasons=reasons,
        judge_labels={k: str(v.value) for k, v in case.labels.items() if not is_cost_label(k)},
        **evidence_fields({k: v.reason for k, v in case.labels.items()}),
        judge_errors=[JudgeError(evaluator=f.name, error=f.error_message) for f in case.evaluator_failures],
        context=[c.chunk_id for c in out.chunks], context_text=out.context_text,
        latency_ms=out.latency_ms, usage=out.usage, tier=out.tier, model=out.model, unknown_ids=out.unknown_ids,
        **common,
    )
