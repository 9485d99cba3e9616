"""``--executor ray[:ADDRESS]``: a run's heavy work on a Ray cluster, on Ray's public API only.

- Indexing: the chunks without a vector are embedded by Ray Data (``map_batches`` on an actor pool whose
  actors load the embedder once); the vectors come back to the driver in order and ``index.store`` writes
  them, so the content-hash incremental rule and the corpus fingerprint are the local run's.
- Cases: pydantic-evals' ``Dataset.evaluate`` stays on the driver (streamed ``cases.jsonl``, resume, atomic
  files, evaluators); each case's system call (retrieval + QA answer, ``RagTask.run_case``) goes to one of a
  pool of actors, each of which builds the system once (``WorkerSetup``). An actor that dies is restarted by
  Ray (``max_restarts``) and its call retried (``max_task_retries``); a call that still fails with an actor
  error is sent to another actor. The driver records exactly one result per case: none lost or duplicated.
- Model calls: each result carries the worker's cache and retry counts for that case; the driver adds them
  to its own, so ``summary.json`` ``model_calls`` counts every call. The cache is the one SQLite file of
  ``cache.path``: on one machine (or storage every node mounts) every worker shares it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import ray
from ray.exceptions import RayActorError, RayTaskError

from evaluations.core.config import Config
from evaluations.core.errors import EvaluationsError
from evaluations.core.types import CaseOutput, RetrievalInputs
from evaluations.pipeline.executors import ExecutorSpec, WorkerSetup
from evaluations.pipeline.task import RagTask

_POOLS = itertools.count()  # numbers this process's pools: actor names never clash
RESTARTS = 3  # per case actor: Ray restarts a dead one this many times (Ray Data restarts its own embedding actors)
ATTEMPTS_PER_ACTOR = 2  # a case whose call keeps failing with an actor error is tried on this many actors each


class RayExecutor:
    """Joins the cluster at ``spec.address`` (or starts a local one) unless this process already did."""

    in_process = False  # every case worker loads its own models

    def __init__(self, spec: ExecutorSpec) -> None:
        self.spec = spec
        if not ray.is_initialized():
            _check_reachable(spec.address)
            try:
                ray.init(address=spec.address, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR, configure_logging=False)
            except Exception as exc:  # ConnectionError, ValueError, RuntimeError, TimeoutError: one message
                raise EvaluationsError(
                    f"cannot reach the Ray cluster at {spec.address or 'a new local cluster'}: "
                    f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                    where="--executor / executor",
                    fix="start it (ray start --head) and pass its address (ray:auto, ray:HOST:6379 or "
                        "ray:ray://HOST:10001), or use --executor local") from None
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.pools: list[CasePool] = []

    def describe(self) -> dict[str, Any]:
        return {"kind": "ray", "address": ray.get_runtime_context().gcs_address, "workers": self.workers}

    def embed_batches(self, config: Config) -> Any:
        return RayEmbedder(config, self.workers)

    def case_runner(self, setup: WorkerSetup) -> CasePool:
        pool = CasePool(setup, min(self.workers, setup.workers))
        self.pools.append(pool)
        return pool

    def map_tasks(self, fn: Callable[..., Any], calls: list[tuple]) -> list[Any]:
        """``fn(*args)`` for every ``args`` as Ray tasks side by side, results in order. ``num_cpus=0``: a task
        only drives (its heavy work runs on the actors it starts), so it never holds CPUs those actors need."""
        remote = ray.remote(num_cpus=0, max_retries=0)(fn)
        refs = [remote.remote(*args) for args in calls]
        try:
            return ray.get(refs)
        except RayTaskError as exc:  # an EvaluationsError in a cell stays one message (exit 2)
            raise _cause(exc) from None

    def close(self) -> None:
        for pool in self.pools:
            pool.close()
        self.pools.clear()


def _check_reachable(address: str | None) -> None:
    """A ``HOST:PORT`` or ``ray://HOST:PORT`` address answers a TCP connection within 5 s (Ray itself retries
    an unreachable address for minutes)."""
    if address is None or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as exc:
        raise EvaluationsError(
            f"cannot reach the Ray cluster at {address}: {exc}", where="--executor / executor",
            fix="start it (ray start --head) and pass its address (ray:auto, ray:HOST:6379 or ray:ray://HOST:10001), "
                "or use --executor local") from None


def _cause(error: RayTaskError) -> BaseException:
    """The exception the remote code raised (what a local run would have seen), when Ray could ship it."""
    return error.cause if isinstance(error.cause, Exception) else error


# -- indexing: Ray Data ----------------------------------------------------------------------------
class _EmbedActor:
    """One Ray Data actor: loads the embedder once, embeds each batch of chunk texts."""

    def __init__(self, config: Config) -> None:
        from evaluations.models.embedders import build_embedder

        self.embedder = build_embedder(config)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = self.embedder.embed([str(t) for t in batch["text"]], kind="document")
        return {"i": batch["i"], "vector": np.asarray(vectors, dtype=np.float32)}


class RayEmbedder:
    """``Store(embed_batches=…)``: all texts of all write batches through one Ray Data pipeline, vectors back
    batch by batch in the store's order (rows carry their position; the driver reorders)."""

    BATCH = 256  # texts per Ray Data batch: small enough that two actors share a corpus evenly

    def __init__(self, config: Config, workers: int) -> None:
        self.config = config
        self.workers = workers

    def __call__(self, batches: list[list[str]]) -> Iterator[np.ndarray]:
        texts = [t for batch in batches for t in batch]
        if not texts:
            return
        import ray.data

        ray.data.DataContext.get_current().enable_progress_bars = False  # the run shows its own progress
        dataset = ray.data.from_items([{"i": i, "text": t} for i, t in enumerate(texts)])
        # no more actors than batches: an actor without a batch would only load the embedder (seconds, and memory)
        actors = min(self.workers, -(-len(texts) // self.BATCH))
        embedded = dataset.map_batches(
            _EmbedActor, fn_constructor_args=(self.config,), batch_size=self.BATCH, batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=actors), num_cpus=1)  # Ray Data restarts a dead actor
        vectors: np.ndarray | None = None
        for batch in embedded.iter_batches(batch_size=None, batch_format="numpy"):
            if vectors is None:
                vectors = np.zeros((len(texts), batch["vector"].shape[1]), dtype=np.float32)
            vectors[batch["i"]] = batch["vector"]
        start = 0
        for batch in batches:
            yield vectors[start:start + len(batch)]
            start += len(batch)


# -- cases: an actor pool --------------------------------------------------------------------------
def build_worker_task(setup: WorkerSetup) -> RagTask:
    """The system under test as the driver would build it, from ``setup`` (inside a worker)."""
    config = setup.config
    if setup.system is not None:
        from evaluations.systems import build_system

        task = RagTask(system=build_system(setup.system, config, setup.run_id), k=setup.k,
                       context_limit=config.search.limit, texts=setup.texts)
    else:
        from evaluations.index.store import Store
        from evaluations.models.embedders import build_embedder
        from evaluations.pipeline.runner import make_retriever

        store = Store(setup.db, build_embedder(config), settings=config.lancedb)
        retriever = make_retriever(store, config, setup.k)
        retriever.prepare(setup.queries)  # the driver embedded them already: read from the query cache
        task = RagTask(retriever=retriever)
    if setup.qa:
        from evaluations.models.chat import build_model, model_settings
        from evaluations.pipeline.qa_agent import build_qa_agent

        task.agent = build_qa_agent(build_model(config.qa.model, config), model_settings(config.qa.model))
        task.max_context_chars = setup.max_context_chars
    return task


@ray.remote
class CaseWorker:
    """Builds the system once; runs one case at a time (so its call counts are that case's)."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.task = build_worker_task(setup)

    async def run(self, inputs: RetrievalInputs) -> tuple[CaseOutput, dict[str, float], dict[str, Any]]:
        from evaluations.models.cache import call_stats, reset_call_stats
        from evaluations.models.ladder import lessons
        from evaluations.models.retry import RETRY_STATS

        reset_call_stats()
        RETRY_STATS.reset()
        output, metrics = await self.task.run_case(inputs)
        spent = {"calls": call_stats(), "waits": list(RETRY_STATS.waits), "gave_up": RETRY_STATS.gave_up,
                 "ladder": lessons()}  # what the QA ladder learnt of a served model: the driver's judges ask it too
        return output, metrics, spent


def _count(spent: dict[str, Any]) -> None:
    """Add a worker's model calls and retries for one case to this (the driver's) process counters, and what its
    output-mode ladders learnt to this process's (``ladder.take_lessons``)."""
    from evaluations.models.cache import CALL_STATS
    from evaluations.models.ladder import take_lessons
    from evaluations.models.retry import RETRY_STATS

    take_lessons(spent.get("ladder", {}))

    for kind, stats in spent["calls"].items():
        CALL_STATS[kind].add(hits=stats["cached"], misses=stats["live"], errors=stats["failed"])
    for reason, wait in spent["waits"]:
        RETRY_STATS.record_retry(reason, wait)
    for _ in range(spent["gave_up"]):
        RETRY_STATS.record_give_up()


class CasePool:
    """``RagTask.remote``: a case goes to the next idle actor (named ``cases:<run folder>:<pool>:<i>``)."""

    def __init__(self, setup: WorkerSetup, size: int) -> None:
        # num_cpus=0 and SPREAD: case actors never wait for CPUs another run's actors hold (matrix cells run
        # side by side), and spread over the nodes of a cluster
        self.actors = [
            CaseWorker.options(name=f"cases:{setup.name}:{next(_POOLS)}:{i}", max_restarts=RESTARTS, max_task_retries=RESTARTS,
                               max_concurrency=1, num_cpus=0, scheduling_strategy="SPREAD").remote(setup)
            for i in range(max(1, size))]
        self._idle: asyncio.Queue | None = None

    async def __call__(self, inputs: RetrievalInputs) -> tuple[CaseOutput, dict[str, float]]:
        if self._idle is None:  # made in the loop pydantic-evals runs the cases in
            self._idle = asyncio.Queue()
            for actor in self.actors:
                self._idle.put_nowait(actor)
        error: BaseException | None = None
        for _ in range(ATTEMPTS_PER_ACTOR * len(self.actors)):
            actor = await self._idle.get()
            try:
                output, metrics, spent = await actor.run.remote(inputs)
            except RayTaskError as exc:  # the system itself failed: the case fails as it would locally
                raise _cause(exc) from None
            except RayActorError as exc:  # the worker died and Ray gave up on it: try another worker
                error = exc
                continue
            finally:
                self._idle.put_nowait(actor)
            _count(spent)
            return output, metrics
        raise RuntimeError(f"every Ray worker failed on case {inputs.case_id}: {error}")

    def close(self) -> None:
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
