"""Config: haiku.rag key names, resolution order, and one clear error for a bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluations.core.config import CONFIG_ENV, Config, load_config, parse_model_ref
from evaluations.core.errors import EvaluationsError

REPO = Path(__file__).resolve().parents[1]


def test_repo_default_file_equals_builtin_defaults(monkeypatch):
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    from_file = load_config(REPO / "haiku.rag.yaml")
    builtin = Config()
    assert from_file.model_dump() == builtin.model_dump()
    assert from_file.source == str(REPO / "haiku.rag.yaml")


def test_haiku_rag_style_file_loads(tmp_path):
    # a haiku.rag user's file, with sections this tool does not use
    path = tmp_path / "haiku.rag.yaml"
    path.write_text(
        "environment: production\n"
        "embeddings:\n  model:\n    provider: ollama\n    name: qwen3-embedding:4b\n    vector_dim: 2560\n"
        "qa:\n  model:\n    provider: ollama\n    name: gpt-oss\n    enable_thinking: false\n"
        "search:\n  limit: 7\n"
        "processing:\n  chunk_size: 512\n"
        "reranking:\n  model:\n    provider: mxbai\n"
        "providers:\n  ollama:\n    base_url: http://gpu-box:11434\n"
        "lancedb:\n  uri: ''\n"
        "storage:\n  data_dir: /tmp/x\n"
    )
    config = load_config(path)
    assert config.embeddings.model.name == "qwen3-embedding:4b"
    assert config.embeddings.model.vector_dim == 2560
    assert config.qa.model.name == "gpt-oss"
    assert config.search.limit == 7
    assert config.processing.chunk_size == 512
    assert config.providers.ollama.base_url == "http://gpu-box:11434"
    assert config.data_dir() == Path("/tmp/x")


def test_resolution_order(tmp_path, monkeypatch):
    explicit = tmp_path / "explicit.yaml"
    explicit.write_text("search:\n  limit: 1\n")
    env = tmp_path / "env.yaml"
    env.write_text("search:\n  limit: 2\n")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "haiku.rag.yaml").write_text("search:\n  limit: 3\n")
    monkeypatch.chdir(cwd)
    monkeypatch.setenv(CONFIG_ENV, str(env))
    assert load_config(explicit).search.limit == 1
    assert load_config(None).search.limit == 2
    monkeypatch.delenv(CONFIG_ENV)
    assert load_config(None).search.limit == 3
    (cwd / "haiku.rag.yaml").unlink()
    assert load_config(None).search.limit == Config().search.limit
    assert load_config(None).source == "built-in defaults"


def test_ollama_base_url_from_environment(monkeypatch):
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://elsewhere:1234")
    assert Config().providers.ollama.base_url == "http://elsewhere:1234"


def test_unknown_and_bad_keys_are_one_clear_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("embeddings:\n  model:\n    provder: ollama\nsearch:\n  limit: 0\n  mode: semantic\n")
    with pytest.raises(EvaluationsError) as info:
        load_config(path)
    text = info.value.render()
    assert str(path) in text
    assert "unknown key 'embeddings.model.provder'" in text and "provider" in text
    assert "search.limit" in text and "search.mode" in text and "'hybrid'" in text
    assert "fix:" in text


def test_unknown_top_level_section_and_yaml_syntax(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("serch:\n  limit: 3\n")
    with pytest.raises(EvaluationsError, match="unknown key 'serch'"):
        load_config(path)
    path.write_text("search:\n  limit: [1,\n")
    with pytest.raises(EvaluationsError) as info:
        load_config(path)
    assert f"{path}:" in info.value.render() and "YAML" in info.value.render()


def test_missing_file_names_the_flag(tmp_path):
    with pytest.raises(EvaluationsError) as info:
        load_config(tmp_path / "nope.yaml")
    assert "nope.yaml" in info.value.render() and "--config" in info.value.render()


def test_chunk_overlap_must_be_smaller_than_size(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("processing:\n  chunk_size: 32\n  chunk_overlap: 32\n")
    with pytest.raises(EvaluationsError, match="chunk_overlap"):
        load_config(path)


def test_model_refs():
    assert parse_model_ref("ollama:qwen3", flag="--qa-model") == {"provider": "ollama", "name": "qwen3"}
    assert parse_model_ref("ollama:qwen3:8b", flag="--qa-model") == {"provider": "ollama", "name": "qwen3:8b"}
    assert parse_model_ref("embedded", flag="--qa-model") == {"provider": "embedded"}
    with pytest.raises(EvaluationsError, match="--judge"):
        parse_model_ref("qwen3", flag="--judge")
    with pytest.raises(EvaluationsError, match="'bogus:x' names an unknown provider 'bogus'"):
        parse_model_ref("bogus:x", flag="--judge")
    with pytest.raises(EvaluationsError, match="'ollama:' is not 'provider:name'"):
        parse_model_ref("ollama:", flag="--judge")


def test_groundedness_names_faithfulness_in_the_config_and_the_environment(tmp_path, monkeypatch):
    """``groundedness`` (TruLens's name) is accepted wherever a reference-free judge is named: the config's
    ``judge.reference_free`` list and ``$EVALUATIONS_REFERENCE_FREE`` give faithfulness, listed once."""
    path = tmp_path / "haiku.rag.yaml"
    path.write_text("judge:\n  reference_free: [groundedness, faithfulness, context_relevance]\n")
    assert load_config(str(path)).judge.reference_free == ["faithfulness", "context_relevance"]
    monkeypatch.setenv("EVALUATIONS_REFERENCE_FREE", "groundedness,answer_relevance")
    assert Config().judge.reference_free == ["faithfulness", "answer_relevance"]
    assert Config().judge.reference_free_judges(has_qrels=True) == ["faithfulness", "answer_relevance"]
    # a value that is no name (an object) is the usual error at its key, not a traceback of the alias reading
    path.write_text("judge:\n  reference_free: [{a: 1}, groundedness]\n")
    with pytest.raises(EvaluationsError) as err:
        load_config(str(path))
    assert "key 'judge.reference_free.0'" in str(err.value) and "got {'a': 1}" in str(err.value)
