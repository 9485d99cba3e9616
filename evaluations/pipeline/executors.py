"""Where a run's work is computed: ``local`` (this process, the default) or ``ray`` / ``ray:ADDRESS`` (a Ray
cluster: indexing embeddings on Ray Data actors, each case's system call on a pool of Ray actors).

Either way the driver (this process) alone reads the data, writes the index through ``index.store`` and writes
the run folder; pydantic-evals' ``Dataset.evaluate`` and every evaluator run here. Ray is imported only when a
run asks for it (``pipeline.ray_executor``), so a local run starts no Ray process; it is the optional ``ray`` extra
(``pip install 'evaluations[ray]'``), and asking for it without it installed is one error before any work.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from evaluations.core.config import Config
from evaluations.core.errors import EvaluationsError
from evaluations.core.extras import require
from evaluations.core.types import CaseOutput, RetrievalInputs

#: executor kind -> "module:class" built by ``open_executor`` (imported only when chosen)
EXECUTORS: dict[str, str] = {
    "local": "evaluations.pipeline.executors:LocalExecutor",
    "ray": "evaluations.pipeline.ray_executor:RayExecutor",
}

RemoteCase = Callable[[RetrievalInputs], Awaitable[tuple[CaseOutput, dict[str, float]]]]


@dataclass(frozen=True)
class ExecutorSpec:
    kind: str  # a key of EXECUTORS
    address: str | None = None  # ray: None = start or join a local cluster; "auto", "ray://host:10001", ...


def parse_executor(text: str, where: str = "executor") -> ExecutorSpec:
    """``local`` | ``ray`` | ``ray:ADDRESS`` -> ``ExecutorSpec``; anything else, or ``ray`` without the ``ray``
    extra installed, is one EvaluationsError."""
    kind, _, address = text.strip().partition(":")
    if kind not in EXECUTORS or (kind == "local" and address) or (_ and not address):
        raise EvaluationsError(f"unknown executor {text!r}", where=where,
                               fix="use local, ray (start or join a local Ray cluster) or ray:ADDRESS "
                                   "(e.g. ray:auto, ray:ray://head:10001)")
    if kind == "ray":
        require("ray", f"the Ray executor ({text.strip()!r})", where=where, otherwise="use --executor local")
    return ExecutorSpec(kind, address or None)


@dataclass(frozen=True)
class WorkerSetup:
    """Everything a case worker needs to build the system under test itself (it must be picklable)."""

    config: Config
    k: int  # documents asked of the system (max --k)
    system: str | None  # a user's system ("module:function" or a URL), or None: the built-in pipeline
    db: str | None  # the built-in pipeline's index, already brought up to date by the driver
    queries: list[str] = field(default_factory=list)  # the pending queries (their vectors are batched once)
    qa: bool = False  # the QA agent answers (built from config.qa.model in each worker)
    max_context_chars: int | None = None
    workers: int = 1  # at most this many workers (the run's concurrency; fewer when the cluster has fewer CPUs)
    name: str = "run"  # names the workers (``cases:<name>:<pool>:<i>``) so they can be found on the cluster
    texts: dict[str, str] | None = None  # corpus text by id, for a system's items without text the QA agent reads
    run_id: str | None = None  # the run folder's id: a user's system reuses only this run's replies (--resume)


class LocalExecutor:
    """Everything in this process: no embedding hook, no remote cases."""

    in_process = True  # models are shared by the run's concurrent cases (an embedded model: one at a time)

    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec

    def describe(self) -> dict[str, Any]:
        return {"kind": "local"}

    def embed_batches(self, config: Config) -> Any | None:
        return None

    def case_runner(self, setup: WorkerSetup) -> RemoteCase | None:
        return None

    def map_tasks(self, fn: Callable[..., Any], calls: list[tuple]) -> list[Any]:
        """``[fn(*args) for args in calls]``, here, one after the other."""
        return [fn(*args) for args in calls]

    def close(self) -> None:
        return None


def open_executor(text: str, where: str = "executor") -> Any:
    """The executor named by ``text`` (``config.executor`` / ``--executor``), connected (a Ray cluster is joined
    or started here, so an unreachable address fails before any work)."""
    spec = parse_executor(text, where)
    module, _, cls = EXECUTORS[spec.kind].partition(":")
    return getattr(importlib.import_module(module), cls)(spec)
