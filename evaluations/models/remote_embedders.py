"""Embedders served over HTTP: Ollama (``/api/embed``) and any OpenAI-compatible ``/v1/embeddings``.

``embedders.EMBEDDERS`` builds them (providers "ollama" and "openai") with ``from_config``. Both batch by
``embeddings.model.batch_size``, return L2-normalised float32 rows, and check the returned dimension against
``embeddings.model.vector_dim`` when it is set. Embedding requests use the
``requests`` timeout and retries (``evaluations.models.retry``) and the model-call cache (one entry per
text, ``evaluations.models.cache.cached_embed``; off with ``--no-cache``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from evaluations.core.errors import EvaluationsError
from evaluations.models.embedding import Embedder, Kind, normalize

if TYPE_CHECKING:
    from evaluations.core.config import Config, Requests
    from evaluations.models.cache import ModelCache

_CHECK_TIMEOUT = 5.0
_EMBEDDED_HINT = "or use the built-in model: embeddings.model.provider: embedded"


def _has_model(available: list[str], name: str) -> bool:
    """Ollama lists "name:tag"; a bare name means ":latest"."""
    return name in available or (":" not in name and f"{name}:latest" in available)


class _RemoteEmbedder(Embedder):
    provider: str
    url_key: str

    def __init__(self, *, name: str, base_url: str, batch_size: int, vector_dim: int | None,
                 requests: Requests | None = None, cache: ModelCache | None = None):
        from evaluations.core.config import Requests

        self.name = name
        self.base_url = base_url.rstrip("/")
        self.batch_size = batch_size
        self.vector_dim = vector_dim
        self.id = f"{self.provider}:{name}"
        self.requests = requests or Requests()
        self.cache = cache

    def _unreachable(self, exc: Exception) -> EvaluationsError:
        return EvaluationsError(
            f"cannot reach the {self.provider} embeddings server at {self.base_url} ({exc})",
            where=self.url_key,
            fix=f"start the server or correct {self.url_key.removeprefix('environment variable ')}; "
                f"{_EMBEDDED_HINT}",
        )

    def _missing(self) -> EvaluationsError:
        pull = f"run `ollama pull {self.name}`" if self.provider == "ollama" else "use a model the server lists"
        return EvaluationsError(
            f"embedding model {self.name!r} is not available on {self.base_url}",
            where="embeddings.model.name",
            fix=f"{pull}, or correct embeddings.model.name; {_EMBEDDED_HINT}",
        )

    def _failed(self, exc: Exception) -> EvaluationsError:
        return EvaluationsError(
            f"the {self.provider} embeddings server at {self.base_url} failed for model {self.name!r}: {exc}",
            where=self.url_key,
            fix="check the server's log; retry, or lower embeddings.model.batch_size",
        )

    def _list_models(self) -> list[str]:
        raise NotImplementedError

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    @functools.cached_property
    def _embed_client(self):
        return self._client(self.requests.timeout, retries=True)

    def _client(self, timeout: float, retries: bool = False):
        """The server's client; ``retries``: with the ``requests`` timeout and retries (its own retries off)."""
        raise NotImplementedError

    def _cached_embed_batch(self, texts: list[str]) -> list[list[float]]:
        from evaluations.models.cache import cached_embed

        identity = {"kind": "embed", "provider": self.provider, "model": self.name, "base_url": self.base_url}
        return cached_embed(self.cache, identity, texts, self._embed_batch)

    def check(self) -> None:
        """Server reachable, model listed, and a probe embedding has the configured dimension."""
        if not _has_model(self._list_models(), self.name):
            raise self._missing()
        self.embed(["probe"])

    def embed(self, texts: list[str], *, kind: Kind = "document") -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            vectors = self._cached_embed_batch(batch)
            if len(vectors) != len(batch):
                raise self._failed(ValueError(f"{len(vectors)} embeddings returned for {len(batch)} texts"))
            rows.extend(vectors)
        if not rows:
            return np.zeros((0, self.vector_dim or 0), dtype=np.float32)
        array = np.asarray(rows, dtype=np.float32)
        if self.vector_dim is not None and array.shape[1] != self.vector_dim:
            raise EvaluationsError(
                f"model {self.id} returns {array.shape[1]}-dimensional vectors, "
                f"but embeddings.model.vector_dim is {self.vector_dim}",
                where="embeddings.model.vector_dim",
                fix=f"set embeddings.model.vector_dim: {array.shape[1]} (or null to accept what the model returns)",
            )
        return normalize(array)


class OllamaEmbedder(_RemoteEmbedder):
    """``ollama.Client(host=providers.ollama.base_url).embed(model=..., input=[...])``."""

    provider = "ollama"
    url_key = "providers.ollama.base_url"

    def _client(self, timeout: float, retries: bool = False):
        import ollama

        from evaluations.models.retry import legacy_sync_transport

        extra = {"transport": legacy_sync_transport(self.requests)} if retries else {}
        return ollama.Client(host=self.base_url, timeout=timeout, **extra)

    def _call(self, fn):
        import ollama

        try:
            return fn()
        except ConnectionError as exc:
            raise self._unreachable(exc) from None
        except ollama.ResponseError as exc:
            if exc.status_code == 404 and "not found" in str(exc.error):
                raise self._missing() from None
            raise self._failed(exc) from None
        except Exception as exc:  # httpx transport errors, malformed replies
            raise self._failed(exc) from None

    def _list_models(self) -> list[str]:
        listing = self._call(lambda: self._client(_CHECK_TIMEOUT).list())
        return [m.model for m in listing.models if m.model]

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        response = self._call(lambda: self._embed_client.embed(model=self.name, input=texts))
        return list(response.embeddings)

    @classmethod
    def from_config(cls, config: Config) -> OllamaEmbedder:
        model = config.embeddings.model
        embedder = cls(name=model.name, base_url=config.providers.ollama.base_url, batch_size=model.batch_size,
                       vector_dim=model.vector_dim, **_call_options(config))
        embedder.url_key = config.origin(cls.url_key)  # the key, or the variable the URL came from
        return embedder


class OpenAIEmbedder(_RemoteEmbedder):
    """``openai.OpenAI(base_url=..., api_key=...).embeddings.create(model=..., input=[...])``."""

    provider = "openai"

    def __init__(self, *, api_key: str, url_key: str, **kwargs):
        self.url_key = url_key
        self._api_key = api_key or "api-key-not-set"  # local OpenAI-compatible servers need none
        super().__init__(**kwargs)

    def _client(self, timeout: float, retries: bool = False):
        import openai

        from evaluations.models.retry import sync_client

        return openai.OpenAI(base_url=self.base_url, api_key=self._api_key, timeout=timeout, max_retries=0,
                             http_client=sync_client(self.requests) if retries else None)

    def _call(self, fn):
        import openai

        try:
            return fn()
        except openai.APIConnectionError as exc:
            raise self._unreachable(exc) from None
        except openai.NotFoundError:
            raise self._missing() from None
        except openai.AuthenticationError as exc:
            raise EvaluationsError(
                f"the server at {self.base_url} rejected the API key ({exc.status_code})",
                where="providers.openai.api_key",
                fix="set providers.openai.api_key (or providers.api_keys.openai, or $OPENAI_API_KEY)",
            ) from None
        except Exception as exc:
            raise self._failed(exc) from None

    def _list_models(self) -> list[str]:
        return [m.id for m in self._call(lambda: list(self._client(_CHECK_TIMEOUT).models.list()))]

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        client = self._embed_client
        response = self._call(lambda: client.embeddings.create(model=self.name, input=texts, encoding_format="float"))
        return [item.embedding for item in sorted(response.data, key=lambda item: item.index)]

    @classmethod
    def from_config(cls, config: Config) -> OpenAIEmbedder:
        model = config.embeddings.model
        providers = config.providers
        return cls(
            name=model.name,
            base_url=model.base_url or providers.openai.base_url,
            url_key="embeddings.model.base_url" if model.base_url else config.origin("providers.openai.base_url"),
            api_key=providers.openai.api_key or providers.api_keys.get("openai", ""),
            batch_size=model.batch_size,
            vector_dim=model.vector_dim,
            **_call_options(config),
        )


def _call_options(config: Config) -> dict:
    """Timeout/retries (``requests``) and the model-call cache (``cache``) for an embedder built from ``config``."""
    from evaluations.models.cache import open_cache

    return {"requests": config.requests, "cache": open_cache(config)}

