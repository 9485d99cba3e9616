"""Configuration: the ``haiku.rag.yaml`` model and how a file is found and read.

Key names follow haiku.rag where they overlap (``embeddings.model.{provider,name,vector_dim}``,
``qa.model``, ``search.limit``, ``processing.chunk_size``, ``providers.ollama.base_url``,
``lancedb.uri``, ``storage.data_dir``), so a haiku.rag user can point ``--config`` at their file.

Resolution (``resolve_config_path``): ``--config PATH``, then ``$HAIKU_RAG_CONFIG_PATH``, then
``./haiku.rag.yaml``, then the built-in defaults. Nothing is read at import time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from evaluations.core import yamltext
from evaluations.core.env import data_home, default_cache_dir, env_path, env_str, env_url
from evaluations.core.errors import EvaluationsError, field_errors

DEFAULT_CONFIG_NAME = "haiku.rag.yaml"
CONFIG_ENV = "HAIKU_RAG_CONFIG_PATH"

Provider = Literal["embedded", "ollama", "openai"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmbeddingModel(_Strict):
    provider: Provider = "embedded"
    name: str = "all-MiniLM-L6-v2"
    vector_dim: int | None = Field(default=384, gt=0)
    base_url: str = ""  # openai-compatible servers; ollama uses providers.ollama.base_url
    batch_size: int = Field(default=64, gt=0)


class Embeddings(_Strict):
    model: EmbeddingModel = Field(default_factory=EmbeddingModel)


class LLMModel(_Strict):
    """A chat model. ``provider`` embedded = SmolLM2-135M-Instruct in-process."""

    provider: Provider = "embedded"
    name: str = "SmolLM2-135M-Instruct"
    base_url: str = ""  # openai-compatible servers; ollama uses providers.ollama.base_url
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_tokens: int = Field(default=256, gt=0)
    enable_thinking: bool | None = None  # haiku.rag key, passed through where supported


class QA(_Strict):
    model: LLMModel = Field(default_factory=LLMModel)
    # characters of retrieved context given to the model; None: 2,000 for the embedded 135M model (its
    # prompt reading is the slow part and long contexts confuse it), unlimited for served models
    max_context_chars: int | None = Field(default=None, gt=0)

    def context_chars(self) -> int | None:
        if self.max_context_chars is not None:
            return self.max_context_chars
        return 2000 if self.model.provider == "embedded" else None


#: verdicts a run can compute that may be the primary judge (``judge.primary``; ``pipeline.plan`` checks the run computes it)
PrimaryJudge = Literal["offline_correct", "llm_judge", "combined_correct", "keyword_correct", "exact_match",
                       "contains_gold"]


#: the reference-free judges a run may compute (no gold needed): ``judge.reference_free`` lists those it computes
ReferenceFreeJudge = Literal["faithfulness", "answer_relevance", "context_relevance"]
REFERENCE_FREE_JUDGES: tuple[str, ...] = get_args(ReferenceFreeJudge)
REFERENCE_FREE_ENV = "EVALUATIONS_REFERENCE_FREE"
#: other names of reference-free judges, accepted wherever one is named (TruLens calls faithfulness groundedness)
REFERENCE_FREE_ALIASES = {"groundedness": "faithfulness"}


def _canonical(names: list[Any]) -> list[Any]:
    """``names`` with each alias (``REFERENCE_FREE_ALIASES``) read as its judge, every judge listed once; a value
    that is not a name stays where it is, for the validation error that names it."""
    out: list[Any] = []
    for name in names:
        name = REFERENCE_FREE_ALIASES.get(name, name) if isinstance(name, str) else name
        if not (isinstance(name, str) and name in out):
            out.append(name)
    return out


def reference_free_default() -> list[str] | Literal["auto"]:
    """``auto`` (see ``Judge.reference_free_judges``), unless ``$EVALUATIONS_REFERENCE_FREE`` lists some (comma
    separated; ``none``: no judge; ``auto``), e.g. to keep a test suite's runs off the judge model."""
    value = env_str(REFERENCE_FREE_ENV)
    if not value or value.strip().lower() == "auto":
        return "auto"
    names = [n.strip() for n in value.split(",") if n.strip() and n.strip().lower() != "none"]
    names = _canonical(names)
    unknown = [n for n in names if n not in REFERENCE_FREE_JUDGES]
    if unknown:
        raise EvaluationsError(f"{value!r}: unknown judge(s) {', '.join(unknown)}",
                               where=f"environment variable {REFERENCE_FREE_ENV}",
                               fix=f"list some of {','.join(REFERENCE_FREE_JUDGES)}, or 'none' or 'auto'")
    return names


class Judge(_Strict):
    model: LLMModel | None = None  # the LLM judge runs only when a model is set (or --judge)
    keyword_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    retries: int = Field(default=2, ge=0)
    # the verdict behind "answer accuracy"; None: the judge that validates best on weak and strong answers
    # (judges/validation.json), else llm_judge when an LLM judge runs, else offline_correct
    primary: PrimaryJudge | None = None
    # the reference-free judges (faithfulness and answer relevance when the run answers, context relevance of the
    # retrieved chunks when it scores retrieval), run on the embedded model; [] turns them off (--no-reference-free),
    # "auto": all but context relevance on a dataset with relevance labels (reference_free_judges)
    reference_free: list[ReferenceFreeJudge] | Literal["auto"] = Field(default_factory=reference_free_default)

    @field_validator("reference_free", mode="before")
    @classmethod
    def _aliases(cls, value: object) -> object:
        """``groundedness`` is faithfulness (``REFERENCE_FREE_ALIASES``), listed once."""
        return _canonical(value) if isinstance(value, list) else value

    def reference_free_judges(self, *, has_qrels: bool) -> list[str]:
        """The reference-free judges a run computes. ``auto``: faithfulness and answer relevance always, context
        relevance only when the dataset has no relevance labels (with qrels it costs one judge pass per retrieved
        chunk and case, and the qrels metrics already measure retrieval: ask with --reference-free)."""
        if self.reference_free == "auto":
            return [n for n in REFERENCE_FREE_JUDGES if n != "context_relevance" or not has_qrels]
        return list(self.reference_free)


class Processing(_Strict):
    chunk_size: int = Field(default=256, gt=0, description="tokens (words and punctuation) per chunk")
    chunk_overlap: int = Field(default=32, ge=0)
    context_chunk_radius: int = 0  # haiku.rag key, accepted
    markdown_preprocessor: str = ""  # haiku.rag key, accepted

    @model_validator(mode="after")
    def _overlap_below_size(self) -> Processing:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})")
        return self


class Search(_Strict):
    limit: int = Field(default=5, gt=0, description="chunks given to the QA agent as context")
    mode: Literal["vector", "fts", "hybrid"] = "hybrid"
    candidates: int = Field(default=100, gt=0, description="documents retrieved per query for metrics")
    rrf_k: int = Field(default=60, gt=0)
    context_radius: int = 0  # haiku.rag key, accepted


class Storage(_Strict):
    data_dir: str = ""  # empty: $XDG_DATA_HOME/evaluations (~/.local/share/evaluations)
    monitor_directories: list[str] = Field(default_factory=list)  # haiku.rag key, accepted
    disable_autocreate: bool = False
    vacuum_retention_seconds: int = 60


class ANN(_Strict):
    """The approximate-nearest-neighbour vector index built on ``vectors`` once it has ``min_rows`` rows.

    Defaults measured in benchmarks/ann.py (1M 384-d vectors: recall@10 >= 0.99 against exact search).
    Every run that searches the index checks its recall@``recall_k`` against exact (flat) search on up to
    ``recall_queries`` of its queries, records it in summary.json ``index.ann`` and warns below ``min_recall``.
    """

    min_rows: int = Field(default=100_000, ge=0, description="vectors from which the index is built; 0: never")
    type: Literal["ivf_pq", "ivf_hnsw_sq"] = "ivf_pq"
    num_partitions: int | None = Field(default=None, gt=0, description="IVF partitions; None: rows / 8192")
    num_sub_vectors: int | None = Field(default=None, gt=0, description="IVF-PQ sub-vectors; None: dim / 8")
    num_bits: Literal[4, 8] = 8  # IVF-PQ bits per sub-vector code
    m: int = Field(default=20, gt=0)  # IVF-HNSW-SQ: graph neighbours per node
    ef_construction: int = Field(default=300, gt=0)  # IVF-HNSW-SQ: candidates while building the graph
    nprobes: int = Field(default=32, gt=0, description="partitions searched per query")
    refine_factor: int | None = Field(default=10, gt=0, description="re-rank refine_factor * limit hits exactly")
    ef: int | None = Field(default=None, gt=0, description="IVF-HNSW-SQ search candidates; None: LanceDB's")
    recall_k: int = Field(default=10, gt=0)
    recall_queries: int = Field(default=100, gt=0, description="queries sampled for the recall check")
    min_recall: float = Field(default=0.99, ge=0.0, le=1.0)


class LanceDB(_Strict):
    uri: str = ""  # empty: a per-dataset, per-embedder folder under storage.data_dir
    api_key: str = ""
    region: str = ""
    # object store options passed to LanceDB as given (aws_access_key_id, aws_secret_access_key, region,
    # endpoint, allow_http, ...); unset ones come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
    # AWS_ENDPOINT_URL, AWS_ALLOW_HTTP (evaluations/index/objectstore.py)
    storage_options: dict[str, str] = Field(default_factory=dict)
    ann: ANN = Field(default_factory=ANN)


#: config keys whose default is read from an environment variable (when the config does not set them)
ENV_DEFAULTS = {"providers.ollama.base_url": "OLLAMA_BASE_URL", "providers.openai.base_url": "OPENAI_BASE_URL",
                "providers.openai.api_key": "OPENAI_API_KEY", "cache.path": "EVALUATIONS_CACHE_PATH"}


class OllamaProvider(_Strict):
    base_url: str = Field(default_factory=lambda: env_url("OLLAMA_BASE_URL", "http://localhost:11434"))


class OpenAIProvider(_Strict):
    base_url: str = Field(default_factory=lambda: env_url("OPENAI_BASE_URL", "https://api.openai.com/v1"))
    api_key: str = Field(default_factory=lambda: env_str("OPENAI_API_KEY"))


class Providers(_Strict):
    ollama: OllamaProvider = Field(default_factory=OllamaProvider)
    openai: OpenAIProvider = Field(default_factory=OpenAIProvider)
    vllm: dict[str, Any] = Field(default_factory=dict)  # haiku.rag key, accepted
    api_keys: dict[str, str] = Field(default_factory=dict)  # haiku.rag key; api_keys.openai is used


class Price(_Strict):
    """USD per million tokens."""

    input: float = Field(default=0.0, ge=0.0)
    output: float = Field(default=0.0, ge=0.0)


def positive_ks(ks: list[int]) -> list[int]:
    """Cut-offs checked as ``--k`` is: at least one, and every one a positive integer."""
    if not ks or min(ks) < 1:
        raise PydanticCustomError("positive_ks", "not a list of positive integers (e.g. [1, 5, 10])")
    return ks


#: cut-offs (``evaluation.k``, a matrix grid's ``k``): a non-empty list of positive integers
PositiveKs = Annotated[list[int], AfterValidator(positive_ks)]


class Evaluation(_Strict):
    k: PositiveKs = Field(default_factory=lambda: [1, 3, 5, 10, 100])
    concurrency: int = Field(default=4, gt=0)


class Cache(_Strict):
    """On-disk cache of model calls (QA, LLM judge, server embeddings); ``--no-cache`` turns it off."""

    enabled: bool = True
    # empty: $EVALUATIONS_CACHE_PATH, else <data_dir>/cache/model_calls.sqlite
    path: str = Field(default_factory=lambda: str(env_path("EVALUATIONS_CACHE_PATH") or ""))


class Requests(_Strict):
    """Per-call timeout and retries (exponential backoff with jitter) of every model/embedding HTTP call.

    Retried: timeouts, dropped connections, HTTP 429 (waiting its Retry-After), 5xx, a 200 whose JSON is
    broken. Never retried: other 4xx. Wait before retry n (1-based): min(max_backoff, backoff * 2^(n-1)) + U(0, backoff).
    """

    timeout: float = Field(default=120.0, gt=0, description="seconds a call may wait for the server")
    retries: int = Field(default=4, ge=0, description="retries after the first attempt")
    backoff: float = Field(default=1.0, ge=0, description="seconds before the first retry")
    max_backoff: float = Field(default=30.0, ge=0)
    max_retry_after: float = Field(default=120.0, ge=0, description="cap on a server's Retry-After, seconds")


REPORTS_ENV = "EVALUATIONS_REPORTS"


def reports_default() -> bool:
    """True (write them), unless ``$EVALUATIONS_REPORTS`` is ``none`` (e.g. a test suite whose runs nobody looks
    at); ``all`` is the default said out loud."""
    value = env_str(REPORTS_ENV).lower()
    if value in ("", "all"):
        return True
    if value == "none":
        return False
    raise EvaluationsError(f"{value!r} is not a choice", where=f"environment variable {REPORTS_ENV}",
                           fix="set it to 'all' (write report.html/report.md after each run) or 'none', or unset it")


class Reports(_Strict):
    # report.html and report.md (+ PNG charts) after each run; off, `evaluations report RUN` writes them later
    write: bool = Field(default_factory=reports_default)


class History(_Strict):
    path: str = ""  # empty: <data_dir>/history.sqlite (every run appends a row; `evaluations history`)

    @field_validator("path")
    @classmethod
    def _a_file(cls, value: str) -> str:
        if value and Path(value).expanduser().is_dir():  # found at load, not as a warning after the run
            raise ValueError("is a folder, expected the history store's file (e.g. runs/history.sqlite)")
        return value


class Config(_Strict):
    environment: str = "production"  # haiku.rag key, accepted
    storage: Storage = Field(default_factory=Storage)
    lancedb: LanceDB = Field(default_factory=LanceDB)
    embeddings: Embeddings = Field(default_factory=Embeddings)
    processing: Processing = Field(default_factory=Processing)
    search: Search = Field(default_factory=Search)
    qa: QA = Field(default_factory=QA)
    judge: Judge = Field(default_factory=Judge)
    providers: Providers = Field(default_factory=Providers)
    prices: dict[str, Price] = Field(default_factory=dict, description="'provider:name' -> USD per 1M tokens")
    evaluation: Evaluation = Field(default_factory=Evaluation)
    history: History = Field(default_factory=History)
    reports: Reports = Field(default_factory=Reports)
    cache: Cache = Field(default_factory=Cache)
    requests: Requests = Field(default_factory=Requests)
    # where cases and indexing embeddings run: in this process, or on a Ray cluster (``ray`` starts or joins a
    # local one; ``ray:ADDRESS``, e.g. ``ray:auto`` or ``ray:ray://head:10001``); ``--executor`` overrides it
    executor: str = Field(default="local", pattern=r"^(local|ray|ray:\S+)$",
                          description="local, ray or ray:ADDRESS")
    # haiku.rag sections this tool does not use: accepted so a haiku.rag file loads as is.
    reranking: dict[str, Any] = Field(default_factory=dict)
    research: dict[str, Any] = Field(default_factory=dict)
    a2a: dict[str, Any] = Field(default_factory=dict)
    agents: dict[str, Any] = Field(default_factory=dict)
    conversion: dict[str, Any] = Field(default_factory=dict)

    source: str = Field(default="built-in defaults", exclude=True)

    def data_dir(self) -> Path:
        if self.storage.data_dir:
            return Path(self.storage.data_dir).expanduser()
        return data_home()

    def cache_path(self) -> Path:
        """``cache.path``, or ``<data_dir>/cache/model_calls.sqlite`` when empty."""
        if self.cache.path:
            return Path(self.cache.path).expanduser()
        return self.data_dir() / "cache" / "model_calls.sqlite"

    def judge_cache_dir(self) -> Path:
        """Where the judges keep their verdicts and embeddings: ``<storage.data_dir>/cache`` when the config sets
        the data folder, else the library default (``env.default_cache_dir``)."""
        if self.storage.data_dir:
            return self.data_dir() / "cache"
        return default_cache_dir()

    def sets(self, key: str) -> bool:
        """The config file (or the code that made this config) set dotted ``key`` itself: not its default."""
        node: Any = self
        for part in key.split("."):
            if not isinstance(node, BaseModel) or part not in node.model_fields_set:
                return False
            node = getattr(node, part)
        return True

    def origin(self, key: str) -> str:
        """Where dotted ``key``'s value came from, as an error names it: ``environment variable NAME`` when the
        config left the key to its default and the default was read from ``$NAME`` (``ENV_DEFAULTS``), else
        the key itself."""
        variable = ENV_DEFAULTS.get(key)
        if variable is None or self.sets(key) or not env_str(variable):
            return key
        return f"environment variable {variable}"

    def cache_origin(self) -> str | None:
        """Where ``cache_path()`` came from, as ``origin`` names it: ``cache.path``, ``$EVALUATIONS_CACHE_PATH``,
        ``storage.data_dir``, ``$XDG_DATA_HOME``; None: the built-in default folder."""
        if self.cache.path:
            return self.origin("cache.path")
        if self.storage.data_dir:
            return "storage.data_dir"
        return "environment variable XDG_DATA_HOME" if env_str("XDG_DATA_HOME") else None

    def public_dict(self) -> dict[str, Any]:
        """The config as recorded in a run's summary, with secrets masked."""
        data = self.model_dump(mode="json")
        if data["providers"]["openai"].get("api_key"):
            data["providers"]["openai"]["api_key"] = "***"
        data["providers"]["api_keys"] = {k: "***" for k in data["providers"]["api_keys"]}
        if data["lancedb"].get("api_key"):
            data["lancedb"]["api_key"] = "***"
        data["lancedb"]["storage_options"] = {
            k: "***" if any(s in k.lower() for s in ("secret", "key", "token", "password")) else v
            for k, v in data["lancedb"]["storage_options"].items()}
        return data


def resolve_config_path(explicit: str | os.PathLike[str] | None) -> Path | None:
    """``--config`` > ``$HAIKU_RAG_CONFIG_PATH`` > ``./haiku.rag.yaml`` > None (defaults)."""
    if explicit:
        return Path(explicit)
    env = env_str(CONFIG_ENV)
    if env:
        return Path(env).expanduser()
    local = Path.cwd() / DEFAULT_CONFIG_NAME
    return local if local.is_file() else None


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed at the parent of ``loc`` (for 'unknown key' messages)."""
    current: Any = model
    for part in loc[:-1]:
        field = current.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return []
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        candidates = [annotation, *args]
        current = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if current is None:
            return []
    return sorted(k for k in current.model_fields if k != "source")


def _format_errors(exc: ValidationError, where: str) -> EvaluationsError:
    lines = []
    for err in exc.errors():
        if err["type"] == "extra_forbidden":
            key = ".".join(str(p) for p in err["loc"])
            allowed = _allowed_keys(Config, tuple(err["loc"]))
            lines.append(f"unknown key '{key}'" + (f" (allowed here: {', '.join(allowed)})" if allowed else ""))
    lines += [f"key '{key}': {msg} (got {value!r})" for key, msg, value in
              field_errors([e for e in exc.errors() if e["type"] != "extra_forbidden"])]
    return EvaluationsError(
        "invalid configuration:\n  - " + "\n  - ".join(lines),
        where=where,
        fix="correct or remove the keys above; see haiku.rag.yaml in the repository for every key and its default",
    )


def load_config(path: str | os.PathLike[str] | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Read the config (see ``resolve_config_path``), apply dotted ``overrides``, validate.

    Raises EvaluationsError naming the file and key for a missing file, bad YAML, an unknown
    key or a bad value.
    """
    resolved = resolve_config_path(path)
    data: dict[str, Any] = {}
    where = "built-in defaults"
    if resolved is not None:
        where = str(resolved)
        if not resolved.is_file():
            origin = "--config" if path else f"environment variable {CONFIG_ENV}"
            what = "is a folder, expected a config file" if resolved.is_dir() else "config file not found"
            raise EvaluationsError(f"{what} (given by {origin})", where=where,
                                   fix=f"check the path given by {origin}, or omit it to use defaults")
        try:
            loaded = yamltext.load(resolved.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise EvaluationsError(f"not valid UTF-8 (byte {exc.start + 1})", where=where,
                                   fix="save the config file as UTF-8") from None
        except OSError as exc:
            raise EvaluationsError(f"cannot read the config file ({exc.strerror})", where=where,
                                   fix="check the file is readable") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            if mark is not None:
                where = f"{resolved}:{mark.line + 1}"
            raise EvaluationsError(f"not valid YAML: {getattr(exc, 'problem', exc)}", where=where,
                                   fix="fix the YAML syntax at that line") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise EvaluationsError("the top level must be a mapping of sections", where=where,
                                   fix="start the file with section keys such as 'embeddings:'")
        data = loaded
    for dotted, value in (overrides or {}).items():
        node = data
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = value
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise _format_errors(exc, where) from None
    config.source = where
    config.data_dir()  # a bad $XDG_DATA_HOME is reported here, before any work
    return config


def parse_model_ref(ref: str, *, flag: str) -> dict[str, str]:
    """``provider:name`` (as in ``--qa-model ollama:qwen3``) -> {"provider", "name"}."""
    provider, sep, name = ref.partition(":")
    allowed = ("embedded", "ollama", "openai")
    if provider == "embedded" and not sep:
        return {"provider": "embedded"}
    if not sep or provider not in allowed or not name:
        why = (f"names an unknown provider {provider!r}" if sep and name and provider not in allowed
               else "is not 'provider:name'")
        raise EvaluationsError(
            f"model reference {ref!r} {why}",
            where=flag,
            fix=f"use one of {', '.join(p + ':NAME' for p in allowed)} (e.g. ollama:qwen3), or 'embedded'",
        )
    return {"provider": provider, "name": name}
