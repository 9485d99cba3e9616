"""The question writer: a pydantic-ai agent that reads one passage and writes ``{question, answer}``.

Structured output goes through the one output-mode ladder (``models.ladder``): served models try an output tool,
then native JSON schema output, then the schema in the prompt; the embedded models generate the tool's JSON under
a grammar. The plain-text mode is left out: a question and its answer are two fields, and free text would have to
be parsed by hand. ``QuestionWriter`` keeps one ladder, which starts at the mode that last worked, so a model that
cannot call tools pays for that once.

Each mode is one agent run with up to ``OUTPUT_RETRIES`` validation retries. When the ladder fails,
``WriteFailed.reason`` is ``malformed`` (the model answered, but never in the schema) or ``model_error`` (the
call itself failed, e.g. the server after its retries: the ladder stops there).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field
from pydantic_ai import Agent
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from evaluations.core.errors import EvaluationsError
from evaluations.models.ladder import LadderFailed, OutputLadder, output_modes, output_type
from evaluations.pipeline.qa_agent import OUTPUT_RETRIES

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
    """Writes one pair per passage with ``agent``, through one output-mode ladder over its model's modes."""

    def __init__(self, agent: Agent[None, SynthPair]):
        self.agent = agent
        self.ladder = OutputLadder([m for m in output_modes(agent.model) if m != "text"])

    @property
    def model_name(self) -> str:
        return getattr(self.agent.model, "model_name", str(self.agent.model))

    async def write(self, passage: str) -> Written:
        """The first mode's pair, replayed from the model-call cache alone first (``models.cache.replay_first``)."""

        async def attempt(mode: str) -> Written:
            result = await self.agent.run(prompt(passage), output_type=output_type(mode, SynthPair))
            usage = result.usage
            return Written(pair=result.output, mode=mode, input_tokens=usage.input_tokens or 0,
                           output_tokens=usage.output_tokens or 0)

        try:
            return await self.ladder.run(self.agent.model, attempt)
        except EvaluationsError:
            raise  # a configuration problem: stop the whole run
        except LadderFailed as exc:
            malformed = any(isinstance(e, UnexpectedModelBehavior) for _, e in exc.failures)
            raise WriteFailed("malformed" if malformed else "model_error",
                              "; ".join(f"{m}: {e}" for m, e in exc.failures)) from exc
        except Exception as exc:  # noqa: BLE001 - the call itself failed (after its retries): counted, not fatal
            raise WriteFailed("model_error", f"{type(exc).__name__}: {exc}") from exc
