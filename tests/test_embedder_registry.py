"""The embedder registry (``models.embedders.EMBEDDERS``): every provider is in it from the start (nothing registers
itself when a module is imported), the served embedders and their client libraries are imported only when a config
names them, and the served module does not import the registry back."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import get_args

import pytest

from evaluations.core.config import Provider, load_config
from evaluations.core.errors import EvaluationsError
from evaluations.models.embedders import EMBEDDERS, build_embedder
from evaluations.models.remote_embedders import OllamaEmbedder, OpenAIEmbedder

PROBE = """
import json, sys
import evaluations.models.remote_embedders
served_imports_registry = "evaluations.models.embedders" in sys.modules
import evaluations.models.embedders as e
print(json.dumps({"served_imports_registry": served_imports_registry, "providers": sorted(e.EMBEDDERS)}))
"""

LAZY = """
import json, sys
import evaluations.models.embedders
print(json.dumps(sorted(m for m in ("evaluations.models.remote_embedders", "ollama", "openai") if m in sys.modules)))
"""


def _python(code: str):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_registry_is_complete_at_import_and_has_no_cycle():
    probe = _python(PROBE)
    assert probe == {"served_imports_registry": False, "providers": ["embedded", "ollama", "openai"]}
    assert _python(LAZY) == []  # the served embedders (and their clients) load only when used


def test_every_config_provider_builds_its_embedder(tmp_path):
    assert set(EMBEDDERS) == set(get_args(Provider))  # every provider a config accepts has a factory
    home = {"storage.data_dir": str(tmp_path), "cache.enabled": False}
    ollama = build_embedder(load_config(None, {**home, "embeddings.model.provider": "ollama",
                                               "embeddings.model.name": "nomic-embed-text",
                                               "providers.ollama.base_url": "http://gpu-box:11434/"}))
    assert type(ollama) is OllamaEmbedder and ollama.id == "ollama:nomic-embed-text"
    assert ollama.base_url == "http://gpu-box:11434"
    openai = build_embedder(load_config(None, {**home, "embeddings.model.provider": "openai",
                                               "embeddings.model.name": "text-embedding-3-small",
                                               "embeddings.model.base_url": "http://localhost:8080/v1"}))
    assert type(openai) is OpenAIEmbedder and openai.id == "openai:text-embedding-3-small"
    assert openai.url_key == "embeddings.model.base_url"
    assert build_embedder(load_config(None, home)).id == "embedded:all-MiniLM-L6-v2"


def test_unknown_provider_names_the_key_and_the_choices(tmp_path):
    config = load_config(None, {"storage.data_dir": str(tmp_path)})
    config.embeddings.model = config.embeddings.model.model_construct(**{**config.embeddings.model.model_dump(),
                                                                          "provider": "cohere"})
    with pytest.raises(EvaluationsError) as err:
        build_embedder(config)
    assert err.value.message == "unknown embeddings provider 'cohere'"
    assert err.value.where == "embeddings.model.provider"
    assert err.value.fix == "use one of embedded, ollama, openai"
