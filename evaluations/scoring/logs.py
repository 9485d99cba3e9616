"""Score JSONL logs of a production RAG system (schema: ``LogRecord``; JSON schema in
``datasets/schemas/log_record.schema.json``).

One line per *attempt* at answering a query. Attempts of one ``query_id`` are ordered by ``attempt`` when
every one has it, else by file order. A query seen again is a *retry*; a retry on a tier ranked above every
earlier attempt's tier is an *escalation*. Tier rank: ``tiers`` (e.g. ``--tiers small,large``) or, when not
given, the order in which tiers first appear in the file. A query's outcome is its last attempt.

Figures (N = queries, A = attempts):
* retrieval: ``results.retrieval_metrics.compute_all`` of the last attempt's ``retrieved`` ids (duplicates dropped,
  first rank kept) against the golden set's relevance, mean over queries with a relevant document (each query's
  outcome is a ``CaseRecord``; means by the measure registry, ``results.measures``, as a run's summary);
* correctness of an attempt: wrong when it failed (``error``), else its ``correct`` when logged, else
  ``keyword_correct(golden answers, answer)``; a query whose last attempt failed (``error``) or, in a log of
  answers, gave none is wrong when the golden set has answers for it (as a run's failed case is), and counted
  (``answers.failed``, ``answers.unanswered``);
* tokens per correct answer = (input + output tokens of all attempts) / (queries whose last attempt is correct);
* cost of an attempt: its ``cost_usd`` when logged, else ``input * price.input / 1e6 + output * price.output
  / 1e6`` with the price of its ``model`` (or else its ``tier``) in the config's ``prices``; cost per query =
  total cost / N;
* ``usage`` takes our ``input_tokens``/``output_tokens`` or OpenAI's ``prompt_tokens``/``completion_tokens``;
* unknown is never 0: an attempt without ``usage`` (or with one naming neither count) has unknown tokens, and one
  without a price or without ``usage`` (and no ``cost_usd``) an unknown cost; totals are over the known attempts
  (null when none is known), per-query figures null unless every attempt is known, and ``unreported_attempts`` /
  ``unpriced_attempts`` count the others;
* ``error`` empty or blank is no error; ``query_id`` may be an integer (its decimal text, as a golden id), not a
  float or boolean;
* a row naming a field as another tool does (``ALIASES``: ``question``, ``contexts``, ``response``, …) without ours
  is an error naming the rename, not a figure silently missing;
* context waste of an attempt (``judging.grounded.grounding.context_waste``): the share of the context's tokens from
  spans that are not relevant; the context is ``context`` (ids) or all ``retrieved``; when some context span
  has no text the share is of spans instead of tokens (``basis`` says which); rows whose ``context`` names items
  that are not among their retrieved ids (texts instead of ids) are counted in a warning;
* tier usage: attempts and last attempts per tier; escalation rate = escalated queries / N;
  retry rate = queries with more than one attempt / N;
* calibration (``results.confidence.calibration``) of ``confidence`` against correctness over all attempts with both;
* a query's outcome is a ``CaseRecord`` as a run's case is: a failed last attempt (``error``) is a failed case
  with its error kept (``status``/``error``; counted as failed by every answer judge, never left out); in a log of
  answers every query is one to answer, and a last attempt that logged no answer gave an empty one (faithfulness
  not applicable, answer relevance 0, as for a run's system returning ""); ``scores`` are the spans' logged
  scores.
* answer relevance (``judging.grounded.answer_relevance.judge_answer_relevance``: the rules and the naming screen,
  no gold needed; when ``reference_free`` lists it, as
  ``judge.reference_free`` does by default) of each query's last attempt that logged its ``query`` and did not
  fail, with the text of its ``context`` spans (else of all ``retrieved`` spans) as the context: 1 or 0 per
  query, the mean with n and a 95% CI (``results.reference_free.score_summary``: ``not_applicable``, ``failed``
  and how many of each kind).
* faithfulness and context relevance (``reference_free``, default none; the CLI passes ``judge.reference_free``)
  of each query's last attempt that logged its ``query``, from the same context spans (a span without text is
  left out) and the same answer, as in a run (``evaluators.reference_free``); all reference-free metrics are
  summarised as a run's (``results.reference_free``: the ``reference_free`` section).
* span text: a span logged as an id only is looked up in a corpus when one is given (``texts``, the CLI's
  ``--corpus``; the lookup a run makes for a system's ids, ``core.types.corpus_text``); ``context_text`` counts the
  queries judged whose context has a span without text (faithfulness and context relevance leave such a span out,
  answer relevance judges without it) and, with a corpus, the retrieved ids it does not hold; ``warnings`` says
  both.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, field_validator
from pydantic_core import PydanticCustomError

from evaluations.datasets.rows import iter_rows
from evaluations.systems.callable import ID_ALIASES
from evaluations.core.errors import EvaluationsError, field_errors
from evaluations.core.types import corpus_text
from evaluations.judging.correctness.lexical import keyword_correct
from evaluations.judging.grounded.grounding import context_waste
from evaluations.judging.grounded.answer_relevance import judge_answer_relevance
from evaluations.judging.grounded.naming import Naming
from evaluations.judging.correctness.embedded import verdict_cache
from evaluations.judging.correctness.semantic import cache_file
from evaluations.results import measures
from evaluations.results.confidence import calibration
from evaluations.results.records import SYSTEM_ANSWER, CaseRecord, JudgeError, QARecord, results_fields
from evaluations.results.reference_free import language_warning, reference_free_summary, score_summary
from evaluations.results.retrieval_metrics import compute_all
from evaluations.results.rundata import RunData
from evaluations.results.summary import retrieval_means

#: the judge name of a query's final correctness in the records the figures are averaged over (a score in the
#: registry: its mean is over the judged queries, the log's own definition of accuracy)
FINAL_CORRECT = "correct"  # not a verdict name (is_verdict_name): no answer-stage rule applies


class LoggedSpan(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(description="Span or document id, as in the golden set.")
    text: str | None = Field(default=None, description="The span's text (for token-based context waste).")
    score: float | None = None


#: the token counts a ``usage`` may name: ours, then OpenAI's (a system's reply may use either, ``systems.base``)
INPUT_TOKENS, OUTPUT_TOKENS = ("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")


class LogUsage(BaseModel):
    # token counts of one attempt, in our names or OpenAI's (no docstring: it would change the published schema)
    model_config = ConfigDict(extra="allow")

    input_tokens: int = Field(default=0, ge=0, validation_alias=AliasChoices(*INPUT_TOKENS))
    output_tokens: int = Field(default=0, ge=0, validation_alias=AliasChoices(*OUTPUT_TOKENS))


class LogRecord(BaseModel):
    """One attempt of a production RAG system at one query."""

    model_config = ConfigDict(extra="allow", title="evaluations production log record")

    # an integer id is read as its decimal text (``_id_as_text``), so the published schema allows both
    query_id: Annotated[str, WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "integer"}]})] = Field(
        description="Id of the query; the golden set's id (an integer is read as its decimal text).")
    query: str | None = None
    attempt: int | None = Field(default=None, ge=0, description="Order of this attempt for the query (0-based).")
    timestamp: str | None = None
    tier: str | None = Field(default=None, description="Model tier used, e.g. 'small', 'large'.")
    model: str | None = Field(default=None, description="'provider:name', priced from the config's prices.")
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, description="The router's confidence.")
    retrieved: list[str | LoggedSpan] = Field(default_factory=list, description="Ranked span/document ids, best first.")
    context: list[str] | None = Field(default=None, description="Ids of the retrieved spans given to the model.")
    answer: str | None = None
    correct: bool | None = Field(default=None, description="Logged success (feedback); else judged on golden answers.")
    usage: LogUsage | None = None
    cost_usd: float | None = Field(default=None, ge=0.0)
    latency_ms: float | dict[str, float] | None = Field(
        default=None, description="Milliseconds: a number, or per stage as a system's reply gives it ('total', "
                                  "else the sum of the stages).")
    error: str | None = Field(default=None, description="The attempt failed (e.g. 'HTTP 500'): counted as failed, "
                                                        "its answer wrong.")

    @field_validator("query_id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        """An integer id is its decimal text, as a dataset or golden file's id is (``1`` matches the golden ``1``);
        a float or boolean is refused: ``1.0`` or ``true`` as text would match no golden id."""
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, (bool, float)):
            raise PydanticCustomError("query_id_type", "must be a string or an integer (the golden set's id, e.g. "
                                      "\"q1\" or 7), got {kind} {value}",
                                      {"kind": type(value).__name__, "value": json.dumps(value)})
        return value

    @field_validator("usage", mode="before")
    @classmethod
    def _usage_reported(cls, value: Any) -> Any:
        """A ``usage`` naming no token count (``{}``, only ``total_tokens``) reports nothing: unknown tokens (None),
        never 0."""
        if isinstance(value, dict) and not value.keys() & {*INPUT_TOKENS, *OUTPUT_TOKENS}:
            return None
        return value

    @field_validator("error")
    @classmethod
    def _blank_error_is_none(cls, value: str | None) -> str | None:
        """An empty or blank ``error`` is no error (a logger that always writes the field): not a failed attempt."""
        return value if value and value.strip() else None

    def spans(self) -> list[LoggedSpan]:
        return [LoggedSpan(id=s) if isinstance(s, str) else s for s in self.retrieved]

    def total_ms(self) -> float | None:
        if isinstance(self.latency_ms, dict):
            return self.latency_ms.get("total", sum(self.latency_ms.values()))
        return self.latency_ms


@dataclass(frozen=True, slots=True)
class Gold:
    relevant: dict[str, int]
    answers: list[str]


#: what other tools call a log's fields (RAGAS, DeepEval, LangChain): a row with one of these and not ours is a
#: problem naming the rename (the field would otherwise be ignored and the figure silently missing)
ALIASES: dict[str, tuple[str, ...]] = {
    "query": ("question", "user_input", "input"),
    "retrieved": ("contexts", "retrieved_contexts", "retrieval_context", "source_documents", "documents", "results",
                  "hits", "chunks", "passages"),
    "answer": ("response", "generated_answer", "actual_output", "output"),
}


def _misnamed(row: Any) -> list[str]:
    """``field 'X' is not read: rename it 'Y'`` for each of ``ALIASES`` a row has without ours."""
    if not isinstance(row, dict):
        return []
    shape = {"retrieved": ' as items {"id": ..., "text": ...} (a plain string is read as an id)'}
    misnamed = [f"field {alias!r} is not read: rename it {ours!r}{shape.get(ours, '')}"
                for ours, aliases in ALIASES.items() if ours not in row for alias in aliases if alias in row]
    items = row.get("retrieved")
    for n, item in enumerate(items if isinstance(items, list) else []):  # an item's id under another tool's name
        if isinstance(item, dict) and "id" not in item and (alias := next(
                (a for a in ID_ALIASES if a in item), None)) is not None:
            misnamed.append(f"field 'retrieved.{n}.{alias}' is not read: rename it 'id'")
            break
    return misnamed


def read_logs(path: str | Path) -> list[tuple[str, LogRecord]]:
    """(file:line, record) for every line; all schema problems reported together, one per line."""
    path = Path(path)
    records, problems = [], []
    for line, row in iter_rows(path):
        where = f"{path}:{line}"
        if misnamed := _misnamed(row):
            problems += [f"{where}: {problem}" for problem in misnamed]
            continue
        try:
            records.append((where, LogRecord.model_validate(row)))
        except ValidationError as exc:
            problems += [f"{where}: field '{key}': {msg}" for key, msg, _ in field_errors(exc.errors())]
    if problems:
        raise EvaluationsError(f"{len(problems)} problem(s) in the log:\n  " + "\n  ".join(problems[:30]),
                               where=str(path), fix="see datasets/schemas/log_record.schema.json")
    if not records:
        raise EvaluationsError("no log lines", where=str(path), fix="one JSON object per attempt")
    return records


def _ordered_groups(records: list[tuple[str, LogRecord]]) -> dict[str, list[LogRecord]]:
    groups: dict[str, list[LogRecord]] = {}
    for _, record in records:
        groups.setdefault(record.query_id, []).append(record)
    for qid, attempts in groups.items():
        if all(a.attempt is not None for a in attempts):
            groups[qid] = sorted(attempts, key=lambda a: a.attempt)
    return groups


def _query_usage(attempts: list[LogRecord]) -> dict[str, int]:
    """A query's tokens over all its attempts, as a case record's ``usage``; {} (unknown, never 0) unless every
    attempt reported them."""
    if any(a.usage is None for a in attempts):
        return {}
    reported = [a.usage for a in attempts if a.usage is not None]
    return {"input_tokens": sum(u.input_tokens for u in reported),
            "output_tokens": sum(u.output_tokens for u in reported)}


def _query_latency(attempts: list[LogRecord]) -> dict[str, float]:
    """A query's milliseconds over all its attempts (``total``), as a case record's ``latency_ms``; {} unless every
    attempt logged its latency."""
    times = [a.total_ms() for a in attempts]
    return {} if any(t is None for t in times) else {"total": float(sum(times))}  # type: ignore[arg-type]


def _first_spans(record: LogRecord) -> list[LoggedSpan]:
    """The retrieved spans in rank order, a repeated id's first rank kept."""
    first: dict[str, LoggedSpan] = {}
    for span in record.spans():
        first.setdefault(span.id, span)
    return list(first.values())


def _correct(record: LogRecord, gold: Gold | None) -> bool | None:
    """The attempt's correctness: logged, else judged on the golden answers; None when neither is known. A failed
    attempt (``error``) is wrong, whatever answer text it carries (``LogRecord.error``): never failed and correct."""
    if record.error is not None:
        return False if record.correct is not None or (gold is not None and gold.answers) else None
    if record.correct is not None:
        return record.correct
    if gold is not None and gold.answers and record.answer is not None:
        return keyword_correct(gold.answers, record.answer)
    return None


def _waste(record: LogRecord, gold: Gold | None) -> tuple[float, str] | None:
    relevant = {d for d, g in (gold.relevant if gold else {}).items() if g > 0}
    spans = {s.id: s for s in record.spans()}
    ids = record.context if record.context is not None else list(spans)
    if not relevant or not ids:
        return None
    if all(spans.get(i) is not None and spans[i].text for i in ids):
        value = context_waste([(spans[i].text, i in relevant) for i in ids])
        return (value, "tokens") if value is not None else None
    return sum(i not in relevant for i in ids) / len(ids), "spans"


def _ranked_spans(record: LogRecord) -> list[tuple[str, str]]:
    """(id, text) of the spans given to the model (``context`` ids), else of every retrieved span, in order; ""
    for a span without text."""
    spans = {s.id: s for s in record.spans()}
    ids = record.context if record.context is not None else list(spans)
    return [(i, (spans[i].text if i in spans else None) or "") for i in ids]


def _context_spans(record: LogRecord) -> list[tuple[str, str]]:
    """``_ranked_spans`` that have a text."""
    return [(i, text) for i, text in _ranked_spans(record) if text.strip()]


def _context_text(record: LogRecord) -> str:
    """The text of the context spans (``_context_spans``), "" when none."""
    return "\n\n".join(text for _, text in _context_spans(record))


def _relevance(finals: list[CaseRecord], lasts: list[LogRecord], answering: bool,
               cache: Path | None, naming: Naming) -> dict[str, Any]:
    """Answer relevance of each query's last attempt (module docstring; the answer ``_judged_answer`` gives), set
    in ``finals``' judges; ``cache``: the embedding cache file (None: none); ``naming``: the naming screen."""
    judged = [(f, a, answer) for f, a in zip(finals, lasts) if (answer := _judged_answer(a, answering)) is not None]
    results = judge_answer_relevance([(a.query or "", answer, _context_text(a), True) for _, a, answer in judged],
                                     naming, cache=cache)
    for (final, _, _), result in zip(judged, results):
        final.judges["answer_relevance"] = 1.0 if result.verdict else 0.0
        final.judge_reasons["answer_relevance"] = result.reason
        final.judge_labels["answer_relevance_kind"] = result.kind
    return score_summary(finals, "answer_relevance")


def _price(record: LogRecord, prices: dict[str, Any]) -> float | None:
    if record.cost_usd is not None:
        return record.cost_usd
    price = prices.get(record.model or "") or prices.get(record.tier or "")
    if price is None or record.usage is None:  # no price, or tokens not reported: an unknown cost, never 0 USD
        return None
    return record.usage.input_tokens * price.input / 1e6 + record.usage.output_tokens * price.output / 1e6


#: the kind of a reference-free judge on a logged query without its question text
NO_QUERY = "no_query"


def _judged_answer(record: LogRecord, answering: bool) -> str | None:
    """The answer the answer judges read for a query's last attempt: None when there is nothing to judge (a failed
    attempt, no ``query``, or a log of retrieval only); in a log of answers, an attempt that logged none gave an
    empty answer (as a run's system returning "" does: faithfulness not applicable, answer relevance 0)."""
    if record.error is not None or not record.query or not answering:
        return None
    return record.answer or ""


def _reference_free(record: LogRecord, answer: str | None, names: Sequence[str], cache: bool,
                    tools: Mapping[str, Any], cache_dir: str | None) -> dict[str, Any]:
    """The ``CaseRecord`` fields of the reference-free judges ``names`` on one logged attempt (module docstring);
    ``answer``: what the answer judges read (``_judged_answer``; None: faithfulness is not run); ``tools``: judge ->
    (checker, claim decomposition), ``evaluators.reference_free.reference_free_tools``; ``cache_dir``: the verdict
    store's folder (None: the default one)."""
    from evaluations.evaluators.cost import measuring, with_cost
    from evaluations.evaluators.reference_free import (
        context_relevance_results,
        faithfulness_results,
        ranked_passages,
    )

    if not record.query or not names:
        return {}
    query, passages = record.query, ranked_passages(_ranked_spans(record))
    results: dict[str, Any] = {}
    errors: list[JudgeError] = []
    judges: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    if "faithfulness" in names and answer is not None:
        scorer, decompose = tools.get("faithfulness", (None, None))
        judges.append(("faithfulness", lambda: faithfulness_results(
            query, answer, passages, cache=cache, scorer=scorer, decompose=decompose, cache_dir=cache_dir)))
    if "context_relevance" in names:
        checker, _ = tools.get("context_relevance", (None, None))
        judges.append(("context_relevance", lambda: context_relevance_results(
            query, passages, cache=cache, scorer=checker, cache_dir=cache_dir)))
    for name, judge in judges:
        try:
            with measuring() as cost:
                results.update(with_cost(judge(), name, cost()))
        except Exception as exc:  # noqa: BLE001 - as a run's evaluator failure: counted for this query, never a score
            errors.append(JudgeError(evaluator=name, error=f"{type(exc).__name__}: {exc}"))
    return {**results_fields(results), "judge_errors": errors}


def _with_corpus(record: LogRecord, texts: Mapping[str, str]) -> LogRecord:
    """``record`` with the text of each span logged as an id only looked up in the corpus (``texts``)."""
    spans = [s.model_copy(update={"text": corpus_text(s.text, texts, s.id) or None}) for s in record.spans()]
    return record.model_copy(update={"retrieved": spans})


def _context_report(lasts: list[LogRecord], records: list[tuple[str, LogRecord]], texts: Mapping[str, str] | None,
                    judged: bool) -> tuple[dict[str, Any], list[str]]:
    """``context_text`` (module docstring) and its warnings. ``judged``: some reference-free judge ran."""
    asked = [r for r in lasts if r.query]
    missing = 0
    for record in asked:
        spans = {s.id: s for s in record.spans()}
        ids = record.context if record.context is not None else list(spans)
        missing += any(not (spans.get(i) and spans[i].text and spans[i].text.strip()) for i in ids)
    report: dict[str, Any] = {"queries": len(asked), "without_text": missing, "corpus": texts is not None}
    warnings = []
    if judged and missing:
        warnings.append(f"{missing} of {len(asked)} queries have context spans without text (ids only): faithfulness "
                        "and context_relevance leave them out (not applicable when none has text) and answer_relevance"
                        " judges without them" + ("" if texts is not None else "; pass --corpus CORPUS to look the "
                                                                             "ids up"))
    if texts is not None:
        retrieved = [s.id for _, r in records for s in r.spans()]
        unknown = [i for i in retrieved if i not in texts]
        report.update({"retrieved": len(retrieved), "unknown_ids": len(unknown),
                       "unknown_examples": list(dict.fromkeys(unknown))[:5]})
        if unknown:
            warnings.append(f"{len(unknown)} of {len(retrieved)} retrieved ids are not in the corpus "
                            f"(e.g. {', '.join(map(repr, report['unknown_examples'][:3]))})")
    return report, warnings


def _context_not_retrieved(records: list[tuple[str, LogRecord]]) -> str | None:
    """A warning when rows name ``context`` items that are not among their own retrieved ids (passage texts written
    where ids belong, say), with their count and the first one: such an item is a span that is not relevant to
    context waste (1.0 for a context of texts) and has no text for the judges, a figure wrong without a word."""
    strays = []
    for where, record in records:
        ids = {s.id for s in record.spans()}
        stray = next((i for i in record.context or [] if i not in ids), None)
        if stray is not None:
            strays.append((where, stray))
    if not strays:
        return None
    where, item = strays[0]
    example = item if len(item) <= 60 else f"{item[:57]}..."
    return (f"{len(strays)} of {len(records)} log rows name context items that are not among their retrieved ids "
            f"(e.g. {example!r} at {where}): 'context' lists the ids of the retrieved spans given to the model, not "
            "their texts; such an item counts as an irrelevant span in context_waste and has no text for the judges")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def score_logs(path: str | Path, *, gold: dict[str, Gold] | None = None, ks: list[int] | None = None,
               prices: dict[str, Any] | None = None, tiers: list[str] | None = None, bins: int = 10,
               reference_free: Sequence[str] = (), cache: bool = True, texts: Mapping[str, str] | None = None,
               tools: Mapping[str, Any] | None = None, cache_dir: str | None = None, data_dir: str | None = None,
               progress: Callable[[int, int], None] | None = None) -> tuple[dict, list[CaseRecord]]:
    """The summary of one log file (module docstring) and each query's outcome as the ``CaseRecord`` the figures
    are made from (its last attempt: the answer, the context ids, the judges' values, labels and evidence: claims,
    chunk verdicts, first relevant rank), in the log's query order. ``reference_free``: the reference-free judges
    to run (``cache`` False: verdicts neither read from nor written to the verdict store; ``cache_dir``: the folder
    of the verdict store and the embedding cache, ``Config.judge_cache_dir``, None the default one); ``texts``: the
    corpus (id -> text) spans logged as ids are read from; ``tools``: the judges' checkers
    (``reference_free_tools``; default: the default embedded judge model); ``data_dir``: where the embedded judge
    model's file is, which answer relevance's naming screen reads (None: the default); ``progress``: called with
    (queries judged, queries) after each query (the judges' model calls are the slow part)."""
    records = read_logs(path)
    if texts is not None:
        records = [(where, _with_corpus(record, texts)) for where, record in records]
    gold, prices, ks = gold or {}, prices or {}, ks or [1, 3, 5, 10]
    groups = _ordered_groups(records)
    order = _tier_order(records, tiers, path)
    rank = {tier: i for i, tier in enumerate(order)}
    answering = any(r.answer is not None for _, r in records)  # a log of answers, not of retrieval only
    judge = _QueryJudge(reference_free=reference_free, cache=cache, tools=tools or {}, cache_dir=cache_dir, ks=ks,
                        answering=answering)

    totals = _Totals()
    finals: list[CaseRecord] = []  # each query's outcome (its last attempt), averaged by the measure registry
    lasts: list[LogRecord] = []
    for done, (qid, attempts) in enumerate(groups.items(), 1):
        g = gold.get(qid)
        totals.escalated += is_escalated(attempts, rank)
        totals.retried += len(attempts) > 1
        for attempt in attempts:
            totals.add(attempt, g, prices)
        last = attempts[-1]
        lasts.append(last)
        totals.tier_final[last.tier or "(none)"] += 1
        totals.failed += last.error is not None
        totals.unanswered += last.error is None and last.answer is None and answering
        finals.append(judge.record(qid, attempts, g))
        if progress is not None:
            progress(done, len(groups))

    n_queries, n_attempts = len(groups), len(records)
    final = RunData(records=finals)
    metrics, evaluated = retrieval_means(final)
    n_judged = sum(FINAL_CORRECT in r.judges for r in finals)
    n_correct = sum(r.judges.get(FINAL_CORRECT) is True for r in finals)
    summary: dict[str, Any] = {
        "format": "log",
        "file": str(path),
        "queries": n_queries,
        "attempts": n_attempts,
        "retrieval": {"queries": evaluated, "metrics": metrics},
        "answers": {"judged": n_judged, "correct": n_correct,
                    "accuracy": measures.record_means(final, [FINAL_CORRECT]).get(FINAL_CORRECT) if n_judged
                    else None,  # no gold and no logged ``correct``: nothing to judge correctness by
                    "failed": totals.failed, "unanswered": totals.unanswered},
        **totals.sections(order, n_queries, n_attempts, n_correct),
        "calibration": calibration(totals.confidences, totals.outcomes, bins),
    }
    if "answer_relevance" in reference_free:
        naming = Naming(cache=verdict_cache(cache, cache_dir), data_dir=data_dir)
        summary["answer_relevance"] = _relevance(finals, lasts, answering, cache_file(cache, cache_dir), naming)
    # the judges asked for have their entry even when no query got a verdict (every one failed); the answer judges
    # only where a query was one to answer (not in a log of retrieval only)
    asked = [n for n in reference_free if n == "context_relevance" or any(measures.to_answer(r) for r in finals)]
    if (judged_free := reference_free_summary(final, asked=asked)) is not None:
        summary["reference_free"] = judged_free
    summary["context_text"], warnings = _context_report(lasts, records, texts, judged=bool(reference_free))
    missing = [qid for qid in groups if qid not in gold] if gold else []  # counted, never silently left out
    if missing:
        summary["not_in_golden"] = {"queries": len(missing), "examples": missing[:5]}
    warnings += _warnings(records, finals, lasts, list(groups), missing, reference_free)
    if warnings:
        summary["warnings"] = warnings
    retrieved_ids = {s.id for _, r in records for s in r.spans()}
    gold_ids = {d for g in gold.values() for d in g.relevant}
    if gold and retrieved_ids and not (retrieved_ids & gold_ids):
        summary["warning"] = ("no retrieved id appears among the golden set's relevant ids: the ids of the log and "
                              f"of the golden set probably differ (log: {sorted(retrieved_ids)[:3]}, "
                              f"golden: {sorted(gold_ids)[:3]})")
    return summary, finals


def _tier_order(records: list[tuple[str, LogRecord]], tiers: list[str] | None, path: str | Path) -> list[str]:
    """The tiers cheapest first: ``--tiers`` (every logged tier must be in it), else in the order the log names
    them."""
    order = list(tiers or [])
    for _, record in records:
        if record.tier is not None and record.tier not in order:
            if tiers:
                raise EvaluationsError(f"tier {record.tier!r} is not in --tiers", where=str(path),
                                       fix=f"list every tier: --tiers {','.join([*order, record.tier])}")
            order.append(record.tier)
    return order


@dataclass
class _Totals:
    """What the attempts of a log add up to (tokens, cost, tiers, confidence against outcome, context waste,
    latency) and the queries' counts; ``sections`` gives their part of the summary."""

    tokens_in: int = 0
    tokens_out: int = 0
    unreported: int = 0  # attempts without usage: unknown tokens
    cost: float = 0.0
    unpriced: int = 0  # attempts without a price: unknown cost
    escalated: int = 0
    retried: int = 0
    failed: int = 0
    unanswered: int = 0
    confidences: list[float] = field(default_factory=list)
    outcomes: list[bool] = field(default_factory=list)
    wastes: list[float] = field(default_factory=list)
    bases: Counter = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    tier_attempts: Counter = field(default_factory=Counter)
    tier_final: Counter = field(default_factory=Counter)
    tier_tokens: Counter = field(default_factory=Counter)
    tier_cost: Counter = field(default_factory=Counter)
    tier_unpriced: Counter = field(default_factory=Counter)
    tier_unreported: Counter = field(default_factory=Counter)

    def add(self, attempt: LogRecord, gold: Gold | None, prices: dict[str, Any]) -> None:
        tier = attempt.tier or "(none)"
        self.tier_attempts[tier] += 1
        if attempt.usage is None:
            self.unreported += 1
            self.tier_unreported[tier] += 1
        else:
            self.tokens_in += attempt.usage.input_tokens
            self.tokens_out += attempt.usage.output_tokens
            self.tier_tokens[tier] += attempt.usage.input_tokens + attempt.usage.output_tokens
        cost = _price(attempt, prices)
        if cost is None:
            self.unpriced += 1
            self.tier_unpriced[tier] += 1
        else:
            self.cost += cost
            self.tier_cost[tier] += cost
        correct = _correct(attempt, gold)
        if attempt.confidence is not None and correct is not None:
            self.confidences.append(attempt.confidence)
            self.outcomes.append(correct)
        if (waste := _waste(attempt, gold)) is not None:
            self.wastes.append(waste[0])
            self.bases[waste[1]] += 1
        if attempt.total_ms() is not None:
            self.latencies.append(attempt.total_ms())

    def sections(self, order: list[str], n_queries: int, n_attempts: int, n_correct: int) -> dict[str, Any]:
        """The summary's tokens, cost_usd, context_waste, tiers, escalation and latency_ms."""
        tokens = self.tokens_in + self.tokens_out
        return {
            # an attempt without usage has unknown tokens, and one without a price an unknown cost: a total over the
            # others is given with their count, a per-query figure only when every attempt is known (never 0 for
            # unknown)
            "tokens": {"input": self.tokens_in if self.unreported < n_attempts else None,
                       "output": self.tokens_out if self.unreported < n_attempts else None,
                       "per_query": tokens / n_queries if not self.unreported else None,
                       "per_correct_answer": tokens / n_correct if n_correct and not self.unreported else None,
                       "unreported_attempts": self.unreported},
            "cost_usd": {"total": self.cost if self.unpriced < n_attempts else None,
                         "per_query": self.cost / n_queries if not self.unpriced else None,
                         "unpriced_attempts": self.unpriced},
            "context_waste": {"mean": _mean(self.wastes), "n": len(self.wastes), "basis": dict(self.bases)},
            "tiers": {
                "order": order,
                "attempts": {t: {"n": n, "share": n / n_attempts,
                                 "tokens": self.tier_tokens[t] if self.tier_unreported[t] < n else None,
                                 "cost_usd": self.tier_cost[t] if self.tier_unpriced[t] < n else None}
                             for t, n in self.tier_attempts.items()},
                "final": {t: {"n": n, "share": n / n_queries} for t, n in self.tier_final.items()},
            },
            "escalation": {"escalated_queries": self.escalated, "rate": self.escalated / n_queries,
                           "retried_queries": self.retried, "retry_rate": self.retried / n_queries,
                           "attempts_per_query": n_attempts / n_queries},
            "latency_ms": {"mean": _mean(self.latencies), "n": len(self.latencies)} if self.latencies else None,
        }


@dataclass(frozen=True)
class _QueryJudge:
    """One query's outcome, its last attempt, as the ``CaseRecord`` a run would keep: retrieval metrics against the
    golden set, correctness, and the reference-free judges' verdicts and evidence."""

    reference_free: Sequence[str]
    cache: bool
    tools: Mapping[str, Any]
    cache_dir: str | None
    ks: list[int]
    answering: bool

    def record(self, qid: str, attempts: list[LogRecord], g: Gold | None) -> CaseRecord:
        last = attempts[-1]
        outcome = _correct(last, g)
        if outcome is None and g is not None and g.answers and (last.error is not None or self.answering):
            outcome = False  # a failed or unanswered query is a wrong answer, as a failed case of a run is
        spans = _first_spans(last)
        ranking = [s.id for s in spans]
        answer = _judged_answer(last, self.answering)
        judged = _reference_free(last, answer, self.reference_free, self.cache, self.tools, self.cache_dir)
        if not last.query and last.error is None:  # nothing to judge by: said per judge, counted in a warning
            judged["judge_labels"] = {f"{n}_kind": NO_QUERY for n in self.reference_free}
        judges = {**judged.pop("judges", {}), **({} if outcome is None else {FINAL_CORRECT: outcome})}
        # a failed last attempt is a failed case (its error kept), as a run's; an answer log's query is one to answer
        status = "failed" if last.error is not None else "ok"
        return CaseRecord(
            name=qid, case=qid, query=last.query or "", status=status, error=last.error, retrieved=ranking,
            scores=[s.score for s in spans] if any(s.score is not None for s in spans) else [],
            relevant=g.relevant if g else {},
            metrics=(compute_all(ranking, g.relevant, self.ks) if g else None) or {}, judges=judges,
            qa=QARecord(status="failed" if last.error is not None else "ok" if self.answering else "skipped",
                        error=last.error, mode=SYSTEM_ANSWER if self.answering else None),
            answer=None if last.answer is None else {"answer": last.answer},
            gold_answers=g.answers if g else [], context=[i for i, _ in _ranked_spans(last)],
            context_text=_context_text(last) or None, tier=last.tier,  # what the judges read, for a person too
            model=last.model, usage=_query_usage(attempts), latency_ms=_query_latency(attempts), **judged)


def _warnings(records: list[tuple[str, LogRecord]], finals: list[CaseRecord], lasts: list[LogRecord],
              qids: list[str], missing: list[str], reference_free: Sequence[str]) -> list[str]:
    """What the summary warns of beyond the context texts: spans not retrieved, the judges' language, queries
    logged without a question, the queries the golden set lacks (``missing``, the summary's ``not_in_golden``)."""
    warnings = list(filter(None, [_context_not_retrieved(records), reference_free and language_warning(finals)]))
    if reference_free and (no_query := [qid for qid, last in zip(qids, lasts) if not last.query]):
        warnings.append(f"{len(no_query)} of {len(qids)} queries logged no 'query' (e.g. {no_query[0]!r}): the "
                        "reference-free judges read the question, so they are not judged (kind 'no_query'); log "
                        "the question text as 'query'")
    if missing:
        warnings.append(f"{len(missing)} of {len(qids)} logged queries are not in the golden set (e.g. "
                        f"{', '.join(map(repr, missing[:3]))}): they have no retrieval metrics and no gold answers")
    return warnings


def is_escalated(attempts: list[LogRecord], rank: dict[str, int]) -> bool:
    """True when some later attempt ran on a tier ranked above every earlier attempt's tier."""
    best = None
    for attempt in attempts:
        r = rank.get(attempt.tier) if attempt.tier is not None else None
        if r is not None and best is not None and r > best:
            return True
        if r is not None:
            best = r if best is None else max(best, r)
    return False
