"""The QA agent: answer a question from retrieved chunks only, citing their ids.

``build_qa_agent(model)`` -> a pydantic-ai ``Agent`` whose output is ``evaluations.core.types.Answer`` (validated; a
malformed reply is sent back to the model up to ``OUTPUT_RETRIES`` times). ``answer_question`` runs it on one
question and returns a ``QAResult`` (answer, usage, the output mode that worked, the model's raw text, every
attempt), or raises ``QAFailed`` carrying the error and what the model actually said.

Output modes are tried through the one structured-output ladder (``models.ladder``: ``tool`` -> ``native`` ->
``prompted`` -> ``text`` for served models, ``grammar`` for the embedded ones, ``tool`` for any other model). In
``text`` mode the answer is the plain reply: no cited ids, no confidence; an empty answer moves on to the next mode.

Each mode is one agent run with up to ``OUTPUT_RETRIES`` validation retries; usage sums over all attempts. A
ladder (``qa_ladder``, one per run) remembers the mode that last worked and starts the next question there: a
model that cannot make tool calls pays for the failed modes once, not on every question. ``QAResult.attempts``
records exactly what was tried for each question.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent, capture_run_messages
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from evaluations.core.context import QA_INSTRUCTIONS as INSTRUCTIONS
from evaluations.core.context import context_text, qa_prompt
from evaluations.core.errors import EvaluationsError, escaped
from evaluations.core.types import Answer, RetrievedChunk
from evaluations.models.ladder import SERVED_LADDER, InvalidOutput, OutputLadder, output_modes, output_type
from evaluations.systems.callable import check_text

__all__ = ["INSTRUCTIONS", "OUTPUT_RETRIES", "SERVED_LADDER", "ModeAttempt", "QAFailed", "QAResult", "answer_question",
           "build_qa_agent", "output_modes", "qa_ladder"]

OUTPUT_RETRIES = 2
#: the fix named when the answer holds a lone surrogate
_NOT_UNICODE_FIX = ("the reply is kept in the case's raw_text, the character escaped; it came from the model or its "
                    "server (e.g. a \\ud800 escape in its JSON): use another model or server")


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


# -- output modes --------------------------------------------------------------------------------
def qa_ladder(agent: Agent[None, Answer], modes: tuple[str, ...] | None = None) -> OutputLadder:
    """A ladder over ``modes`` (default ``output_modes(agent.model)``) for ``answer_question(..., ladder=)``."""
    return OutputLadder(modes or output_modes(agent.model))


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
    ladder: OutputLadder | None = None,
) -> QAResult:
    """Run ``agent`` on ``question`` with ``chunks`` as context through the output-mode ladder
    (``models.ladder``): ``ladder`` (one per run, it remembers the mode that worked), else a new one over ``modes``
    (default ``output_modes(agent.model)``), until a mode gives a valid, non-empty ``Answer``.

    The ladder is first replayed from the model-call cache alone (``models.cache.replay_first``): a re-run repeats
    none of the calls that failed. Returns a ``QAResult``; raises ``QAFailed`` (error, raw_text, usage, attempts)
    when every mode failed or a mode failed in a way another mode cannot change (the server unreachable after its
    retries), or when the answer is not valid Unicode (a lone surrogate: ``systems.callable.check_text``, as a
    system's reply). ``EvaluationsError`` (a configuration problem, e.g. an embedded model offered tools) is raised
    as is.
    """
    prompt = qa_prompt(question, context_text(chunks, max_chars))
    ladder = ladder or qa_ladder(agent, modes)
    attempts: list[ModeAttempt] = []

    async def attempt(mode: str) -> QAResult:
        with capture_run_messages() as messages:
            try:
                result = await agent.run(prompt, output_type=output_type(mode, Answer))
                answer = _as_answer(result.output)
                if not answer.answer:
                    raise InvalidOutput("empty answer")
            except EvaluationsError:
                raise
            except Exception as exc:
                error = str(exc) if isinstance(exc, InvalidOutput) else f"{type(exc).__name__}: {exc}"
                attempts.append(ModeAttempt(mode=mode, error=error, raw_text=_last_reply(messages),
                                            usage=_usage(messages)))
                raise
        attempts.append(ModeAttempt(mode=mode, raw_text=_last_reply(messages), usage=_usage(messages)))
        return QAResult(answer=answer, usage=_sum([a.usage for a in attempts]), mode=mode,
                        raw_text=attempts[-1].raw_text, attempts=list(attempts))

    try:
        result = await ladder.run(agent.model, attempt, start=attempts.clear)
    except EvaluationsError:
        raise
    except Exception as exc:  # every mode failed, or one failed for good: keep what the model said
        if not attempts:
            raise
        raw = next((a.raw_text for a in reversed(attempts) if a.raw_text.strip()), "")
        raise QAFailed(attempts[-1].error or str(exc), escaped(raw), _sum([a.usage for a in attempts]),
                       list(attempts)) from exc
    try:  # text that is not valid Unicode fails the answer, as it fails a system's reply (systems.callable)
        check_text(result.answer, f"QA model {getattr(agent.model, 'model_name', agent.model)}",
                   error=EvaluationsError, fix=_NOT_UNICODE_FIX)
    except EvaluationsError as exc:
        raise QAFailed(str(exc), escaped(result.raw_text), result.usage, result.attempts) from None
    return result
