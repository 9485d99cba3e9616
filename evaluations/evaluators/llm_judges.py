"""pydantic-evals evaluators of the LLM judges: the served one (``AnswerEquivalenceJudge``) and the embedded one
(``EmbeddedLLMJudge``); ``llm_judge(model_cfg, config)`` builds the one ``judge.model`` asks for.

The grading is ``judging.correctness.llm.AnswerGrader`` / ``judging.correctness.embedded.EmbeddedGrader``; an evaluator reads the case
(``evaluators.answers.judged_case``: no answer or no gold gives ``{}``), lets the non-answer screen decide first
(``screened``: a non-answer is incorrect without asking the model, ``answer_kind`` names its kind), then asks the
grader. Results: ``llm_judge`` (verdict with reason), ``llm_p_correct`` (P(correct)); the served judge adds
``llm_judge_mode`` (the output mode used), the embedded one ``combined_correct`` / ``combined_p_correct`` when the
combined judge's parameters are shipped. When the grader fails the evaluator raises and pydantic-evals records an
evaluator failure for the case (shown and counted, never dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from evaluations.evaluators.answers import judged_case, screened
from evaluations.evaluators.cost import MeasuredJudge
from evaluations.judging.correctness.embedded import DEFAULT_JUDGE, EmbeddedGrader, combined_params_path, combined_verdict
from evaluations.judging.correctness.llm import MODES, AnswerGrader, answer_grader, embedded_judge_name

if TYPE_CHECKING:
    from evaluations.core.config import Config, LLMModel

__all__ = ["AnswerEquivalenceJudge", "EmbeddedLLMJudge", "llm_judge"]


@dataclass(repr=False)
class AnswerEquivalenceJudge(MeasuredJudge, Evaluator[Any, Any, Any]):
    """pass = the served judge model says the answer is equivalent to at least one gold answer
    (``judging.correctness.llm.AnswerGrader``: output modes, retries, P(correct)). Its cost per case (requests sent,
    0 when replayed from the model-call cache): ``<evaluation_name>_cost`` (``evaluators.cost``)."""

    model: Model
    rubric: str
    model_settings: ModelSettings | None = None
    retries: int = 2
    evaluation_name: str = "llm_judge"
    modes: tuple[str, ...] = MODES
    logprobs: bool = True
    #: judges of the run that may ask this model's server at once (``evaluators.cost.server_turn``)
    concurrency: int = field(default=1, compare=False)
    _grader: AnswerGrader | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def grader(self) -> AnswerGrader:
        """The grader of these settings, made on first use (it keeps the output-mode ladder across cases)."""
        if self._grader is None:
            self._grader = AnswerGrader(model=self.model, rubric=self.rubric, model_settings=self.model_settings,
                                        retries=self.retries, modes=tuple(self.modes), logprobs=self.logprobs)
        return self._grader

    def cost_name(self) -> str:
        return self.evaluation_name

    def served_at(self) -> tuple[str | None, int]:
        return getattr(self.model, "base_url", None), self.concurrency

    async def judge_case(self, ctx: EvaluatorContext[Any, Any, Any]) -> dict[str, Any]:
        case = judged_case(ctx)
        if case is None:
            return {}
        decided = screened(case, self.evaluation_name, "llm_p_correct")
        if decided is not None:  # a non-answer (or an unanswerable question): the model is not asked
            return decided
        grade = await self.grader.grade(case.question, case.answer.strip(), case.refs)
        return {
            self.evaluation_name: EvaluationReason(grade.verdict, reason=grade.reason),
            "llm_p_correct": grade.p_correct,
            "llm_judge_mode": grade.mode,
        }

    def build_serialization_arguments(self) -> dict[str, Any]:
        return {"model": self.model.model_id, "retries": self.retries, "evaluation_name": self.evaluation_name}


@dataclass(repr=False)
class EmbeddedLLMJudge(MeasuredJudge, Evaluator):
    """``llm_p_correct`` = P(correct) of the embedded judge; ``llm_judge`` = P ≥ threshold, with the reason
    (``judging.correctness.embedded.EmbeddedGrader``); ``combined_correct`` too when ``combined`` and its parameters are shipped.

    ``threshold`` None: the calibrated one of ``judges/embedded_judge.json``. ``cache`` False (``--no-cache``):
    verdicts are neither read from nor written to the verdict cache. Its cost per case (forward passes, 0 from the
    verdict cache; the combined judge's embeddings included): ``<evaluation_name>_cost`` (``evaluators.cost``).
    """

    model: str = DEFAULT_JUDGE
    threshold: float | None = None
    evaluation_name: str = "llm_judge"
    cache: bool = True
    combined: bool = True  # also the combined judge (offline features + this P) when its parameters are shipped
    data_dir: str | None = None  # where the assembled GGUF lives (the config's storage.data_dir)
    cache_dir: str | None = None  # the verdict cache's folder (``Config.judge_cache_dir``); None: the default

    def cost_name(self) -> str:
        return self.evaluation_name

    async def judge_case(self, ctx: EvaluatorContext) -> dict[str, Any]:
        import anyio.to_thread

        case = judged_case(ctx)
        if case is None:
            return {}
        combined = self.combined and combined_params_path().is_file()
        decided = screened(case, self.evaluation_name, "llm_p_correct")
        if decided is not None:  # a non-answer (or an unanswerable question): no forward pass
            if combined:
                decided.update(screened(case, "combined_correct", "combined_p_correct") or {})
            return decided
        grader = EmbeddedGrader(model=self.model, threshold=self.threshold, cache=self.cache, data_dir=self.data_dir,
                                cache_dir=self.cache_dir)
        grade = await grader.grade(case.question or "", case.answer, case.refs)
        out: dict[str, float | EvaluationReason] = {
            "llm_p_correct": grade.p_correct, self.evaluation_name: EvaluationReason(grade.verdict, reason=grade.reason)
        }
        if combined:
            pc, verdict, reason = await anyio.to_thread.run_sync(
                combined_verdict, case.refs, case.answer, grade.p_correct, case.question)
            out.update(combined_p_correct=pc, combined_correct=EvaluationReason(verdict, reason=reason))
        return out

    def build_serialization_arguments(self) -> dict[str, Any]:
        return {"model": f"embedded:{self.model}", "evaluation_name": self.evaluation_name}


def llm_judge(model_cfg: LLMModel, config: Config) -> Evaluator:
    """The judge for ``judge.model``: embedded -> ``EmbeddedLLMJudge`` (the verdict cache follows
    ``cache.enabled``); served -> ``AnswerEquivalenceJudge`` with sampling pinned and ``judge.retries`` retries."""
    if model_cfg.provider == "embedded":
        return EmbeddedLLMJudge(model=embedded_judge_name(model_cfg), data_dir=str(config.data_dir()),
                                cache=config.cache.enabled, cache_dir=str(config.judge_cache_dir()))
    grader = answer_grader(model_cfg, config)
    return AnswerEquivalenceJudge(model=grader.model, rubric=grader.rubric, model_settings=grader.model_settings,
                                  retries=grader.retries, concurrency=config.evaluation.concurrency)
