"""``CaseRecord``: the one per-case contract, written to ``cases.jsonl`` and read by everything downstream.

A record is derived from pydantic-evals' own ``ReportCase`` (the task ran) or ``ReportCaseFailure`` (the task
raised: the case's retrieval / system call itself failed). Stages fail separately:

- ``status``: "ok" | "failed" — whether the system produced a retrieval result at all;
- ``qa.status``: "ok" | "failed" | "skipped" — the answer stage; on failure ``qa.error`` and ``qa.raw_text``
  (what the model actually said) are kept and the retrieval fields stay intact;
- ``judge_errors``: evaluators (judges) that raised for this case; the other verdicts stay.

Schema version ``SCHEMA``; older records (version 1: no ``qa`` block) still load.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_evals.reporting import ReportCase, ReportCaseFailure

from evaluations.core.types import CaseMetadata, CaseOutput
from evaluations.results.retrieval_metrics import is_retrieval_metric

SCHEMA = 2

#: latency stages every case may record, in report order (a system may add its own after these)
STAGES = ("embed", "retrieve", "rerank", "llm", "total")

#: the answer judges whose per-case value is a verdict (accuracy over all cases, failed = incorrect)
#: the assertion names the judges emit (JudgeAgreement's default set, plus any ``*_correct`` assertion);
#: ``llm_judge`` is the LLM judge's verdict (served: ``judging.llm``, embedded: ``judging.embedded``)
VERDICT_NAMES = (
    "keyword_correct", "exact_match", "contains_gold", "semantic_correct", "offline_correct", "llm_judge",
    "combined_correct",
)

#: reference-free verdicts (no gold needed: ``answer_relevance``, ``judging.relevance``): a verdict on every case
#: to answer, gold or not (``measures.verdict_outcome``); not correctness, so neither a primary judge nor compared
#: with correctness labels
REFERENCE_FREE_VERDICTS = ("answer_relevance",)


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
    scores: list[float] = Field(default_factory=list)
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
        return self.model_dump_json(by_alias=True) + "\n"


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
        judge_labels={k: str(v.value) for k, v in case.labels.items()},
        judge_errors=[JudgeError(evaluator=f.name, error=f.error_message) for f in case.evaluator_failures],
        context=[c.chunk_id for c in out.chunks], context_text=out.context_text,
        latency_ms=out.latency_ms, usage=out.usage, tier=out.tier, model=out.model, **common,
    )
