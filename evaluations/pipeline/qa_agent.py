"""The QA agent: answer a question from retrieved chunks only, citing their ids.

``build_qa_agent(model)`` -> a pydantic-ai ``Agent`` whose output is ``evaluations.core.types.Answer`` (validated; a
malformed reply is sent back to the model up to ``OUTPUT_RETRIES`` times). ``answer_question`` runs it on one
question and returns a ``QAResult`` (answer, usage, the output mode that worked, the model's raw text, every
attempt), or raises ``QAFailed`` carrying the error and what the model actually said.

Output modes, tried in order until one yields a valid answer (``output_modes(model)`` picks the ladder):

- served models (Ollama, OpenAI-compatible): ``tool`` (an output tool call) -> ``native`` (JSON schema,
  pydantic-ai ``NativeOutput``) -> ``prompted`` (schema in the prompt, ``PromptedOutput``) -> ``text`` (plain
  text: the answer only, no cited ids, no confidence); small models behind a server often manage only the last;
- embedded models: ``grammar`` (the output tool's JSON, generation constrained by a grammar: always parses);
- any other model (e.g. ``FunctionModel`` in tests): ``tool``.

Each mode is one agent run with up to ``OUTPUT_RETRIES`` validation retries; usage sums over all attempts. The
ladder remembers, per model object, the mode that last worked and starts the next question there (then the modes
after it, then the ones before): a model that cannot make tool calls pays for the failed modes once, not on every
question. ``QAResult.attempts`` records exactly what was tried for each question.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput, PromptedOutput, capture_run_messages
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from evaluations.core.errors import EvaluationsError
from evaluations.core.types import Answer, RetrievedChunk

OUTPUT_RETRIES = 2

INSTRUCTIONS = (
    "Answer the question using only the context below. "
    "Each context passage starts with its id in square brackets; put the ids of the passages you used in "
    "cited_ids. If the context does not contain the answer, answer \"I don't know\" with confidence 0. "
    "Keep the answer short."
)


def build_qa_agent(model: Model | str, model_settings: ModelSettings | None = None) -> Agent[None, Answer]:
    """The QA agent: output ``Answer`` (answer, cited_ids, confidence 0-1), instructions ``INSTRUCTIONS``."""
    return Agent(
        model,
        output_type=Answer,
        instructions=INSTRUCTIONS,
        model_settings=model_settings,
        retries={"output": OUTPUT_RETRIES},
        name="qa",
    )


def format_context(chunks: list[RetrievedChunk], max_chars: int | None = None) -> str:
    """The chunks as one context string, each as ``[chunk_id] text``, in rank order.

    ``max_chars`` bounds the total length: whole chunks are kept while they fit, the first chunk that does not is
    cut to the remaining room (and the rest dropped), so the best-ranked text always survives.
    """
    blocks: list[str] = []
    used = 0
    for chunk in chunks:
        block = f"[{chunk.chunk_id}] {' '.join(chunk.text.split())}"
        sep = 2 if blocks else 0  # the blank line joining blocks
        if max_chars is not None and used + sep + len(block) > max_chars:
            room = max_chars - used - sep
            if room > len(chunk.chunk_id) + 3:
                blocks.append(block[:room])
            break
        blocks.append(block)
        used += sep + len(block)
    return "\n\n".join(blocks)


def _prompt(question: str, context: str) -> str:
    return f"Context:\n{context}\n\nQuestion: {question}"


# -- output modes --------------------------------------------------------------------------------
SERVED_LADDER = ("tool", "native", "prompted", "text")

_OUTPUT_TYPES: dict[str, Callable[[], Any]] = {
    "tool": lambda: Answer,
    "grammar": lambda: Answer,  # the embedded model turns the output tool into grammar-constrained JSON
    "native": lambda: NativeOutput(Answer),
    "prompted": lambda: PromptedOutput(Answer),
    "text": lambda: str,
}


# id(model) -> (model, the mode that last worked for it); the model is kept so its id cannot be reused
_LAST_WORKED: dict[int, tuple[Any, str]] = {}


def _ordered(modes: tuple[str, ...], model: Any) -> tuple[str, ...]:
    """``modes`` rotated to start at the mode that last worked for ``model`` (unchanged when none did)."""
    entry = _LAST_WORKED.get(id(model))
    if entry is None or entry[0] is not model or entry[1] not in modes:
        return modes
    start = modes.index(entry[1])
    return modes[start:] + modes[:start]


def output_modes(model: Model | str | None) -> tuple[str, ...]:
    """The modes tried for ``model``: ``SERVED_LADDER`` for OpenAI-compatible chat models (Ollama included),
    ``("grammar",)`` for the embedded models, ``("tool",)`` otherwise."""
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.models.wrapper import WrapperModel

    while isinstance(model, WrapperModel):  # e.g. the model-call cache (evaluations.models.cache.CachedModel)
        model = model.wrapped
    if isinstance(model, OpenAIChatModel):
        return SERVED_LADDER
    if isinstance(model, FunctionModel) and model.model_name.startswith("embedded:"):
        return ("grammar",)
    return ("tool",)


class ModeAttempt(BaseModel):
    """One output mode tried on one question: ``error`` None when it produced the answer."""

    mode: str
    error: str | None = None
    raw_text: str = ""  # the model's last reply in this mode (text, or the tool call's JSON arguments)
    usage: dict[str, int] = {}


@dataclass
class QAResult:
    """The answer to one question. ``mode``: the output mode that worked; ``raw_text``: the model's reply it was
    read from; ``usage`` sums every attempt ({"input_tokens", "output_tokens", "requests"}).

    Unpacks as ``answer, usage = result`` (the return value of ``answer_question`` before output modes)."""

    answer: Answer
    usage: dict[str, int]
    mode: str
    raw_text: str = ""
    attempts: list[ModeAttempt] = field(default_factory=list)

    def __iter__(self) -> Iterator[Any]:
        yield self.answer
        yield self.usage


class QAFailed(Exception):
    """Every output mode failed. ``error``: the last mode's error; ``raw_text``: the last thing the model said (""
    when it said nothing); ``usage``: summed over all attempts; ``attempts``: one ``ModeAttempt`` per mode tried."""

    def __init__(self, error: str, raw_text: str, usage: dict[str, int], attempts: list[ModeAttempt]):
        self.error = error
        self.raw_text = raw_text
        self.usage = usage
        self.attempts = attempts
        super().__init__(error)


def _reply_text(response: ModelResponse) -> str:
    """What the model said in one response: its text, and the JSON arguments of its tool calls."""
    out = []
    for part in response.parts:
        if isinstance(part, TextPart):
            out.append(part.content)
        elif isinstance(part, ToolCallPart):  # the arguments as the model wrote them when they came as a string
            out.append(part.args if isinstance(part.args, str) else part.args_as_json_str())
    return "\n".join(t for t in out if t)


def _usage(messages: list[ModelMessage]) -> dict[str, int]:
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    return {
        "input_tokens": sum(r.usage.input_tokens or 0 for r in responses),
        "output_tokens": sum(r.usage.output_tokens or 0 for r in responses),
        "requests": len(responses),
    }


def _last_reply(messages: list[ModelMessage]) -> str:
    replies = [_reply_text(m) for m in messages if isinstance(m, ModelResponse)]
    return next((r for r in reversed(replies) if r.strip()), "")


def _sum(usages: list[dict[str, int]]) -> dict[str, int]:
    return {k: sum(u.get(k, 0) for u in usages) for k in ("input_tokens", "output_tokens", "requests")}


def _as_answer(output: Answer | str) -> Answer:
    if isinstance(output, Answer):
        return output
    return Answer(answer=output.strip(), cited_ids=[], confidence=None)


async def answer_question(
    agent: Agent[None, Answer],
    question: str,
    chunks: list[RetrievedChunk],
    max_chars: int | None = None,
    *,
    modes: tuple[str, ...] | None = None,
) -> QAResult:
    """Run ``agent`` on ``question`` with ``chunks`` as context, trying ``modes`` (default
    ``output_modes(agent.model)``) in order until one gives a valid ``Answer``.

    The ladder starts at the mode that last worked for this model (module docstring). It is first replayed from
    the model-call cache alone (``models.cache.replay_first``): a re-run repeats none of the calls that failed.
    Returns a ``QAResult``; raises ``QAFailed`` (error, raw_text, usage, attempts) when every mode failed.
    ``EvaluationsError`` (a configuration problem, e.g. an embedded model offered tools) is raised as is.
    """
    from evaluations.models.cache import replay_first

    prompt = _prompt(question, format_context(chunks, max_chars))
    return await replay_first(agent.model, lambda: _ladder(agent, prompt, modes))


async def _ladder(agent: Agent[None, Answer], prompt: str, modes: tuple[str, ...] | None) -> QAResult:
    attempts: list[ModeAttempt] = []
    for mode in _ordered(modes or output_modes(agent.model), agent.model):
        with capture_run_messages() as messages:
            try:
                result = await agent.run(prompt, output_type=_OUTPUT_TYPES[mode]())
            except EvaluationsError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure of a mode moves on to the next one
                attempts.append(ModeAttempt(mode=mode, error=f"{type(exc).__name__}: {exc}",
                                            raw_text=_last_reply(messages), usage=_usage(messages)))
                continue
        answer = _as_answer(result.output)
        if not answer.answer:
            attempts.append(ModeAttempt(mode=mode, error="empty answer", raw_text=_last_reply(messages),
                                        usage=_usage(messages)))
            continue
        attempts.append(ModeAttempt(mode=mode, raw_text=_last_reply(messages), usage=_usage(messages)))
        _LAST_WORKED[id(agent.model)] = (agent.model, mode)
        return QAResult(answer=answer, usage=_sum([a.usage for a in attempts]), mode=mode,
                        raw_text=attempts[-1].raw_text, attempts=attempts)
    raw = next((a.raw_text for a in reversed(attempts) if a.raw_text.strip()), "")
    raise QAFailed(attempts[-1].error or "no output mode tried", raw, _sum([a.usage for a in attempts]), attempts)
