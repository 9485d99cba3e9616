"""Counting the model calls one judge makes for one case, wherever in the code they happen.

``metered()`` opens a ``CallMeter`` for the code it wraps (a context variable: worker threads started with
``anyio.to_thread`` and coroutines sent through an anyio portal see the same meter); the places that run a model
call ``count_calls`` when they actually run it, never when the answer came from a cache: a forward pass of an
embedded judge model (``judging.correctness.embedded``, ``judging.checkers.yesno``: one per question, the questions
read side by side in one batched pass included), a request sent to a served
model (``models.cache.CachedModel``: each live request, retries included), a text embedded by the judges' MiniLM
(``judging.correctness.semantic``: one per text, batched or not). Outside ``metered()`` counting does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = ["CallMeter", "count_calls", "metered"]


@dataclass
class CallMeter:
    """Model calls made while this meter was open (``metered``)."""

    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, n: int) -> None:
        with self._lock:
            self.calls += n


_METER: ContextVar[CallMeter | None] = ContextVar("evaluations_call_meter", default=None)


def count_calls(n: int = 1) -> None:
    """Count ``n`` model calls on the open meter (none open: nothing)."""
    meter = _METER.get()
    if meter is not None and n:
        meter.add(n)


@contextmanager
def metered() -> Iterator[CallMeter]:
    """A fresh meter for the calls made inside the block (an enclosing one does not see them)."""
    meter = CallMeter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)
