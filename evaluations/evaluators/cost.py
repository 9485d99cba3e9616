"""What judging costs: each judge that takes time measures itself per case (wall seconds, model calls) and hands
the figures on as one more result, the label ``<judge>_cost`` whose reason is a ``results.records.JudgeCost``
(``judge_cost_result``); ``record_from_case`` reads it into the record's ``judge_cost``.

``measuring()`` times a block and counts the model calls made in it (``models.meter``); ``MeasuredJudge`` is the
evaluator mixin that wraps an evaluator's ``judge_case`` in it: a case the judge does not apply to (``{}``) gets no
cost, so "cases judged" counts the cases the judge gave a result for.

A judge that asks a served model (``served_at``: the server's URL and the run's concurrency) takes a turn at that
server (``server_turn``) for its whole case: at most ``concurrency`` judges of a run ask one server at once. A case's
evaluators run at once, so without turns a case's faithfulness, context-relevance and LLM-judge questions reach the
server interleaved, and a server that keeps the last prompt's prefix (llama.cpp, Ollama) reads each judge's rubric
again for every question; in turns, one judge's questions arrive one after another and share it. The wait for a
turn is part of the judge's seconds (its wall time).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager, nullcontext
from typing import Any, ClassVar

from evaluations.models.meter import metered
from evaluations.results.records import JudgeCost, judge_cost_result

__all__ = ["MeasuredJudge", "measuring", "server_turn", "with_cost"]


@contextmanager
def measuring() -> Iterator[Callable[[], JudgeCost]]:
    """Yields a function giving the cost so far of the block: seconds since it began, model calls made in it, and
    when it began."""
    start, started = time.perf_counter(), time.time()
    with metered() as meter:
        yield lambda: JudgeCost(seconds=time.perf_counter() - start, calls=meter.calls, started=started)


def with_cost(results: dict[str, Any], judge: str, cost: JudgeCost) -> dict[str, Any]:
    """``results`` with ``judge``'s cost added (``judge_cost_result``); none when the judge gave no result."""
    return {**results, **judge_cost_result(judge, cost)} if results else results


_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = \
    weakref.WeakKeyDictionary()


def server_turn(url: str | None, width: int) -> AbstractAsyncContextManager[Any]:
    """A turn at the server at ``url`` among the judges of this event loop (a run): at most ``width`` at once; no
    turn to take without a URL (an embedded model, or no model)."""
    if not url:
        return nullcontext()
    turns = _TURNS.setdefault(asyncio.get_running_loop(), {})
    key = url.rstrip("/")
    if key not in turns:
        turns[key] = asyncio.Semaphore(max(1, width))
    return turns[key]


class MeasuredJudge:
    """Mixin for an evaluator (placed before ``Evaluator``): ``evaluate`` runs ``judge_case(ctx)`` (async or sync, as
    pydantic-evals would run it) measured, and adds its cost under ``cost_name()`` (``COST_NAME`` unless overridden)."""

    COST_NAME: ClassVar[str] = ""

    def cost_name(self) -> str:
        return self.COST_NAME

    def judge_case(self, ctx: Any) -> Any:
        raise NotImplementedError

    def served_at(self) -> tuple[str | None, int]:
        """(the URL of the served model this judge asks, the most judges that may ask it at once); (None, 1) for a
        judge that asks no server."""
        return None, 1

    async def evaluate(self, ctx: Any) -> dict[str, Any]:
        with measuring() as cost:
            async with server_turn(*self.served_at()):
                results = self.judge_case(ctx)
                if inspect.iscoroutine(results):
                    results = await results
            return with_cost(results, self.cost_name(), cost())
