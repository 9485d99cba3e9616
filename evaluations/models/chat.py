"""Chat models for the QA agent and the LLM judge: build, pin sampling, check, describe.

``provider`` picks a builder and a checker from a registry:

- ollama: pydantic-ai ``OpenAIChatModel`` + ``OllamaProvider`` on ``providers.ollama.base_url`` + ``/v1``;
- openai: ``OpenAIChatModel`` + ``OpenAIProvider`` on ``<model>.base_url`` or ``providers.openai.base_url``;
- embedded: a GGUF model of ``evaluations.models.gguf`` in-process (``evaluations.models.llamacpp``, imported lazily).

Served models talk through an ``AsyncOpenAI`` client with the ``requests`` timeout and retries
(``evaluations.models.retry``; the client's own retries are off, so nothing retries twice); a request that asks
for logprobs is streamed (``evaluations.models.streamed``: a server may price them by prompt length). Every model
is wrapped in ``evaluations.models.cache.CachedModel``: repeated requests are answered from the on-disk
cache (``cache.*``, ``--no-cache``) and all calls are counted.

``check_model`` runs before any work so a missing server or model is one clear error, not 100
failed cases.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import os

import httpx

from evaluations.core.errors import EvaluationsError

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

    from evaluations.core.config import Config, LLMModel

_CHECK_TIMEOUT = 5.0
_NO_KEY = "api-key-not-set"  # OpenAI-compatible local servers need no key, the client needs a value


def ollama_v1_url(base_url: str) -> str:
    """``http://host:11434``, ``.../``, ``.../v1`` or ``.../v1/`` -> ``http://host:11434/v1``."""
    url = base_url.strip().rstrip("/")
    while url.endswith("/v1"):
        url = url[: -len("/v1")].rstrip("/")
    return url + "/v1"


def _ollama_root(config: Config) -> str:
    return ollama_v1_url(config.providers.ollama.base_url)[: -len("/v1")]


def _openai_base(model_cfg: LLMModel, config: Config) -> tuple[str, str]:
    """(base URL, the config key it came from)."""
    if model_cfg.base_url:
        return model_cfg.base_url.rstrip("/"), "base_url"
    return config.providers.openai.base_url.rstrip("/"), "providers.openai.base_url"


def _openai_key(config: Config) -> str:
    return config.providers.openai.api_key or config.providers.api_keys.get("openai", "")


# Ollama's /v1 (ollama/ollama#7125) and llama.cpp-style servers ignore `max_completion_tokens`,
# pydantic-ai's default field for the max_tokens setting: send the older `max_tokens` to them.
_MAX_TOKENS_FIELD = {"openai_chat_supports_max_completion_tokens": False}


# -- build ---------------------------------------------------------------------------------------
def _openai_client(base_url: str, api_key: str, config: Config):
    """``AsyncOpenAI`` on ``base_url`` with the ``requests`` timeout and retries (its own retries off)."""
    from openai import AsyncOpenAI

    from evaluations.models.retry import async_client

    return AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=config.requests.timeout,
                       http_client=async_client(config.requests))


def _build_ollama(model_cfg: LLMModel, config: Config) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.ollama import OllamaProvider

    from evaluations.models.streamed import LogprobsStreamed

    client = _openai_client(ollama_v1_url(config.providers.ollama.base_url),
                            os.environ.get("OLLAMA_API_KEY") or _NO_KEY, config)
    provider = OllamaProvider(openai_client=client)
    return LogprobsStreamed(OpenAIChatModel(model_cfg.name, provider=provider, profile=_MAX_TOKENS_FIELD))


def _build_openai(model_cfg: LLMModel, config: Config) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from evaluations.models.streamed import LogprobsStreamed

    base_url, _ = _openai_base(model_cfg, config)
    provider = OpenAIProvider(openai_client=_openai_client(base_url, _openai_key(config) or _NO_KEY, config))
    profile = None if httpx.URL(base_url).host == "api.openai.com" else _MAX_TOKENS_FIELD
    return LogprobsStreamed(OpenAIChatModel(model_cfg.name, provider=provider, profile=profile))


def _build_embedded(model_cfg: LLMModel, config: Config) -> Model:
    from evaluations.models.llamacpp import embedded_model

    return embedded_model(model_cfg, config.data_dir())


_BUILDERS: dict[str, Callable[[LLMModel, Config], Model]] = {
    "ollama": _build_ollama,
    "openai": _build_openai,
    "embedded": _build_embedded,
}


def build_model(model_cfg: LLMModel, config: Config) -> Model:
    """The pydantic-ai model for ``model_cfg`` (a ``qa.model`` or ``judge.model`` section), behind the call cache."""
    from evaluations.models.cache import cached_model

    return cached_model(_BUILDERS[model_cfg.provider](model_cfg, config), config)


def model_settings(model_cfg: LLMModel) -> ModelSettings:
    """Sampling pinned from the config, so runs repeat and the settings can be recorded."""
    from pydantic_ai.settings import ModelSettings

    return ModelSettings(temperature=model_cfg.temperature, seed=model_cfg.seed, max_tokens=model_cfg.max_tokens)


def describe_model(model_cfg: LLMModel, config: Config | None = None) -> dict[str, Any]:
    """Run metadata: provider, name, base_url (resolved when ``config`` is given), sampling."""
    base_url = model_cfg.base_url
    if config is not None and model_cfg.provider == "ollama":
        base_url = ollama_v1_url(config.providers.ollama.base_url)
    elif config is not None and model_cfg.provider == "openai":
        base_url = _openai_base(model_cfg, config)[0]
    return {
        "provider": model_cfg.provider,
        "name": model_cfg.name,
        "base_url": base_url,
        "temperature": model_cfg.temperature,
        "seed": model_cfg.seed,
        "max_tokens": model_cfg.max_tokens,
    }


# -- check ---------------------------------------------------------------------------------------
def _embedded_alternative(key: str) -> str:
    flag = "--judge" if key.startswith("judge") else "--qa-model"
    return f"or run the built-in model: {flag} embedded ({key}.provider: embedded)"


def _get_json(
    url: str, *, where: str, key: str, model_cfg_name: str, headers: dict[str, str] | None = None
) -> Any:
    """GET ``url``'s JSON; an EvaluationsError naming ``where``, the config key or ``environment variable NAME``
    the URL came from (``Config.origin``)."""
    setting = where.removeprefix("environment variable ")
    try:
        response = httpx.get(url, timeout=_CHECK_TIMEOUT, headers=headers)
    except httpx.HTTPError as exc:
        raise EvaluationsError(
            f"cannot reach the model server for {key} ({model_cfg_name}) at {url} ({type(exc).__name__}: {exc})",
            where=where,
            fix=f"start the server, or correct {setting}; {_embedded_alternative(key)}",
        ) from None
    if response.status_code != 200:
        raise EvaluationsError(
            f"the model server at {url} answered HTTP {response.status_code}: {response.text[:200]}",
            where=where,
            fix=f"check {setting} points at the server's API (and the API key); {_embedded_alternative(key)}",
        )
    try:
        return response.json()
    except ValueError:
        raise EvaluationsError(
            f"the model server at {url} did not answer JSON: {response.text[:200]!r}",
            where=where,
            fix=f"check {setting} points at the server's API; {_embedded_alternative(key)}",
        ) from None


def _check_ollama(model_cfg: LLMModel, config: Config, key: str) -> None:
    url = _ollama_root(config) + "/api/tags"
    tags = _get_json(url, where=config.origin("providers.ollama.base_url"), key=key, model_cfg_name=model_cfg.name)
    available = [m.get("model") or m.get("name") for m in tags.get("models", [])]
    name = model_cfg.name
    if name not in available and not (":" not in name and f"{name}:latest" in available):
        raise EvaluationsError(
            f"model {name!r} is not pulled on the Ollama server at {url} "
            f"(available: {', '.join(sorted(filter(None, available))) or 'none'})",
            where=f"{key}.name",
            fix=f"run `ollama pull {name}`, or correct {key}.name; {_embedded_alternative(key)}",
        )


def _check_openai(model_cfg: LLMModel, config: Config, key: str) -> None:
    base_url, url_key = _openai_base(model_cfg, config)
    where = f"{key}.base_url" if url_key == "base_url" else config.origin(url_key)
    api_key = _openai_key(config)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    url = base_url + "/models"
    listing = _get_json(url, where=where, key=key, model_cfg_name=model_cfg.name, headers=headers)
    available = [m.get("id") for m in listing.get("data", [])]
    if model_cfg.name not in available:
        raise EvaluationsError(
            f"model {model_cfg.name!r} is not served at {url} "
            f"(available: {', '.join(sorted(filter(None, available))) or 'none'})",
            where=f"{key}.name",
            fix=f"use a model the server lists, or correct {key}.name; {_embedded_alternative(key)}",
        )


def _check_embedded(model_cfg: LLMModel, config: Config, key: str) -> None:
    """The model's GGUF file is there (assembled and verified) and llama-cpp-python imports (the model's checks)."""
    from evaluations.models.gguf import resolve
    from evaluations.models.llamacpp import gguf_path, require_llama_cpp

    gguf_path(resolve(model_cfg.name, where=f"{key}.name").name, config.data_dir())
    require_llama_cpp()


_CHECKS: dict[str, Callable[[LLMModel, Config, str], None]] = {
    "ollama": _check_ollama,
    "openai": _check_openai,
    "embedded": _check_embedded,
}


def check_model(model_cfg: LLMModel, config: Config, *, key: str) -> None:
    """Before any work: the server answers and serves the model. ``key`` is "qa.model" or "judge.model".

    Raises one EvaluationsError naming the URL, the config key and the fix.
    """
    _CHECKS[model_cfg.provider](model_cfg, config, key)
