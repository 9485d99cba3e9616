"""The LLM judge: is the generated answer equivalent to one of the gold answers?

A pydantic-evals evaluator over pydantic-evals' own ``LLMJudge`` (input + output + expected output),
with the rubric in ``judges/answer_equivalence.md`` (package data, see ``judges.shipped``). What the judge sees:

- Input: the question (``ctx.inputs.query``);
- Output: the answer text (``ctx.output.answer.answer``);
- ExpectedOutput: the gold alternatives (``ctx.metadata.answers``).

verdict = judge(question, answer, gold) in {pass, fail}, recorded as the assertion ``llm_judge``
with the judge's reason. No answer or no gold: no verdict ({}). Judge output that does not parse
is sent back to the judge up to ``judge.retries`` times; after that the evaluator raises, and
pydantic-evals records an evaluator failure for the case (shown and counted, never dropped).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext, LLMJudge
from pydantic_evals.evaluators.common import OutputConfig

from ..errors import EvaluationsError
from .shipped import read_judge_text

if TYPE_CHECKING:
    from ..config import Config, LLMModel

RUBRIC_FILE = "answer_equivalence.md"  # package data (``judges.shipped``), judges/ in the repository


def load_rubric(path: Path | None = None) -> str:
    """The rubric: the shipped ``answer_equivalence.md``, or the file at ``path``."""
    if path is None:
        return read_judge_text(RUBRIC_FILE).strip()
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise EvaluationsError(f"cannot read the judge rubric ({exc.strerror})", where=str(path),
                               fix="check the path of the rubric file") from None


@dataclass(repr=False)
class AnswerEquivalenceJudge(Evaluator[Any, Any, Any]):
    """pass = the judge model says the answer is equivalent to at least one gold answer."""

    model: Model
    rubric: str
    model_settings: ModelSettings | None = None
    retries: int = 2
    evaluation_name: str = "llm_judge"

    async def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> dict[str, bool | EvaluationReason]:
        answer = ctx.output.answer.answer.strip() if ctx.output is not None and ctx.output.answer else ""
        gold = list(ctx.metadata.answers) if ctx.metadata is not None else []
        if not answer or not gold:
            return {}
        from pydantic_evals.evaluators.llm_as_a_judge import (  # the agent LLMJudge runs for input+expected
            _judge_input_output_expected_agent as judge_agent,
        )

        judge = LLMJudge(
            rubric=self.rubric,
            model=self.model,
            include_input=True,
            include_expected_output=True,
            model_settings=self.model_settings,
            assertion=OutputConfig(evaluation_name=self.evaluation_name, include_reason=True),
        )
        narrowed = dataclasses.replace(ctx, inputs=ctx.inputs.query, output=answer, expected_output=gold)
        with judge_agent.override(retries={"output": self.retries}):  # context-local: safe under concurrency
            return await judge.evaluate(narrowed)

    def build_serialization_arguments(self) -> dict[str, Any]:
        return {"model": self.model.model_id, "retries": self.retries, "evaluation_name": self.evaluation_name}


def llm_judge(model_cfg: LLMModel, config: Config) -> AnswerEquivalenceJudge:
    """The judge for ``judge.model`` (or any LLMModel section), sampling pinned, ``judge.retries`` retries."""
    from ..qa.models import build_model, model_settings

    return AnswerEquivalenceJudge(
        model=build_model(model_cfg, config),
        rubric=load_rubric(),
        model_settings=model_settings(model_cfg),
        retries=config.judge.retries,
    )
