"""The question writer: a pydantic-ai agent that reads one passage and writes ``{question, answer}``.

Structured output goes through the same output modes as the QA agent (``qa.agent.output_modes``): served models
try an output tool, then native JSON schema output (``NativeOutput``), then the schema in the prompt
(``PromptedOutput``); the embedded models generate the tool's JSON under a grammar. The plain-text mode of the QA
ladder is left out: a question and its answer are two fields, and free text would have to be parsed by hand.
``QuestionWriter`` moves the mode that worked to the front, so a model that cannot call tools pays for that once.

Each mode is one agent run with up to ``OUTPUT_RETRIES`` validation retries. When every mode fails,
``WriteFailed.reason`` is ``malformed`` (the model answered, but never in the schema) or ``model_error`` (the
call itself failed, e.g. the server after its retries).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai import Agent, NativeOutput, PromptedOutput
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from evaluations.core.errors import EvaluationsError
from evaluations.pipeline.qa_agent import OUTPUT_RETRIES, output_modes

__all__ = ["INSTRUCTIONS", "QuestionWriter", "SynthPair", "WriteFailed", "Written", "build_synth_agent", "prompt"]

INSTRUCTIONS = (
    "You write test questions for a search engine. Read the passage and write one question that the passage "
    "answers, and its answer. The question must be specific enough to find this passage among thousands of "
    "others: name its subject, do not say 'the passage' or 'the study'. Do not put the answer in the question. "
    "The answer is short and uses the passage's own words."
)


class SynthPair(BaseModel):
    """One generated question and its reference answer."""

    question: str = Field(description="A specific question that the passage answers.")
    answer: str = Field(description="The short answer, in the passage's words.")


_OUTPUT_TYPES: dict[str, Callable[[], Any]] = {
    "tool": lambda: SynthPair,
    "grammar": lambda: SynthPair,  # the embedded model turns the output tool into grammar-constrained JSON
    "native": lambda: NativeOutput(SynthPair),
    "prompted": lambda: PromptedOutput(SynthPair),
}


def build_synth_agent(model: Model | str, model_settings: ModelSettings | None = None) -> Agent[None, SynthPair]:
    return Agent(model, output_type=SynthPair, instructions=INSTRUCTIONS, model_settings=model_settings,
                 retries={"output": OUTPUT_RETRIES}, name="synth")


def prompt(passage: str) -> str:
    return f"Passage:\n{passage}"


@dataclass
class Written:
    """A pair the model produced, the output mode that produced it and the tokens of that run."""

    pair: SynthPair
    mode: str
    input_tokens: int = 0
    output_tokens: int = 0


class WriteFailed(Exception):
    """Every output mode failed; ``reason``: ``malformed`` or ``model_error``; ``error``: what each mode said."""

    def __init__(self, reason: str, error: str):
        self.reason = reason
        self.error = error
        super().__init__(error)


class QuestionWriter:
    """Writes one pair per passage with ``agent``, trying the output modes of its model in order."""

    def __init__(self, agent: Agent[None, SynthPair]):
        self.agent = agent
        self.modes = [m for m in output_modes(agent.model) if m in _OUTPUT_TYPES]

    @property
    def model_name(self) -> str:
        return getattr(self.agent.model, "model_name", str(self.agent.model))

    async def write(self, passage: str) -> Written:
        """The first mode's pair, replayed from the model-call cache alone first (``models.cache.replay_first``)."""
        from evaluations.models.cache import replay_first

        return await replay_first(self.agent.model, lambda: self._ladder(passage))

    async def _ladder(self, passage: str) -> Written:
        failures: list[tuple[str, str, str]] = []  # (mode, reason, error)
        for mode in list(self.modes):
            try:
                result = await self.agent.run(prompt(passage), output_type=_OUTPUT_TYPES[mode]())
            except EvaluationsError:
                raise  # a configuration problem: stop the whole run
            except UnexpectedModelBehavior as exc:  # answered, but not in the schema (after the retries)
                failures.append((mode, "malformed", str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - a failed call moves on to the next mode, then counts
                failures.append((mode, "model_error", f"{type(exc).__name__}: {exc}"))
                continue
            if mode != self.modes[0]:
                self.modes.remove(mode)
                self.modes.insert(0, mode)
            usage = result.usage
            return Written(pair=result.output, mode=mode, input_tokens=usage.input_tokens or 0,
                           output_tokens=usage.output_tokens or 0)
        reason = "malformed" if any(r == "malformed" for _, r, _ in failures) else "model_error"
        raise WriteFailed(reason, "; ".join(f"{m}: {e}" for m, _, e in failures) or "no output mode")
