"""A run as typed data: ``RunSummary`` (``summary.json``), ``CaseRecord`` (``cases.jsonl``) and ``RunData`` (both,
with the folder), and THE reader of a run folder, ``load_run``.

``RunSummary`` is the JSON ``summarize`` writes, field for field (the names on disk are unchanged). Every model
keeps keys it does not declare (``extra="allow"``) and gives every field a default, so summaries written by older
versions, and sections a later version adds, still load; ``dump_json`` writes back only what was set, so a summary
read and written again is the same JSON.

A case may appear several times in ``cases.jsonl`` (``repeat`` 0..N-1): ``RunData.records`` keeps every record in
file order and ``RunData.cases`` groups them by case name. Nothing here imports the run pipeline.
"""

from __future__ import annotations

import json
import math
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluations.core.errors import EvaluationsError
from evaluations.results.records import SYSTEM_ANSWER, CaseRecord

Number = int | float


class _Open(BaseModel):
    """A section of summary.json: declared fields typed, unknown (older/newer) keys kept as they are."""

    model_config = ConfigDict(extra="allow")


class Distribution(_Open):
    n: int = 0
    mean: Number | None = None
    p50: Number | None = None
    p95: Number | None = None
    p99: Number | None = None
    max: Number | None = None


class LatencySummary(_Open):
    p50: Number | None = None
    p95: Number | None = None
    p99: Number | None = None
    mean: Number | None = None
    by_stage: dict[str, Distribution] = Field(default_factory=dict)


class JudgeCalls(_Open):
    mean: Number = 0.0  # model calls per case judged
    total: int = 0  # in the whole run


class JudgeCostSummary(_Open):
    """One judge's cost (``results.judging``): ``cases`` it measured, wall ``seconds`` per case, model ``calls``."""

    cases: int = 0
    seconds: Distribution = Field(default_factory=Distribution)
    calls: JudgeCalls = Field(default_factory=JudgeCalls)


class JudgingSummary(_Open):
    """What judging cost (``results.judging``): per judge, and in all beside the answer stage's seconds."""

    judges: dict[str, JudgeCostSummary] = Field(default_factory=dict)
    seconds: Number = 0.0
    judge_seconds: Number | None = None
    calls: int = 0
    answering_seconds: Number | None = None
    judging_per_answering: Number | None = None


class Counts(_Open):
    cases: int = 0
    complete: int = 0
    incomplete: int = 0
    failed: int = 0
    qa_failed: int = 0
    judge_failed: int = 0
    no_relevant: int = 0
    evaluator_failures: int = 0
    evaluated_retrieval: int = 0


class JudgeSummary(_Open):
    """One judge: ``mean``/``n`` over the answers it judged; a verdict judge also has its accuracy over every case
    to answer (``measures.answer_accuracy``)."""

    mean: Number = 0.0
    n: int = 0
    accuracy: Number | None = None
    correct: int | None = None
    n_cases: int | None = None
    judged: int | None = None
    unanswerable_included: int | None = None
    unanswerable_left_out: int | None = None

    @property
    def value(self) -> float | None:
        """The judge's run value: a verdict's accuracy when recorded (failed and empty answers count as
        incorrect), else its mean over the judged answers (scores; older run folders)."""
        return self.accuracy if "accuracy" in self.model_fields_set else self.mean


class Disagreements(_Open):
    n: int = 0
    of: int = 0
    judges: list[str] = Field(default_factory=list)
    cases: list[str] = Field(default_factory=list)


class Tokens(_Open):
    input: Distribution = Field(default_factory=Distribution)
    output: Distribution = Field(default_factory=Distribution)
    total_input: int = 0
    total_output: int = 0
    per_query: Number | None = None
    per_correct_answer: Number | None = None


class Cost(_Open):
    per_query: Number | None = 0.0  # None: no case's tokens and price are known (no usage reported, no price)
    total: Number | None = 0.0  # None: no case has a known cost
    # the run's model's USD per 1M {"input", "output"} tokens; None: unknown (a served model without a config
    # price, a user's system); absent from a summary written before prices could be unknown: 0
    price_per_1m_tokens: dict[str, Number] | None = Field(default_factory=dict)
    # a user's system: the config's prices of the models / tiers its replies named ("provider:name" or tier)
    prices: dict[str, dict[str, Number]] = Field(default_factory=dict)
    unpriced: int = 0  # cases with known tokens and no known price: left out of per_query and total


def _usd(price: dict[str, Number]) -> tuple[float, float]:
    """A price record ({"input", "output"} USD per 1M tokens; a missing one 0) as (input, output)."""
    return float(price.get("input") or 0.0), float(price.get("output") or 0.0)


class AnswersSummary(_Open):
    judges: dict[str, JudgeSummary] = Field(default_factory=dict)
    judge_errors: dict[str, int] = Field(default_factory=dict)
    attempted: int = 0
    answered: int = 0
    to_answer: int | None = None
    answered_non_empty: int = 0
    answered_rate: Number | None = None
    cases_to_answer: dict[str, int] = Field(default_factory=dict)
    qa_failed: int = 0
    output_modes: dict[str, int] = Field(default_factory=dict)
    primary_judge: str | None = None
    primary_chosen_by: str | None = None
    primary_validation: dict[str, Any] | None = None
    disagreements: Disagreements = Field(default_factory=Disagreements)
    correct: int = 0
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: Cost = Field(default_factory=Cost)


class Segment(_Open):
    cases: int = 0
    metrics: dict[str, Number] = Field(default_factory=dict)


class DatasetInfo(_Open):
    name: str | None = None
    source: str | None = None
    documents: int | None = None
    queries: int | None = None
    fingerprint: str | None = None


class RunInfo(_Open):
    started: str | None = None
    seconds: Number | None = None
    resumed: bool = False
    dataset: str | None = None
    source: str | None = None
    search_mode: str | None = None
    embedder: str | None = None


class RunSummary(_Open):
    """``summary.json`` (see ``results.summary`` for how each number is made)."""

    name: str = ""
    metrics: dict[str, Number] = Field(default_factory=dict)
    latency_ms: LatencySummary = Field(default_factory=LatencySummary)
    #: what judging cost per judge (``results.judging``; absent: no record carries a judge's cost)
    judging: JudgingSummary | None = None
    counts: Counts = Field(default_factory=Counts)
    averaging: str = ""
    analyses: list[dict[str, Any]] = Field(default_factory=list)
    answers: AnswersSummary | None = None
    segments: dict[str, Segment] = Field(default_factory=dict)
    repeats: dict[str, Any] | None = None
    warnings: list[dict[str, Any]] = Field(default_factory=list)
    unknown_ids: dict[str, Any] | None = None  # a user's system: retrieved ids not in the corpus (results.summary)
    tiers: dict[str, int] = Field(default_factory=dict)
    dataset: DatasetInfo = Field(default_factory=DatasetInfo)
    index: dict[str, Any] = Field(default_factory=dict)
    run: RunInfo = Field(default_factory=RunInfo)
    config: dict[str, Any] | None = None
    config_source: str | None = None
    model_calls: dict[str, Any] = Field(default_factory=dict)
    calibration: dict[str, Any] | None = None
    #: the judged figures corrected by a person's labels (``review.corrected``; absent without labels)
    corrected: dict[str, Any] | None = None

    @property
    def primary_judge(self) -> str | None:
        return self.answers.primary_judge if self.answers else None

    @property
    def price(self) -> tuple[float, float] | None:
        """USD per 1M input/output tokens recorded for the run (0, 0 when absent; None: unknown)."""
        prices = self.answers.cost_usd.price_per_1m_tokens if self.answers else {}
        return None if prices is None else _usd(prices)

    def price_of(self, record: CaseRecord) -> tuple[float, float] | None:
        """The price of a case's tokens: that of the model its system's reply named, else of its tier (``prices``);
        else, for an answer of the built-in QA agent, the run's (``price``); None: unknown (a user's system's answer
        naming no priced model)."""
        named = self.answers.cost_usd.prices if self.answers else {}
        for key in (record.model, record.tier):
            if key and key in named:
                return _usd(named[key])
        return None if record.qa.mode == SYSTEM_ANSWER else self.price

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of summary.json (only the keys the summary was made or read with)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def dump_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)


class RunData(BaseModel):
    """One run: its folder, summary and case records (``label`` names it in comparisons when names clash)."""

    path: Path = Path(".")
    summary: RunSummary = Field(default_factory=RunSummary)
    records: list[CaseRecord] = Field(default_factory=list)
    label: str = ""
    #: cut-offs whose retrieval metrics a failed case scores 0 at even when no record has them (summarize sets it)
    ks: list[int] = Field(default_factory=list)

    def model_post_init(self, _: Any) -> None:
        self.label = self.label or self.name

    @property
    def name(self) -> str:
        return self.summary.name or self.path.name

    @property
    def dataset(self) -> DatasetInfo:
        return self.summary.dataset

    @cached_property
    def cases(self) -> dict[str, list[CaseRecord]]:
        """case name -> its records (one per repeat), in file order."""
        out: dict[str, list[CaseRecord]] = {}
        for record in self.records:
            out.setdefault(record.case or record.name, []).append(record)
        return out

    def tags(self) -> dict[str, set[str]]:
        """tag -> names of the cases carrying it."""
        out: dict[str, set[str]] = {}
        for name, records in self.cases.items():
            for tag in records[0].tags:
                out.setdefault(str(tag), set()).add(name)
        return out


_REWRITE = "the run was interrupted mid-write or the file was edited; re-run it (or --resume it)"


def _read_records(path: Path) -> list[CaseRecord]:
    """The case records of ``cases.jsonl``: each line valid UTF-8 and a case record, its metric values finite,
    each (case, repeat) once; EvaluationsError naming the line otherwise (a NaN would drop the case from every
    mean, and a duplicate would count twice, both without a word)."""
    records, seen = [], {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EvaluationsError(f"not valid UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1})",
                                       where=where, fix=_REWRITE) from None
            if not line.strip():
                continue
            try:
                record = CaseRecord.model_validate_json(line)
            except ValidationError as exc:
                invalid_json = any(e["type"] == "json_invalid" for e in exc.errors())
                problem = "not valid JSON" if invalid_json else f"not a case record ({exc.errors()[0]['msg']})"
                raise EvaluationsError(problem, where=where, fix=_REWRITE) from None
            bad = [k for k, v in record.metrics.items() if not math.isfinite(v)]
            if bad:
                raise EvaluationsError(f"metric {bad[0]!r} is {record.metrics[bad[0]]}, not a finite number",
                                       where=where, fix=_REWRITE)
            key = (record.case or record.name, record.repeat)
            if key in seen:
                raise EvaluationsError(f"case {key[0]!r} (repeat {key[1]}) is recorded twice, first on line "
                                       f"{seen[key]}", where=where, fix=_REWRITE)
            seen[key] = number
            records.append(record)
    return records


def _check_count(records: list[CaseRecord], summary: RunSummary, folder: Path) -> None:
    """``cases.jsonl`` holds as many records as ``summary.json`` counts (when it counts them): a file cut at a line
    boundary, or emptied, would otherwise be read as a smaller run."""
    if "counts" in summary.model_fields_set and summary.counts.cases != len(records):
        raise EvaluationsError(f"cases.jsonl has {len(records)} case records but summary.json counts "
                               f"{summary.counts.cases}", where=str(folder),
                               fix="the folder was edited or partly copied; re-run it (or copy it whole)")


#: the keys every summary.json has had since the first version: a file without one is damaged, not old
SUMMARY_KEYS = ("metrics", "latency_ms", "counts")


def read_summary(path: Path) -> RunSummary:
    """``summary.json`` of any schema version (unknown keys kept, missing ones defaulted, except ``SUMMARY_KEYS``:
    one missing is a damaged file, which gate and report would otherwise read differently); UTF-8, a BOM allowed."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise EvaluationsError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line})", where=str(path),
                               fix="re-run to rewrite summary.json") from None
    try:
        summary = RunSummary.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = f"{path}" + (f" ({'.'.join(map(str, first['loc']))})" if first["loc"] else "")
        problem = "not valid JSON" if first["type"] == "json_invalid" else f"not a run summary ({first['msg']})"
        raise EvaluationsError(problem, where=where, fix="re-run to rewrite summary.json") from None
    if missing := [key for key in SUMMARY_KEYS if key not in summary.model_fields_set]:
        raise EvaluationsError(f"not a run summary: no {', '.join(map(repr, missing))}", where=str(path),
                               fix="the file was edited or cut; re-run to rewrite summary.json")
    return summary


def load_run(path: str | Path) -> RunData:
    """Read ``path/summary.json`` and ``path/cases.jsonl``; EvaluationsError naming the missing/bad file."""
    folder = Path(path)
    summary_path, cases_path = folder / "summary.json", folder / "cases.jsonl"
    for needed in (summary_path, cases_path):
        if not needed.is_file():
            raise EvaluationsError(f"{needed.name} not found: not a run folder", where=str(folder),
                                   fix="give the --out folder of a finished `evaluations` run")
    summary, records = read_summary(summary_path), _read_records(cases_path)
    _check_count(records, summary, folder)
    return RunData(path=folder, summary=summary, records=records)


def label_runs(runs: list[RunData]) -> None:
    """Give every run a unique label: its summary name, else its folder name, else ``name#i``."""
    names = [r.name for r in runs]
    for i, run in enumerate(runs):
        label = run.name
        if names.count(label) > 1:
            label = run.path.name
            if [r.path.name for r in runs].count(label) > 1:
                label = f"{run.name}#{i + 1}"
        run.label = label
