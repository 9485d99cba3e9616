"""The one on-disk cache store, and the cache of model calls: QA agent, LLM judge (pydantic-ai models), server
embeddings.

``ModelCache`` is a key -> value store in one SQLite file (WAL journal, so threads and processes share it safely),
each entry tagged with its kind (a namespace: ``chat``, ``embed``, the embedded judge's ``verdict``, the semantic
judge's ``judge_embedding``). ``open_store(path)`` gives one store per process and file. The model-call cache
is the store at ``cache.path`` (default ``<data_dir>/cache/model_calls.sqlite``). An entry is written only after
a call succeeded: failed calls are never cached. ``--no-cache`` (``cache.enabled: false``) bypasses it; the calls
are still counted. A file of an older format is a valid SQLite file with other tables: they are left alone and
ignored (it is a cache), the store's own table is created beside them.

Chat key = sha256 of the canonical JSON (sorted keys) of::

    {system, model name, base URL, merged model settings, request parameters (tools, output schema,
     output mode), messages}

Messages are dumped with ``ModelMessagesTypeAdapter``; what is not sent to the model is left out
(timestamps, run and conversation ids, provider response ids, usage), and tool-call ids are renumbered in order of first
appearance, so the same conversation always has the same key. The value is the ``ModelResponse``,
serialised the same way. Embedding key = sha256 of (provider, model, base URL, text): one entry per text,
so batches that overlap reuse each other's vectors.

``CALL_STATS`` counts, per kind ("chat", "embed"): ``hits`` (answered from the cache), ``misses`` (sent
to the model), ``errors`` (failed calls); ``calls = hits + misses``.

A stage that tries several requests until one works (the QA agent's and the LLM judge's output-mode ladders)
runs through ``replay_first``: first answering every request from the cache only (a request that is not there,
e.g. one that failed when the cache was filled, fails its step with ``CacheMiss`` instead of going to the
model), then, only when the cached replies alone could not finish the stage, live. So a re-run of the same
stage repeats none of the first run's failed calls, and returns what the first run returned.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from evaluations.models.meter import count_calls

if TYPE_CHECKING:
    from evaluations.core.config import Config

logger = logging.getLogger(__name__)
Value = str | bytes  # what the store keeps per key: JSON text, or packed bytes (e.g. float32 vectors)

KEY_VERSION = 1
# message fields that are bookkeeping, not request content (they differ between identical requests)
_NOT_SENT = frozenset({"timestamp", "run_id", "conversation_id", "provider_response_id", "provider_details", "usage",
                       "metadata", "state", "workspace_ref", "history_digest", "failed_attempts"})


# -- statistics ----------------------------------------------------------------------------------
@dataclass
class CacheStats:
    """Model calls of one kind: ``hits`` from the cache, ``misses`` sent to the model, ``errors`` failed."""

    hits: int = 0
    misses: int = 0
    errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def calls(self) -> int:
        return self.hits + self.misses

    def add(self, *, hits: int = 0, misses: int = 0, errors: int = 0) -> None:
        with self._lock:
            self.hits += hits
            self.misses += misses
            self.errors += errors

    def reset(self) -> None:
        with self._lock:
            self.hits = self.misses = self.errors = 0

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return {"calls": self.hits + self.misses, "cached": self.hits, "live": self.misses, "failed": self.errors}


CALL_STATS: dict[str, CacheStats] = {"chat": CacheStats(), "embed": CacheStats()}


def reset_call_stats() -> None:
    for stats in CALL_STATS.values():
        stats.reset()


def call_stats() -> dict[str, dict[str, int]]:
    """``{"chat": {calls, cached, live, failed}, "embed": {...}}`` since the last ``reset_call_stats``."""
    return {kind: stats.as_dict() for kind, stats in CALL_STATS.items()}


def call_stats_line(stats: dict[str, dict[str, int]] | None = None) -> str:
    """``model calls: N (cached M)`` for the console (embedding requests counted apart when any), from
    ``stats`` as ``call_stats()`` gives them (e.g. a run's ``summary.json`` ``model_calls``), default the live ones."""
    stats = stats or call_stats()
    empty = {"calls": 0, "cached": 0, "failed": 0}
    chat, embed = stats.get("chat", empty), stats.get("embed", empty)
    line = f"model calls: {chat['calls']} (cached {chat['cached']}"
    line += f", failed {chat['failed']})" if chat["failed"] else ")"
    if embed["calls"]:
        line += f"; embedding requests: {embed['calls']} (cached {embed['cached']})"
    return line


# -- storage -------------------------------------------------------------------------------------
class ModelCache:
    """A key -> value (text or bytes) store in one SQLite file; one connection per thread (and per process).
    Use ``open_store(path)`` (one store per process and file) rather than a new instance per use."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, kind TEXT NOT NULL, "
                         "value TEXT NOT NULL, created REAL NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid():
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def get(self, key: str) -> Value | None:
        row = self._connect().execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def get_many(self, keys: Sequence[str]) -> dict[str, Value]:
        found: dict[str, Value] = {}
        conn = self._connect()
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):  # SQLite's bound-parameter limit
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            found.update(conn.execute(f"SELECT key, value FROM calls WHERE key IN ({marks})", part).fetchall())
        return found

    def put_many(self, kind: str, items: Sequence[tuple[str, Value]]) -> None:
        """Store ``items``; a cache that cannot be written (disk full, locked too long) only logs a warning:
        the call it would have saved has already succeeded."""
        try:
            self._put_many(kind, items)
        except sqlite3.Error as exc:
            logger.warning("model-call cache %s not written: %s", self.path, exc)

    def _put_many(self, kind: str, items: Sequence[tuple[str, Value]]) -> None:
        now = time.time()
        conn = self._connect()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR REPLACE INTO calls (key, kind, value, created) VALUES (?, ?, ?, ?)",
                             [(key, kind, value, now) for key, value in items])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def put(self, kind: str, key: str, value: Value) -> None:
        self.put_many(kind, [(key, value)])

    def count(self, kind: str) -> int:
        """The number of entries of ``kind``."""
        return self._connect().execute("SELECT COUNT(*) FROM calls WHERE kind = ?", (kind,)).fetchone()[0]

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM calls").fetchone()[0]


_stores: dict[Path, ModelCache] = {}
_stores_lock = threading.Lock()


def _unopenable(path: Path, exc: Exception, origin: str | None, what: str) -> Exception:
    """The EvaluationsError of a cache file that cannot be created or opened, naming beside the path the setting
    ``origin`` it came from (a config key, ``environment variable NAME``; None: the variable whose value holds
    the path, ``core.env.path_origin``, if any)."""
    from evaluations.core.env import path_origin
    from evaluations.core.errors import EvaluationsError

    if origin is None and (variable := path_origin(path)):
        origin = f"environment variable {variable}"
    where = f"{origin} ({path})" if origin else str(path)
    name = origin.removeprefix("environment variable ") if origin else None
    target = f"point {name} at a path you can write" if name else "make that folder writable"
    damaged = " or move the damaged file aside (a new one is made)" if path.is_file() else ""
    return EvaluationsError(f"cannot open {what} ({exc})", where=where,
                            fix=f"{target}{damaged}; or turn the cache off (cache.enabled: false in the config, or "
                                "--no-cache where a command has it)")


def open_store(path: Path, *, origin: str | None = None, what: str = "the cache") -> ModelCache:
    """The store of file ``path``, opened once per process (every later call returns the same store).

    A file that cannot be created or opened (its folder cannot be made, no permission, not a SQLite file) is
    one EvaluationsError naming the path and ``origin``, the setting it came from (``_unopenable``)."""
    path = Path(path).expanduser().resolve()
    with _stores_lock:
        if path not in _stores:
            try:
                _stores[path] = ModelCache(path)
            except (OSError, sqlite3.Error) as exc:
                raise _unopenable(path, exc, origin, what) from None
        return _stores[path]


def open_cache(config: Config) -> ModelCache | None:
    """The cache at ``config.cache_path()``, or None when ``cache.enabled`` is false (``--no-cache``)."""
    if not config.cache.enabled:
        return None
    return open_store(config.cache_path(), origin=config.cache_origin(), what="the model-call cache")


# -- keys ----------------------------------------------------------------------------------------
def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_key(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def _strip(value: Any, ids: dict[str, str]) -> Any:
    """Drop what is not sent to the model; renumber tool-call ids in order of first appearance."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _NOT_SENT:
                continue
            if key == "tool_call_id" and isinstance(item, str):
                item = ids.setdefault(item, f"call_{len(ids)}")
            out[key] = _strip(item, ids)
        return out
    if isinstance(value, list):
        return [_strip(item, ids) for item in value]
    return value


_PARAMS = TypeAdapter(ModelRequestParameters)


def chat_key(model: Model, messages: list[ModelMessage], settings: ModelSettings | None,
             parameters: ModelRequestParameters) -> str:
    """sha256 of everything that decides the reply (see the module docstring)."""
    dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    return sha256_key({
        "v": KEY_VERSION,
        "system": model.system,
        "model": model.model_name,
        "base_url": model.base_url,
        "settings": dict(settings or {}),
        "parameters": _PARAMS.dump_python(parameters, mode="json"),
        "messages": _strip(dumped, {}),
    })


def _dump_response(response: ModelResponse) -> str:
    return ModelMessagesTypeAdapter.dump_json([response]).decode()


def _load_response(text: str) -> ModelResponse:
    (response,) = ModelMessagesTypeAdapter.validate_json(text)
    assert isinstance(response, ModelResponse)
    return response


# -- replaying a stage from the cache -------------------------------------------------------------------
class CacheMiss(Exception):
    """A request that is not in the cache, met while a stage replays from the cache only (no call was made)."""


@dataclass
class _Replay:
    hits: int = 0


_REPLAY: ContextVar[_Replay | None] = ContextVar("evaluations_cache_replay", default=None)
T = TypeVar("T")


async def replay_first(model: Any, stage: Callable[[], Awaitable[T]]) -> T:
    """``await stage()`` answered from the cache alone when it can be, else live (module docstring).

    The replay's cache hits are counted only when it finished the stage; a stage that raised or met a
    ``CacheMiss`` it could not get past is run again live (its cached requests are then counted there).
    Without a cache (``--no-cache``, or a model not behind ``CachedModel``) the stage runs live at once."""
    if not isinstance(model, CachedModel) or model.cache is None:
        return await stage()
    replay = _Replay()
    token = _REPLAY.set(replay)
    try:
        result = await stage()
        replayed = True
    except Exception:  # noqa: BLE001 - whatever stopped the replay, the live run decides
        replayed = False
    finally:
        _REPLAY.reset(token)
    if not replayed:
        return await stage()
    model.stats.add(hits=replay.hits)
    return result


# -- the chat-model wrapper ------------------------------------------------------------------------
class CachedModel(WrapperModel):
    """A pydantic-ai model answering repeated requests from ``cache`` (None: counts calls only).

    Streamed requests (``request_stream``) are passed through uncached.
    """

    def __init__(self, wrapped: Model, cache: ModelCache | None, stats: CacheStats | None = None) -> None:
        super().__init__(wrapped)
        self.cache = cache
        self.stats = stats if stats is not None else CALL_STATS["chat"]

    @property
    def base_url(self) -> str | None:
        return self.wrapped.base_url

    def key(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
            model_request_parameters: ModelRequestParameters) -> str:
        settings, parameters = self.prepare_request(model_settings, model_request_parameters)
        return chat_key(self.wrapped, messages, settings, parameters)

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        key = None
        replay = _REPLAY.get()
        if self.cache is not None:
            key = self.key(messages, model_settings, model_request_parameters)
            stored = self.cache.get(key)
            if stored is not None:
                if replay is not None:
                    replay.hits += 1
                else:
                    self.stats.add(hits=1)
                return _load_response(stored)
        if replay is not None:
            raise CacheMiss("not in the model-call cache (the run that filled it did not get this reply)")
        self.stats.add(misses=1)
        count_calls()  # a request actually sent (``models.meter``: what judging a case cost)
        try:
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        except BaseException:
            self.stats.add(errors=1)
            raise
        if key is not None:
            self.cache.put("chat", key, _dump_response(response))
        return response


def cached_model(model: Model, config: Config) -> CachedModel:
    """``model`` behind the cache of ``config`` (``cache.enabled``/``cache.path``); calls counted either way."""
    return CachedModel(model, open_cache(config))


# -- embeddings ------------------------------------------------------------------------------------
def cached_embed(
    cache: ModelCache | None,
    identity: dict[str, Any],
    texts: list[str],
    embed: Callable[[list[str]], list[list[float]]],
    stats: CacheStats | None = None,
) -> list[list[float]]:
    """``embed(texts)`` with each text's vector cached under sha256(identity + text).

    ``identity`` names the server model (provider, name, base URL). ``embed`` is called once, with the
    texts not in the cache (in their order), and must return one vector per text; a failure propagates
    and nothing of it is stored. ``stats`` counts one call per text.
    """
    stats = stats if stats is not None else CALL_STATS["embed"]
    if cache is None:
        stats.add(misses=len(texts))
        try:
            return embed(texts)
        except BaseException:
            stats.add(errors=len(texts))
            raise
    keys = [sha256_key({"v": KEY_VERSION, **identity, "text": text}) for text in texts]
    found = {key: json.loads(value) for key, value in cache.get_many(keys).items()}
    missing = list(dict.fromkeys(text for text, key in zip(texts, keys) if key not in found))
    stats.add(hits=len(texts) - len(missing), misses=len(missing))
    if missing:
        try:
            vectors = embed(missing)
        except BaseException:
            stats.add(errors=len(missing))
            raise
        if len(vectors) == len(missing):  # a wrong count is the caller's error to raise; store nothing
            new = {sha256_key({"v": KEY_VERSION, **identity, "text": t}): list(v) for t, v in zip(missing, vectors)}
            cache.put_many("embed", [(key, json.dumps(vector)) for key, vector in new.items()])
            found.update(new)
        else:
            return vectors
    return [found[key] for key in keys]
