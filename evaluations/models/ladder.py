"""The structured-output ladder: the output modes a stage tries, in order, until one gives a valid reply.

One ladder for every stage that asks a model for structured output (the QA agent, the served LLM judge, the
question writer). Modes, in ladder order (``SERVED_LADDER``):

- ``tool``: an output tool call (pydantic-ai ``ToolOutput``);
- ``native``: the server's JSON-schema response format (``NativeOutput``);
- ``prompted``: the schema in the instructions, JSON parsed from the text (``PromptedOutput``);
- ``text``: plain text (``str``); the stage reads what it can from it.

The embedded models have one mode, ``grammar``: the output tool's JSON generated under a grammar (always parses).
``output_modes(model)`` picks the modes of a model; ``output_type(mode, schema)`` is the one mode -> output type map.

Fail-over (``degrades``): a mode gives way to the next one on invalid output after the stage's retries
(``UnexpectedModelBehavior``, ``InvalidOutput``), on ``CacheMiss`` (a replay from the cache, see below) and when
the server refuses the request's form (``models.retry.rejects_request``: HTTP 400/422, or a 5xx whose body names a
validation error). Anything else (transport errors after their retries, auth, a missing model, overload,
configuration errors) is raised as it is: another mode cannot change it. When every mode failed,
``LadderFailed`` carries each mode's error.

``OutputLadder`` remembers the mode that last worked and starts there (then the modes after it, then the ones
before): a model that cannot make tool calls pays for the failed modes once, not on every request. That memory
belongs to the ladder instance. Before its first success a ladder also reads what the other stages of the command
learnt about the same served model (its base URL and name): a structured mode (``tool``, ``native``, ``prompted``)
that failed there before another mode worked on the same request, and has not worked since, is tried after the
stage's other modes, not skipped (``known_failures``; a request every mode failed, e.g. one too long for the
server, says nothing about the modes; each command starts knowing nothing, ``cli.root.main``). A QA model that
cannot give structured output then costs its output tools and schema replies once per run, not once per stage:
the served LLM judge on the same model starts at ``text``. ``text`` keeps its place (its failures are about one
reply's words), so a stage that asks in text first (the served checkers) asks as before. ``OutputLadder.run``
replays the whole ladder from the model-call cache alone first (``models.cache.replay_first``), so a re-run
repeats none of the calls that failed the first time; a cache miss is not a failure of the mode.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic_ai import NativeOutput, PromptedOutput, ToolOutput
from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior
from pydantic_ai.models import Model

from evaluations.models.cache import CacheMiss, replay_first
from evaluations.models.retry import rejects_request

__all__ = ["SERVED_LADDER", "InvalidOutput", "LadderFailed", "OutputLadder", "degrades", "forget_failures",
           "known_failures", "output_modes", "output_type"]

SERVED_LADDER = ("tool", "native", "prompted", "text")
#: the modes whose failure on a served model other stages learn from (``known_failures``)
STRUCTURED_MODES = frozenset({"tool", "native", "prompted"})

#: mode -> output type for a schema (a pydantic model class); ``grammar``: the embedded model turns the output
#: tool into grammar-constrained JSON
_OUTPUT_TYPES: dict[str, Callable[[Any], Any]] = {
    "tool": ToolOutput,
    "grammar": ToolOutput,
    "native": NativeOutput,
    "prompted": PromptedOutput,
    "text": lambda schema: str,
}

T = TypeVar("T")


def output_type(mode: str, schema: Any) -> Any:
    """The pydantic-ai ``output_type`` asking for ``schema`` in ``mode``."""
    return _OUTPUT_TYPES[mode](schema)


def _unwrapped(model: Any) -> Any:
    """``model`` behind any wrapper (e.g. the model-call cache, ``evaluations.models.cache.CachedModel``)."""
    from pydantic_ai.models.wrapper import WrapperModel

    while isinstance(model, WrapperModel):
        model = model.wrapped
    return model


def output_modes(model: Model | str | None) -> tuple[str, ...]:
    """The modes tried for ``model``: ``SERVED_LADDER`` for OpenAI-compatible chat models (Ollama included),
    ``("grammar",)`` for the embedded models, ``("tool",)`` otherwise (e.g. a ``FunctionModel`` in tests)."""
    from pydantic_ai.models.function import FunctionModel

    model = _unwrapped(model)
    # a process that never imported pydantic-ai's OpenAI model (about 0.5 s, with the openai client) holds none
    served = sys.modules.get("pydantic_ai.models.openai")
    if served is not None and isinstance(model, served.OpenAIChatModel):
        return SERVED_LADDER
    if isinstance(model, FunctionModel) and model.model_name.startswith("embedded:"):
        return ("grammar",)
    return ("tool",)


#: (base URL, model name) of a served model -> the structured modes that failed for some stage and have not worked
#: since, in this command (``cli.root.main`` clears it)
_failures: dict[tuple[str, str], set[str]] = {}
_failures_lock = threading.Lock()


def _served_key(model: Any) -> tuple[str, str] | None:
    """(base URL, model name) of a served model (behind any wrapper, e.g. the call cache); None for others (the
    embedded models, ``FunctionModel``s in tests): their ladders learn only from themselves."""
    model = _unwrapped(model)
    url = getattr(model, "base_url", None) if isinstance(model, Model) else None
    return (str(url), model.model_name) if url else None


def known_failures(model: Any) -> frozenset[str]:
    """The structured modes that failed for some stage on ``model``'s server and name in this command."""
    key = _served_key(model)
    with _failures_lock:
        return frozenset(_failures.get(key, ())) if key else frozenset()


def _learn(model: Any, failed: list[str], worked: str) -> None:
    key = _served_key(model)
    if key is None:
        return
    with _failures_lock:
        known = _failures.setdefault(key, set())
        known.update(m for m in failed if m in STRUCTURED_MODES)
        known.discard(worked)


def lessons() -> dict[tuple[str, str], frozenset[str]]:
    """What this process's ladders learnt in this command ((base URL, model name) -> the structured modes that
    failed there), for another process of the same command: a Ray worker's QA ladder hands it to the driver,
    whose judges ask the same served model (``take_lessons``)."""
    with _failures_lock:
        return {key: frozenset(modes) for key, modes in _failures.items() if modes}


def take_lessons(learnt: dict[tuple[str, str], frozenset[str]]) -> None:
    """Add another process's ``lessons`` to this process's record (its modes are then tried last here too)."""
    with _failures_lock:
        for key, modes in learnt.items():
            _failures.setdefault(tuple(key), set()).update(m for m in modes if m in STRUCTURED_MODES)


def forget_failures() -> None:
    """Clear what the ladders learnt about served models (``known_failures``)."""
    with _failures_lock:
        _failures.clear()


class InvalidOutput(Exception):
    """The stage read the reply and found it unusable (e.g. an empty answer): the next mode is tried."""


class LadderFailed(Exception):
    """Every mode failed with an error that degrades; ``failures``: (mode, error) in the order tried."""

    def __init__(self, failures: list[tuple[str, Exception]]):
        self.failures = failures
        super().__init__("; ".join(f"{mode}: {error}" for mode, error in failures) or "no output mode tried")


def degrades(error: Exception) -> bool:
    """``error`` moves the ladder to its next mode (module docstring); else it is raised as it is."""
    if isinstance(error, (UnexpectedModelBehavior, InvalidOutput, CacheMiss)):
        return True
    if isinstance(error, ModelHTTPError):
        return rejects_request(error.status_code, str(error.body or ""))
    return False


class OutputLadder:
    """The modes of one stage, tried in order from the one that last worked."""

    def __init__(self, modes: Sequence[str]):
        unknown = [m for m in modes if m not in _OUTPUT_TYPES]
        if unknown or not modes:
            raise ValueError(f"output modes must be some of {sorted(_OUTPUT_TYPES)}, got {list(modes)}")
        self.modes = tuple(modes)
        self.worked: str | None = None

    def order(self, failed: frozenset[str] = frozenset()) -> tuple[str, ...]:
        """``modes`` rotated to start at the mode that last worked; before any did, ``modes`` with those in
        ``failed`` (other stages' failures on the same model, ``known_failures``) moved to the end."""
        if self.worked is None:
            return tuple(m for m in self.modes if m not in failed) + tuple(m for m in self.modes if m in failed)
        start = self.modes.index(self.worked)
        return self.modes[start:] + self.modes[:start]

    async def run(self, model: Any, attempt: Callable[[str], Awaitable[T]],
                  start: Callable[[], None] | None = None) -> T:
        """``await attempt(mode)`` for each mode in ``order()`` until one returns; replayed from the model-call
        cache of ``model`` alone first (``replay_first``; a replay that could not finish is run again live, and
        ``start()`` is called before each pass, e.g. to forget the replay's attempts). Raises ``LadderFailed``
        when every mode failed, or the first error that does not degrade."""
        return await replay_first(model, lambda: self._climb(model, attempt, start))

    async def _climb(self, model: Any, attempt: Callable[[str], Awaitable[T]],
                     start: Callable[[], None] | None) -> T:
        if start is not None:
            start()
        failures: list[tuple[str, Exception]] = []
        for mode in self.order(known_failures(model)):
            try:
                result = await attempt(mode)
            except Exception as exc:
                if not degrades(exc):
                    raise
                failures.append((mode, exc))
                continue
            self.worked = mode
            # the modes that failed before one worked on the same request failed for the mode, not the request
            # (a replay's cache miss says nothing about a mode); a request every mode failed teaches nothing
            _learn(model, [m for m, exc in failures if not isinstance(exc, CacheMiss)], mode)
            return result
        raise LadderFailed(failures)
