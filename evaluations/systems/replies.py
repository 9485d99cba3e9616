"""A system's replies, kept for the run that got them (never for another run).

A system under test is called on every run: a run measures the system as it is now, and a system redeployed at
the same URL (or a function edited in place) would otherwise be scored by its old replies. The one reuse is
``--resume``: the replies the interrupted session already got are those of the same run, so a case whose system
call had finished before the interruption is not sent again. Replies are stored in the model-call cache
(``cache.enabled``; ``--no-cache``: none kept) under ``sha256({"system", "run", "request"})``, where ``run`` is
the run folder's ``run_id`` (``results.folder``: made when the run starts, kept by ``--resume``, new after
``--overwrite``).

A reply is kept with the time the system took to give it (``latency_ms``: the stages it reported, else
``retrieve``, and ``total``: the call's wall time unless it reported one), so a resumed run records the system's
latency as a straight run does, not the cache lookup's.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from evaluations.systems.base import SystemRequest, SystemResponse

KIND = "system"  # the cache entries' kind


class RunReplies:
    """The replies of system ``system_id`` in run ``run_id``, in ``cache`` (a ``models.cache.ModelCache``)."""

    def __init__(self, cache: Any, system_id: str, run_id: str):
        self.cache, self.system_id, self.run_id = cache, system_id, run_id

    def key(self, request: SystemRequest) -> str:
        from evaluations.models.cache import sha256_key

        return sha256_key({"system": self.system_id, "run": self.run_id, "request": request.model_dump()})

    def get(self, request: SystemRequest) -> SystemResponse | None:
        hit = self.cache.get(self.key(request))
        if hit is None:
            return None
        try:
            return SystemResponse.model_validate_json(hit)
        except ValidationError:  # not written by this version: ask the system again
            return None

    def put(self, request: SystemRequest, response: SystemResponse) -> None:
        try:
            text = response.model_dump_json()
        except ValueError:  # an extra field JSON cannot hold (a callable's own object): not kept
            return
        self.cache.put(KIND, self.key(request), text)


def replayed(response: SystemResponse, wall_ms: float) -> SystemResponse:
    """``response`` with the time it took: its ``latency_ms`` the stages it reported (none: ``retrieve``, the
    call's ``wall_ms``, as the task records a system that reports none) and ``total`` (``wall_ms`` unless it
    reported one)."""
    reported = dict(response.latency_ms or {}) or {"retrieve": wall_ms}
    reported.setdefault("total", wall_ms)
    return response.model_copy(update={"latency_ms": reported})


async def through(replies: RunReplies | None, request: SystemRequest,
                  call: Callable[[], Awaitable[SystemResponse]]) -> SystemResponse:
    """``call()``'s response, or this run's earlier reply to ``request`` when ``replies`` holds one; kept, it
    carries its latency (``replayed``), the same whether it was just given or is reused."""
    if replies is None:
        return await call()
    hit = replies.get(request)
    if hit is not None:
        return hit
    started = time.perf_counter()
    response = replayed(await call(), (time.perf_counter() - started) * 1000)  # the same now as when reused
    replies.put(request, response)
    return response


def run_replies(config: Any | None, system_id: str, run_id: str | None) -> RunReplies | None:
    """The replies of one run, or None: no config, no run id (a run folder made before run ids), or the cache
    is off."""
    if config is None or not run_id:
        return None
    from evaluations.models.cache import open_cache

    cache = open_cache(config)
    return None if cache is None else RunReplies(cache, system_id, run_id)
