"""``--system module:function``: a Python callable as the system under test.

``module`` is imported from the current directory or ``PYTHONPATH`` (the current directory is put on
``sys.path`` first, as ``python -m`` does); ``function`` may be dotted (``module:obj.method``). It is called
with one argument, the request dict ``{"query", "k", "case_id"}``, and returns the response dict (or a
``SystemResponse``, or an awaitable of either). A plain (sync) function runs in a worker thread so cases can
run concurrently. Each response is validated against ``SystemResponse``; a bad one is a per-case error. Every
run calls it; only a resumed run reuses its own earlier replies (``systems.replies``).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError

from evaluations.core.errors import EvaluationsError, field_errors
from evaluations.systems.base import SystemRequest, SystemResponse
from evaluations.systems.replies import RunReplies, through


class SystemResponseError(EvaluationsError):
    """A system answered one case with something that is not a ``SystemResponse`` (the case fails)."""


def validate_response(raw: Any, system_id: str, case_id: str) -> SystemResponse:
    """``raw`` (dict or pydantic model) -> SystemResponse, or a SystemResponseError naming the case and field."""
    where = f"system {system_id}, case {case_id}"
    if isinstance(raw, SystemResponse):
        return raw
    if isinstance(raw, BaseModel):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        raise SystemResponseError(f"the response is a {type(raw).__name__}, not a JSON object", where=where,
                                  fix='return {"retrieved": [{"id": ..., "text": ..., "score": ...}], "answer": ...}')
    if "retrieved" not in raw and "answer" not in raw:
        raise SystemResponseError(f"the response has neither 'retrieved' nor 'answer' (keys: {sorted(raw)[:8]})",
                                  where=where, fix="return at least 'retrieved' (ranked items) or 'answer'")
    try:
        return SystemResponse.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"field '{key}': {msg}" for key, msg, _ in field_errors(exc.errors())[:5])
        raise SystemResponseError(f"bad response: {problems}", where=where,
                                  fix="see the response contract in evaluations/systems/base.py") from None


def import_callable(spec: str) -> Callable[[dict], Any]:
    """``module:function`` -> the function (EvaluationsError when it cannot be imported or is not callable)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise EvaluationsError(f"--system {spec!r} is not 'module:function' or an http(s) URL", where="--system",
                               fix="e.g. --system my_rag:search or --system http://localhost:8000/query")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise EvaluationsError(f"cannot import module {module_name!r} ({exc})", where="--system",
                               fix="run from the folder holding it or add it to PYTHONPATH") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise EvaluationsError(f"{module_name!r} has no attribute {attr!r}", where="--system",
                                   fix="name a function defined in that module") from None
        target = getattr(target, part)
    if not callable(target):
        raise EvaluationsError(f"{spec!r} is not callable", where="--system", fix="name a function")
    return target


class CallableSystem:
    """A Python function implementing the system contract (module docstring)."""

    def __init__(self, function: Callable[[dict], Any], id: str, replies: RunReplies | None = None):
        self.function = function
        self.id = id
        self.replies = replies  # this run's earlier replies (--resume), else None

    @classmethod
    def from_spec(cls, spec: str) -> CallableSystem:
        return cls(import_callable(spec), id=spec)

    async def __call__(self, request: SystemRequest) -> SystemResponse:
        return await through(self.replies, request, lambda: self._call(request))

    async def _call(self, request: SystemRequest) -> SystemResponse:
        payload = request.model_dump()
        if inspect.iscoroutinefunction(self.function):
            raw = await self.function(payload)
        else:
            raw = await anyio.to_thread.run_sync(self.function, payload)
            if inspect.isawaitable(raw):
                raw = await raw
        return validate_response(raw, self.id, request.case_id)
