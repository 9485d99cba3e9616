"""``--system module:function``: a Python callable as the system under test.

``module`` is imported from the current directory or ``PYTHONPATH`` (the current directory is put on
``sys.path`` first, as ``python -m`` does); ``function`` may be dotted (``module:obj.method``). It is called
with one argument, the request dict ``{"query", "k", "case_id"}``, and returns the response dict (or a
``SystemResponse``, or an awaitable of either). A plain (sync) function runs in a thread of its own so cases can
run concurrently. Each response is validated against ``SystemResponse``; a bad one is a per-case error, and so is
text that is not valid Unicode (a lone surrogate such as ``'\\udce9'``, what undecodable bytes become with
``errors='surrogateescape'``): it could not be written as UTF-8, and repairing it would score other text than the
system returned. Every run calls it; only a resumed run reuses its own earlier replies (``systems.replies``).

A call has the config's ``requests.timeout`` (seconds, as an HTTP system's request): a call still running then
fails its case (counted, ``SystemTimeout``) and is abandoned. A thread running a hung function cannot be killed;
it is a daemon thread, so neither the next cases, nor Ctrl-C (the run stops at once, exit 130, the finished cases
kept for ``--resume``), nor the process's exit wait for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError

from evaluations.core.errors import EvaluationsError, escaped, field_errors, lone_surrogate
from evaluations.systems.base import SystemRequest, SystemResponse
from evaluations.systems.replies import RunReplies, through


class SystemResponseError(EvaluationsError):
    """A system answered one case with something that is not a ``SystemResponse`` (the case fails)."""


class SystemTimeout(EvaluationsError):
    """A system did not answer one case within its timeout (the case fails; the call is abandoned)."""


CONTRACT = ('the response contract is {"retrieved": [{"id", "text"?, "score"?}], "answer"?, "usage"?, ...} '
            "(docs/your-system.md)")
#: what other tools call the ranked items (RAGAS, LangChain, LlamaIndex, search engines): a response naming its
#: list so, with no ``retrieved``, is an error naming the rename
RETRIEVED_ALIASES = ("contexts", "retrieved_contexts", "context", "source_documents", "source_nodes", "documents",
                     "docs", "sources", "results", "hits", "chunks", "passages", "retrieval_context")
#: other names of an item's id (an item without ``id`` that has one of these is told to rename it)
ID_ALIASES = ("doc_id", "document_id", "docid", "_id", "corpus_id", "chunk_id", "node_id", "uid")


def _check_item_ids(items: Any, where: str) -> None:
    """An item of ``retrieved`` without ``id``: an error saying where its id seems to be (another name, or
    LangChain's ``metadata``) and how to return it."""
    if not isinstance(items, list):
        return
    for n, item in enumerate(items):
        if not isinstance(item, dict) or "id" in item:
            continue
        named = next((key for key in ID_ALIASES if key in item), None)
        if named is not None:
            fix = f"rename {named!r} to 'id' in each item"
        elif "page_content" in item or "metadata" in item:  # a LangChain Document
            fix = ("return each LangChain document as {\"id\": doc.metadata[...your id key...], \"text\": "
                   "doc.page_content}")
        else:
            fix = "give each item the corpus document's id: {\"id\": ..., \"text\"?: ..., \"score\"?: ...}"
        keys = sorted(map(str, item))[:6]
        raise SystemResponseError(f"field 'retrieved.{n}.id' is missing (the item's keys: {keys})", where=where,
                                  fix=fix)


def validate_response(raw: Any, system_id: str, case_id: str) -> SystemResponse:
    """``raw`` (dict or pydantic model) -> SystemResponse, or a SystemResponseError naming the case and field."""
    where = f"system {system_id}, case {case_id}"
    if isinstance(raw, SystemResponse):
        check_text(raw, where)
        return raw
    if isinstance(raw, BaseModel):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        raise SystemResponseError(f"the response is a {type(raw).__name__}, not a JSON object", where=where,
                                  fix='return {"retrieved": [{"id": ..., "text": ..., "score": ...}], "answer": ...}')
    if "retrieved" not in raw:
        meant = next((key for key in RETRIEVED_ALIASES if key in raw), None)
        if meant is not None:  # another tool's name: scoring it as "nothing retrieved" would be silent and wrong
            raise SystemResponseError(f"the response has {meant!r} but no 'retrieved'", where=where,
                                      fix=f"rename {meant!r} to 'retrieved': a list of {{\"id\", \"text\"?, "
                                          f"\"score\"?}} ranked best first (docs/your-system.md); leave it out to "
                                          "evaluate the answer alone")
    if "retrieved" not in raw and "answer" not in raw:
        raise SystemResponseError(f"the response has neither 'retrieved' nor 'answer' (keys: {sorted(raw)[:8]})",
                                  where=where, fix="return at least 'retrieved' (ranked items) or 'answer'")
    _check_item_ids(raw.get("retrieved"), where)
    try:
        response = SystemResponse.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"field '{key}': {msg}" for key, msg, _ in field_errors(exc.errors())[:5])
        raise SystemResponseError(f"bad response: {problems}", where=where, fix=CONTRACT) from None
    check_text(response, where)
    return response


def check_text(value: BaseModel, where: str, *, error: type[EvaluationsError] = SystemResponseError,
               fix: str = "decode the bytes with their real encoding (or with errors='replace') before returning "
                          "them") -> None:
    """``error`` when a string of ``value`` holds a lone surrogate (module docstring), naming its field: a system's
    response (a SystemResponseError fails its case), the QA model's answer (``pipeline.qa_agent``)."""
    found = lone_surrogate(value.model_dump())
    if found:
        field, index, char = found
        field = escaped(field)  # a key may hold one too
        raise error(
            f"field '{field}' is not valid Unicode text: a lone surrogate {char!r} at index {index} (what "
            "undecodable bytes become when decoded with errors='surrogateescape')", where=where, fix=fix)


def import_callable(spec: str) -> Callable[[dict], Any]:
    """``module:function`` -> the function (EvaluationsError when it cannot be imported, has a syntax error, or is
    not callable)."""
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
    except SyntaxError as exc:  # in the module or one it imports: name that file and line
        raise EvaluationsError(f"cannot import module {module_name!r}: {type(exc).__name__}: {exc.msg}",
                               where=f"{exc.filename}:{exc.lineno}" if exc.filename else "--system",
                               fix="fix the Python syntax at that line (python -m py_compile FILE checks it)") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise EvaluationsError(f"{module_name!r} has no attribute {attr!r}", where="--system",
                                   fix="name a function defined in that module") from None
        target = getattr(target, part)
    if not callable(target):
        raise EvaluationsError(f"{spec!r} is not callable", where="--system", fix="name a function")
    return target


async def _in_own_thread(function: Callable[[dict], Any], payload: dict) -> Any:
    """``function(payload)`` in a daemon thread of its own, awaited so that cancelling the await (a timeout,
    Ctrl-C) returns at once: the thread is abandoned, and its result, if it ever comes, dropped. (anyio's worker
    threads cannot be left behind: they are waited for when the task is cancelled and when the process exits.)"""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not on asyncio: anyio's worker thread (a timeout then waits for the call)
        return await anyio.to_thread.run_sync(function, payload)
    future: asyncio.Future = loop.create_future()
    context = contextvars.copy_context()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():  # cancelled: nobody waits any more
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            outcome = (True, context.run(function, payload))
        except Exception as exc:  # noqa: BLE001 - the system's error fails its case
            outcome = (False, exc)
        except BaseException as exc:  # noqa: BLE001 - sys.exit() in a system must not end the run
            outcome = (False, RuntimeError(f"the system raised {type(exc).__name__}: {exc}"))
        try:
            loop.call_soon_threadsafe(deliver, *outcome)
        except RuntimeError:  # the loop is closed: the run is over
            pass

    threading.Thread(target=work, name=f"system call {payload.get('case_id')}", daemon=True).start()
    return await future


class CallableSystem:
    """A Python function implementing the system contract (module docstring)."""

    def __init__(self, function: Callable[[dict], Any], id: str, replies: RunReplies | None = None,
                 timeout: float | None = None):
        from evaluations.core.config import Requests

        self.function = function
        self.id = id
        self.replies = replies  # this run's earlier replies (--resume), else None
        self.timeout = timeout if timeout is not None else Requests().timeout  # seconds per call

    @classmethod
    def from_spec(cls, spec: str, timeout: float | None = None) -> CallableSystem:
        return cls(import_callable(spec), id=spec, timeout=timeout)

    async def __call__(self, request: SystemRequest) -> SystemResponse:
        return await through(self.replies, request, lambda: self._call(request))

    async def _invoke(self, payload: dict) -> Any:
        if inspect.iscoroutinefunction(self.function):
            return await self.function(payload)
        raw = await _in_own_thread(self.function, payload)
        if inspect.isawaitable(raw):
            raw = await raw
        return raw

    async def _call(self, request: SystemRequest) -> SystemResponse:
        with anyio.move_on_after(self.timeout) as scope:
            raw = await self._invoke(request.model_dump())
        if scope.cancelled_caught:
            raise SystemTimeout(
                f"no answer within {self.timeout:g} s (requests.timeout); the call was abandoned",
                where=f"system {self.id}, case {request.case_id}",
                fix="make the system answer sooner, or raise requests.timeout in the config")
        return validate_response(raw, self.id, request.case_id)
