"""Semantic answer similarity: max cosine between all-MiniLM-L6-v2 embeddings of gold and answer.

The model is the in-process, offline all-MiniLM-L6-v2 of ``models.embedders.EmbeddedMiniLM``
(loaded once, cached). Embeddings are cached on disk in the cache store (``models.cache.open_store``, kind
``judge_embedding``, float32 bytes) keyed by the SHA-256 of the model and text, so re-running a calibration or an
agreement study over ~23k pairs is fast.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from evaluations.models.meter import count_calls

__all__ = [
    "SEMANTIC_THRESHOLD",
    "semantic_similarity",
    "semantic_similarity_batch",
    "embed_texts",
    "cache_file",
    "default_cache_path",
]

#: verdict rule of the semantic judge: correct iff similarity >= SEMANTIC_THRESHOLD. 0.25 maximised accuracy
#: on the labelled EVOUNA answers (NQ + TQ, grid step 0.05): a sentence-long answer has a low cosine to a
#: few-word gold even when it is right, so the useful threshold is far below "paraphrase" levels.
SEMANTIC_THRESHOLD = 0.25
_DIM = 384
_MODEL_ID = "all-MiniLM-L6-v2"
_KIND = "judge_embedding"  # the namespace of these vectors in the cache store
_lock = threading.Lock()
_embedder = None

Progress = Callable[[int], None]  # called with the number of texts just embedded


def default_cache_path(cache_dir: str | Path | None = None) -> Path:
    """The embedding cache file in ``cache_dir`` (a run's: ``Config.judge_cache_dir``); None: in
    ``env.default_cache_dir()`` (``$EVALUATIONS_CACHE_DIR/cache`` or ~/.local/share/evaluations/cache)."""
    from evaluations.core.env import default_cache_dir

    return (Path(cache_dir) if cache_dir else default_cache_dir()) / "judge_embeddings.sqlite"


def cache_file(enabled: bool, cache_dir: str | Path | None = None) -> Path | None:
    """The embedding cache file an evaluator uses (``default_cache_path(cache_dir)``), None when ``enabled`` is
    False (``--no-cache``)."""
    return default_cache_path(cache_dir) if enabled else None


def _get_embedder():
    global _embedder
    with _lock:
        if _embedder is None:
            from evaluations.models.embedders import EmbeddedMiniLM

            _embedder = EmbeddedMiniLM(_MODEL_ID, batch_size=128)
        return _embedder


def _key(text: str) -> str:
    return hashlib.sha256(f"{_MODEL_ID}\0{text}".encode()).hexdigest()


def embed_texts(
    texts: Sequence[str], *, cache_path: Path | None | bool = True, progress: Progress | None = None, batch: int = 256
) -> np.ndarray:
    """L2-normalised embeddings, shape (len(texts), 384). ``cache_path``: True = default file, None/False = no cache."""
    from evaluations.models.cache import open_store

    if cache_path is True:
        cache_path = default_cache_path()
    store = open_store(cache_path) if cache_path else None
    unique = list(dict.fromkeys(texts))
    keys = [_key(t) for t in unique]
    stored = store.get_many(keys) if store is not None else {}
    vectors = {k: np.frombuffer(v, dtype=np.float32) for k, v in stored.items() if isinstance(v, bytes)}
    # longest first, so each batch pads to similar lengths (and time estimates are pessimistic early)
    missing = sorted(((k, t) for k, t in zip(keys, unique) if k not in vectors), key=lambda kt: -len(kt[1]))
    if progress is not None and len(unique) > len(missing):
        progress(len(unique) - len(missing))
    for start in range(0, len(missing), batch):
        chunk = missing[start : start + batch]
        embedded = _get_embedder().embed([t for _, t in chunk])
        count_calls(len(chunk))  # one model call per text embedded (``models.meter``)
        fresh = [(k, np.asarray(v, dtype=np.float32)) for k, v in zip((k for k, _ in chunk), embedded)]
        if store is not None:
            store.put_many(_KIND, [(k, v.tobytes()) for k, v in fresh])
        vectors.update(fresh)
        if progress is not None:
            progress(len(chunk))
    by_text = {t: vectors[k] for k, t in zip(keys, unique)}
    if not texts:
        return np.zeros((0, _DIM), dtype=np.float32)
    return np.stack([by_text[t] for t in texts]).astype(np.float32)


def semantic_similarity_batch(
    refs_list: Sequence[Sequence[str]],
    answers: Sequence[str],
    *,
    cache_path: Path | None | bool = True,
    progress: Progress | None = None,
) -> np.ndarray:
    """For each pair i: max over gold alternatives r of cos(e(r), e(answers[i])); 0.0 for no gold / empty answer."""
    if len(refs_list) != len(answers):
        raise ValueError("refs_list and answers must have the same length")
    texts = [t for refs in refs_list for t in refs if t.strip()] + [a for a in answers if a.strip()]
    vectors = embed_texts(texts, cache_path=cache_path, progress=progress)
    index = {t: i for i, t in enumerate(texts)}
    scores = np.zeros(len(answers), dtype=np.float64)
    for i, (refs, answer) in enumerate(zip(refs_list, answers)):
        golds = [index[r] for r in refs if r.strip()]
        if golds and answer.strip():
            scores[i] = float(np.max(vectors[golds] @ vectors[index[answer]]))
    return np.clip(scores, -1.0, 1.0)


def semantic_similarity(refs: str | Sequence[str], generated: str, *, cache_path: Path | None | bool = False) -> float:
    """Semantic similarity = max over gold alternatives r of cos(e(r), e(g)), e = all-MiniLM-L6-v2 (normalised)."""
    alternatives = [refs] if isinstance(refs, str) else list(refs)
    return float(semantic_similarity_batch([alternatives], [generated], cache_path=cache_path)[0])
