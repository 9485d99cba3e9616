"""What judging costs: each judge that takes time measures itself per case (wall seconds, model calls) and hands
the figures on as one more result, the label ``<judge>_cost`` whose reason is a ``results.records.JudgeCost``
(``judge_cost_result``); ``record_from_case`` reads it into the record's ``judge_cost``.

``measuring()`` times a block and counts the model calls made in it (``models.meter``); ``MeasuredJudge`` is the
evaluator mixin that wraps an evaluator's ``judge_case`` in it: a case the judge does not apply to (``{}``) gets no
cost, so "cases judged" counts the cases the judge gave a result for.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from evaluations.models.meter import metered
from evaluations.results.records import JudgeCost, judge_cost_result

__all__ = ["MeasuredJudge", "measuring", "with_cost"]


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


class MeasuredJudge:
    """Mixin for an evaluator (placed before ``Evaluator``): ``evaluate`` runs ``judge_case(ctx)`` (async or sync, as
    pydantic-evals would run it) measured, and adds its cost under ``cost_name()`` (``COST_NAME`` unless overridden)."""

    COST_NAME: ClassVar[str] = ""

    def cost_name(self) -> str:
        return self.COST_NAME

    def judge_case(self, ctx: Any) -> Any:
        raise NotImplementedError

    async def evaluate(self, ctx: Any) -> dict[str, Any]:
        with measuring() as cost:
            results = self.judge_case(ctx)
            if inspect.iscoroutine(results):
                results = await results
            return with_cost(results, self.cost_name(), cost())
