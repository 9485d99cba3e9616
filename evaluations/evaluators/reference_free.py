"""The reference-free evaluators: ``faithfulness`` (is the answer supported by the retrieved context?) and
``context_relevance`` (is each retrieved chunk needed to answer the question?). Neither needs gold answers or
relevance labels; the judges themselves are ``judging.grounded.faithfulness`` and ``judging.grounded.context_relevance`` (embedded
model, verdicts cached in the verdict store unless ``cache`` is False), run in a worker thread.

The passages are, for faithfulness, the retrieved items given to the QA model as context (``CaseOutput.chunks``, in
order; what the answer could rest on), and for context relevance every retrieved item
(``CaseOutput.retrieved_chunks``: the same list whoever answers, before the QA model's context budget chose among
them), each with its text; when a system returned ids only, the text is looked up in the corpus by id (``texts``).
An item without text anywhere (an id the corpus lacks) is not relevant at its own rank for context relevance, and
faithfulness has nothing to check against in it (``ranked_passages``). Results per case, only where the judge
applies:

- ``faithfulness`` (score in [0, 1], with "k of n claims supported" as reason), ``faithfulness_kind`` (label:
  "claims", or why it does not apply: "refusal", "empty", "no_context", …; its reason holds the claims as
  ``results.records.FaithfulnessEvidence`` JSON: the record keeps them as ``claims``);
- ``context_relevance`` (precision@k of the judged chunks), ``context_relevance_kind`` ("chunks" or
  "no_context"; its reason holds ``results.records.ContextEvidence`` JSON: every chunk verdict and the first
  relevant rank, kept as the record's ``chunk_relevance`` / ``first_relevant_rank``).

No answer (faithfulness) gives ``{}``: the summary counts the case as not applicable.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from evaluations.core.types import CaseMetadata, CaseOutput, RetrievalInputs
from evaluations.evaluators.cost import MeasuredJudge
from evaluations.results.records import ChunkRecord, ClaimRecord, ContextEvidence, FaithfulnessEvidence

if TYPE_CHECKING:
    from evaluations.core.config import Config

__all__ = ["ContextRelevance", "Faithfulness", "context_relevance_results", "faithfulness_results",
           "checker_label", "checker_notes", "parameter_sources", "ranked_passages", "reference_free_evaluators",
           "reference_free_tools"]


def ranked_passages(items: Iterable[tuple[str, str]]) -> list[Any]:
    """The passages context relevance judges, from (id, text) of every retrieved item in rank order: all of them,
    so an item without text (an id the corpus lacks) is judged not relevant at its own rank, never dropped to move
    the items below it up; none when no item has a text (nothing to judge: not applicable)."""
    from evaluations.judging.basics.passages import Passage

    passages = [Passage(id=i, text=text or "") for i, text in items]
    return passages if any(p.text.strip() for p in passages) else []


def _verdict_cache(enabled: bool, cache_dir: str | None) -> Any:
    from evaluations.judging.correctness.embedded import verdict_cache

    return verdict_cache(enabled, cache_dir)


def _passages(output: CaseOutput, texts: Mapping[str, str] | None,
              retrieved: bool = False) -> tuple[list[Any], list[str]]:
    """Every item given to the QA model as context (``retrieved``: every retrieved item, before the model's context
    budget chose among them: what context relevance judges) as a ``judging.basics.passages.Passage``
    (``ranked_passages``: chunk id and text, "" where it has none) and each one's document id."""
    chunks = (output.retrieved_chunks or output.chunks) if retrieved else output.chunks
    passages = ranked_passages((c.chunk_id, c.text_or_corpus(texts)) for c in chunks)
    return passages, [c.doc_id for c in chunks] if passages else []


def faithfulness_results(question: str, answer: str, passages: list[Any], *, cache: bool = True, scorer: Any = None,
                         decompose: Callable[[str, str], list[str] | None] | None = None,
                         cache_dir: str | None = None) -> dict[str, Any]:
    """The ``faithfulness`` results of one answer (module docstring): score (where it applies), kind, claims.
    ``passages``: the retrieved ones (``ranked_passages``; those without text give nothing to check against and
    are left out here); ``scorer``: the yes/no checker (default: the embedded judge model); ``decompose``: a served
    model's claim decomposition (None from it: the deterministic splitter); ``cache_dir``: the verdict store's
    folder (``Config.judge_cache_dir``; None: the default one)."""
    from evaluations.judging.grounded.faithfulness import judge_faithfulness

    passages = [p for p in passages if p.text.strip()]
    result = judge_faithfulness(question, answer, passages, cache=_verdict_cache(cache, cache_dir),
                                scorer=scorer, decompose=decompose)
    evidence = FaithfulnessEvidence(claims=[ClaimRecord.model_validate(c, from_attributes=True) for c in result.claims],
                                    model_calls=result.model_calls)
    out: dict[str, Any] = {"faithfulness_kind": EvaluationReason(result.kind, reason=evidence.model_dump_json())}
    if result.applicable and result.score is not None:
        supported = sum(c.supported for c in result.claims)
        out["faithfulness"] = EvaluationReason(
            float(result.score), reason=f"{supported} of {len(result.claims)} claims supported by the context")
    return out


def context_relevance_results(question: str, passages: list[Any], docs: list[str] | None = None, *,
                              cache: bool = True, scorer: Any = None, cache_dir: str | None = None) -> dict[str, Any]:
    """The ``context_relevance`` results of one retrieved list (module docstring); ``docs``: each passage's document
    id (what qrels name; default: the passage id); ``cache_dir``: as for ``faithfulness_results``."""
    from evaluations.judging.grounded.context_relevance import judge_context_relevance

    result = judge_context_relevance(question, passages, cache=_verdict_cache(cache, cache_dir), scorer=scorer)
    docs = docs if docs is not None else [p.id for p in passages]
    evidence = ContextEvidence(
        chunks=[ChunkRecord(rank=c.rank, id=c.id, doc=docs[c.rank - 1] if 0 < c.rank <= len(docs) else "",
                            relevant=c.relevant, p=c.p, sole_source=c.sole_source, joined=c.joined,
                            p_set=c.p_set) for c in result.chunks],
        first_relevant_rank=result.first_relevant_rank, model_calls=result.model_calls)
    out: dict[str, Any] = {"context_relevance_kind": EvaluationReason("chunks" if result.applicable else "no_context",
                                                                      reason=evidence.model_dump_json())}
    if result.applicable and result.score is not None:
        relevant = sum(c.relevant for c in result.chunks)
        first = result.first_relevant_rank
        out["context_relevance"] = EvaluationReason(
            float(result.score), reason=f"{relevant} of {len(result.chunks)} chunks relevant; first relevant rank "
                                        f"{first if first is not None else 'none'}")
    return out


def _served_at(scorer: Any) -> tuple[str | None, int]:
    """A served checker's server and width (``evaluators.cost.server_turn``); (None, 1) for the embedded model (its
    deferred proxy is not touched: that would load it here)."""
    from evaluations.judging.checkers.served_checker import ServedChecker

    if isinstance(scorer, ServedChecker):
        return scorer.model.base_url, scorer.parallel
    return None, 1


@dataclass(repr=False)
class Faithfulness(MeasuredJudge, Evaluator[RetrievalInputs, CaseOutput, CaseMetadata]):
    """``faithfulness`` = supported claims / claims of the answer (``judging.grounded.faithfulness``); see module docstring.
    ``cache`` False (``--no-cache``): verdicts are neither read from nor written to the verdict store; ``texts``:
    corpus id -> text, for systems that return ids only; ``scorer`` / ``decompose``: a served judge's checker and claim
    decomposition (``reference_free_evaluators``; default: the embedded model and the deterministic splitter);
    ``cache_dir``: the verdict store's folder (``Config.judge_cache_dir``; None: the default one). Its cost per case:
    ``faithfulness_cost`` (``evaluators.cost``)."""

    COST_NAME = "faithfulness"
    cache: bool = True
    cache_dir: str | None = field(default=None, compare=False)
    texts: Mapping[str, str] | None = field(default=None, compare=False)
    scorer: Any = field(default=None, compare=False)
    decompose: Callable[[str, str], list[str] | None] | None = field(default=None, compare=False)

    async def judge_case(self, ctx: EvaluatorContext[RetrievalInputs, CaseOutput, CaseMetadata]) -> dict[str, Any]:
        answer = ctx.output.answer
        if answer is None:
            return {}
        passages, _ = _passages(ctx.output, self.texts)
        return await anyio.to_thread.run_sync(functools.partial(
            faithfulness_results, str(ctx.inputs.query), answer.answer or "", passages, cache=self.cache,
            scorer=self.scorer, decompose=self.decompose, cache_dir=self.cache_dir))

    def served_at(self) -> tuple[str | None, int]:
        return _served_at(self.scorer)

    def build_serialization_arguments(self) -> dict[str, Any]:
        return {"cache": self.cache}  # never the corpus texts

    def get_default_evaluation_name(self) -> str:
        return "faithfulness"  # a failure is counted under the metric (``results.reference_free``)


@dataclass(repr=False)
class ContextRelevance(MeasuredJudge, Evaluator[RetrievalInputs, CaseOutput, CaseMetadata]):
    """``context_relevance`` = share of the retrieved chunks judged needed to answer the question
    (``judging.grounded.context_relevance``); see module docstring. ``cache``, ``cache_dir``, ``texts``: as for
    ``Faithfulness``. Its cost per case: ``context_relevance_cost`` (``evaluators.cost``)."""

    COST_NAME = "context_relevance"
    cache: bool = True
    cache_dir: str | None = field(default=None, compare=False)
    texts: Mapping[str, str] | None = field(default=None, compare=False)
    scorer: Any = field(default=None, compare=False)

    async def judge_case(self, ctx: EvaluatorContext[RetrievalInputs, CaseOutput, CaseMetadata]) -> dict[str, Any]:
        passages, docs = _passages(ctx.output, self.texts, retrieved=True)
        return await anyio.to_thread.run_sync(functools.partial(
            context_relevance_results, str(ctx.inputs.query), passages, docs, cache=self.cache, scorer=self.scorer,
            cache_dir=self.cache_dir))

    def served_at(self) -> tuple[str | None, int]:
        return _served_at(self.scorer)

    def build_serialization_arguments(self) -> dict[str, Any]:
        return {"cache": self.cache}  # never the corpus texts

    def get_default_evaluation_name(self) -> str:
        return "context_relevance"


def reference_free_evaluators(config: Config, *, answers: bool, retrieval: bool, has_qrels: bool = False,
                              texts: Mapping[str, str] | None = None) -> list[Evaluator]:
    """The evaluators ``judge.reference_free`` asks for: ``faithfulness`` and ``answer_relevance`` when the run
    answers (the QA model, or a user's system that returns answers, gold or not), ``context_relevance`` when it
    scores retrieval (not with ``--skip-retrieval``); ``has_qrels``: the dataset has relevance labels
    (``judge.reference_free: auto`` then leaves context relevance out). ``texts``: the corpus (id -> text), for
    systems that return ids only. Their checkers, and what is checked before any case runs:
    ``reference_free_tools``."""
    wanted = set(config.judge.reference_free_judges(has_qrels=has_qrels))
    wanted -= {judge for judge, needed in (("faithfulness", answers), ("answer_relevance", answers),
                                           ("context_relevance", retrieval)) if not needed}
    tools = reference_free_tools(config, wanted)
    made: list[Evaluator] = []
    cache = {"cache": config.cache.enabled, "cache_dir": str(config.judge_cache_dir())}
    # faithfulness first, then context relevance: a case's judges take turns at a served model in this order
    # (``evaluators.cost``), and their conversation forms continue the QA request the server has just read;
    # context relevance's passages beyond the shared opening, each asked in an opening of its own, come last
    if "faithfulness" in tools:
        scorer, decompose = tools["faithfulness"]
        made.append(Faithfulness(**cache, texts=texts, scorer=scorer, decompose=decompose))
    if "context_relevance" in tools:
        made.append(ContextRelevance(**cache, texts=texts, scorer=tools["context_relevance"][0]))
    if "answer_relevance" in wanted:  # the rules (MiniLM) and the naming screen on the embedded judge model
        from evaluations.evaluators.relevance import AnswerRelevance

        made.append(AnswerRelevance(**cache, data_dir=str(config.data_dir())))
    return made


Tools = tuple[Any, Callable[[str, str], "list[str] | None"] | None]


def reference_free_tools(config: Config, judges: Iterable[str]) -> dict[str, Tools]:
    """judge -> (checker, claim decomposition) for each of ``judges`` that asks a checker (faithfulness, context
    relevance), as every command that judges without gold uses them (a run, ``score --format log``): the served
    ``judge.model`` (``served_checker.served_tools``), else the embedded model it names, loaded at first use
    (``served_checker.embedded_checker``), and the deterministic splitter. Checked here, before any case: each
    judge's parameters file (``judging.basics.fitted``; one EvaluationsError, never a failed judge in every case), an
    unreachable server, and the embedded model's file (its parts missing, or a data folder that cannot be created:
    ``models.gguf``), assembled here (also for answer relevance, whose naming screen reads it; a model file of
    ``$EVALUATIONS_JUDGE_GGUF`` is loaded here, so a probe fitted on another model stops the run before any case)."""
    from evaluations.core.config import LLMModel
    from evaluations.judging.correctness.embedded import embedded_judge_path
    from evaluations.judging.correctness.llm import embedded_judge_name
    from evaluations.judging.checkers.served_checker import embedded_checker, served_tools
    from evaluations.judging.validation.registry import JUDGES, refittable

    chosen = set(judges)
    wanted = [judge for judge in refittable() if judge in chosen]
    if "answer_relevance" in chosen:  # its naming screen reads the default embedded judge model, served judge or not
        from evaluations.judging.grounded.naming import Naming

        naming = Naming(data_dir=config.data_dir())  # its probe's file read and checked
        embedded_judge_path(data_dir=config.data_dir())
        naming.check_model()
    model = config.judge.model or LLMModel(provider="embedded")
    for judge in wanted:  # its parameters file read and checked before any model loads or case runs
        JUDGES[judge].refit.check(served=model.provider != "embedded")
    if model.provider != "embedded":
        return {judge: served_tools(config, judge) for judge in wanted}
    if wanted:  # the embedded judge model's file (both judges'), the one the scorers will load
        embedded_judge_path(embedded_judge_name(model), config.data_dir())
    return {judge: (embedded_checker(config, judge), None) for judge in wanted}


#: evaluator class -> the judge (``judging.validation.registry.JUDGES``) whose parameters it reads
_JUDGE_OF: dict[type, str] = {Faithfulness: "faithfulness", ContextRelevance: "context_relevance"}


def parameter_sources(evaluators: list[Evaluator]) -> dict[str, dict[str, str]]:
    """judge -> {"file": the parameters file it reads, "fitted_through": the checker they were fitted through}
    of each reference-free evaluator: kept in the run's metadata, so runs judged with other parameters can be
    told apart."""
    from evaluations.judging.basics.fitted import default_params_path
    from evaluations.judging.checkers.yesno import is_served
    from evaluations.judging.validation.refit import fitted_through
    from evaluations.judging.validation.registry import JUDGES

    out = {}
    for evaluator in (e for e in evaluators if type(e) in _JUDGE_OF):
        judge = _JUDGE_OF[type(evaluator)]
        file = JUDGES[judge].refit.for_checker(is_served(evaluator.scorer)).file  # a served checker's own, if any
        out[judge] = {"file": str(default_params_path(file)), "fitted_through": fitted_through(judge, file)}
    return out


def checker_label(config: Config) -> str:
    """The checker the reference-free judges ask, for the run's metadata, spelt as ``judge_model`` is:
    ``embedded:<registry name>`` (the default judge model unless ``judge.model`` names another embedded one) or
    ``provider:name`` of a server: ``refit.checker_name``, with the default judge model named."""
    from evaluations.judging.correctness.embedded import DEFAULT_JUDGE
    from evaluations.judging.validation.refit import checker_name

    name = checker_name(config.judge.model)
    return f"embedded:{DEFAULT_JUDGE}" if name == "embedded" else name


def checker_notes(config: Config, sources: dict[str, dict[str, str]]) -> list[str]:
    """A note per judge of ``sources`` (``parameter_sources``) whose parameters were fitted through another checker
    than ``judge.model`` (``judging.validation.refit.checker_note``): shown by the run, never an error."""
    from evaluations.judging.validation.refit import checker_name, checker_note

    checker = checker_name(config.judge.model)
    notes = [checker_note(judge, checker, source["fitted_through"]) for judge, source in sources.items()]
    return [n for n in notes if n]
