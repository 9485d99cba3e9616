"""A declarative spec per dataset: how to load it (hub or local source) and how to map rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evaluations.core.types import Corpus


@dataclass(frozen=True, slots=True)
class LoadOptions:
    source: Path | None = None  # a local export; None: the dataset's hub id
    limit: int | None = None  # queries kept, applied after the dataset's filters
    split: str | None = None


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    """name: the CLI command; load: loader+mapper; answers: whether queries carry gold answers to judge."""

    name: str
    description: str
    load: Callable[[LoadOptions], Corpus]
    hub_id: str | None = None
    answers: bool = True
    notes: list[str] = field(default_factory=list)


def apply_limit(corpus: Corpus, limit: int | None) -> Corpus:
    if limit is not None and limit >= 0:
        corpus.queries = corpus.queries[:limit]
    return corpus


def load_hub(hub_id: str, config_name: str | None, split: str, *, fix: str):
    """``datasets.load_dataset`` with a clear error when the Hub cannot be reached."""
    from evaluations.core.errors import EvaluationsError

    try:
        from datasets import load_dataset
    except ImportError:
        raise EvaluationsError("the Hugging Face 'datasets' package is not installed", where=hub_id,
                               fix="pip install datasets, or " + fix) from None
    from evaluations.core.env import env_flag

    where = f"hf://{hub_id}" + (f"/{config_name}" if config_name else "")
    if not env_flag("HF_HUB_OFFLINE"):
        reason = _hub_unreachable()
        if reason:
            raise EvaluationsError(f"cannot reach the Hugging Face Hub ({reason})", where=where,
                                   fix=fix + " (or set HF_HUB_OFFLINE=1 to use a cached copy)")
    try:
        return load_dataset(hub_id, config_name, split=split) if config_name else load_dataset(hub_id, split=split)
    except Exception as exc:  # network, auth, missing split: all end the same way for the user
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise EvaluationsError(f"could not load from the Hugging Face Hub ({reason})", where=where, fix=fix) from None


def _hub_unreachable(url: str = "https://huggingface.co", timeout: float = 5.0) -> str | None:
    """None when the Hub answers; else a short reason (one quick request instead of minutes of retries)."""
    import httpx

    try:
        httpx.head(url, timeout=timeout)
    except httpx.HTTPError as exc:
        return f"{url}: {type(exc).__name__}: {exc}"[:200]
    return None
