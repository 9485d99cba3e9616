"""``build_system(spec)``: the System for a ``--system`` value (a registry of kinds by URL scheme)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evaluations.systems.base import System


def _http(spec: str, config: Any | None) -> System:
    from evaluations.systems.http import HTTPSystem

    return HTTPSystem(spec) if config is None else HTTPSystem(spec, requests=config.requests)


def _callable(spec: str, config: Any | None) -> System:
    from evaluations.systems.callable import CallableSystem

    return CallableSystem.from_spec(spec, timeout=None if config is None else config.requests.timeout)


#: URL scheme prefix -> builder; anything else is ``module:function``
KINDS: dict[str, Callable[[str, Any | None], System]] = {"http://": _http, "https://": _http}


def build_system(spec: str, config: Any | None = None, run_id: str | None = None) -> System:
    """``http(s)://…`` -> HTTPSystem (timeouts/retries from ``config`` when given, else defaults);
    ``module:function`` -> CallableSystem (imported now, so a bad spec fails before any work; its calls have the
    same ``requests.timeout``). With ``run_id``
    (and the cache on) the system reuses that run's own earlier replies (``for_run``)."""
    build = next((b for prefix, b in KINDS.items() if spec.startswith(prefix)), None)
    if build is None and "://" in spec:  # a URL of a scheme no kind serves ("ftp://", "grpc://"), not a module
        from evaluations.core.errors import EvaluationsError

        raise EvaluationsError(f"no system kind serves {spec.split('://', 1)[0]}:// URLs", where=f"--system {spec}",
                               fix=f"give an endpoint of one of {', '.join(KINDS)} or a module:function")
    build = build or _callable
    system = build(spec, config)
    return for_run(system, config, run_id) if run_id else system


def for_run(system: System, config: Any | None, run_id: str | None) -> System:
    """``system``, keeping its replies for run ``run_id`` (``systems.replies``: a resumed run does not ask
    again what it already asked), or for no run (None)."""
    from evaluations.systems.replies import run_replies

    system.replies = run_replies(config, system.id, run_id)  # type: ignore[attr-defined]
    return system
