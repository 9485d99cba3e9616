"""``build_system(spec)``: the System for a ``--system`` value (a registry of kinds by URL scheme)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evaluations.systems.base import System


def _http(spec: str, config: Any | None) -> System:
    from evaluations.systems.http import HTTPSystem

    if config is None:
        return HTTPSystem(spec)
    from evaluations.models.cache import open_cache

    return HTTPSystem(spec, requests=config.requests, cache=open_cache(config))


def _callable(spec: str, config: Any | None) -> System:
    from evaluations.systems.callable import CallableSystem

    return CallableSystem.from_spec(spec)


#: URL scheme prefix -> builder; anything else is ``module:function``
KINDS: dict[str, Callable[[str, Any | None], System]] = {"http://": _http, "https://": _http}


def build_system(spec: str, config: Any | None = None) -> System:
    """``http(s)://…`` -> HTTPSystem (timeouts/retries/cache from ``config`` when given, else defaults);
    ``module:function`` -> CallableSystem (imported now, so a bad spec fails before any work)."""
    for prefix, build in KINDS.items():
        if spec.startswith(prefix):
            return build(spec, config)
    return _callable(spec, config)
