"""The interface of every embedder (``embedders`` in-process, ``remote_embedders`` served): texts in,
L2-normalised float32 rows out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal

import numpy as np

__all__ = ["Embedder", "Kind", "normalize"]

Kind = Literal["document", "query"]


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors of shape (n, dim)."""

    #: stable identity, part of the index's content-hash key, e.g. "embedded:all-MiniLM-L6-v2"
    id: str

    def check(self) -> None:
        """Raise EvaluationsError (naming URL, config key and the fix) when the backend is unusable."""

    @abstractmethod
    def embed(self, texts: list[str], *, kind: Kind = "document") -> np.ndarray: ...


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms
