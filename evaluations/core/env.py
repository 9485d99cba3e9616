"""Environment variables, each read where it is used and checked there: a bad value is one
EvaluationsError naming the variable, its value, what is wrong and the fix.

Variables read by this project (``grep -rn environ evaluations``):

- ``HAIKU_RAG_CONFIG_PATH``: the config file (``config.resolve_config_path``), must exist;
- ``OLLAMA_BASE_URL``, ``OPENAI_BASE_URL``: http(s) URLs (defaults of ``providers.*.base_url``);
- ``OPENAI_API_KEY``: any text;
- ``EVALUATIONS_LLM_THREADS``: a whole number from 0 to 4 × the cores (0 = one per core, at most 4);
- ``EVALUATIONS_JUDGES_DIR``: a folder of fitted judge parameters (``calibrate-judge``; a file it lacks is the
  shipped one);
- ``EVALUATIONS_JUDGE_GGUF``: an existing, readable GGUF file (starting with the bytes ``GGUF``; the embedded judge
  model, for experiments), checked before a run whose judges load it (``models.gguf.check_gguf_file``);
- ``EVALUATIONS_CACHE_DIR``, ``XDG_DATA_HOME``: absolute folder paths (not files), created when first written
  (a folder that cannot be created or written is one error naming the variable, ``path_origin``);
- ``EVALUATIONS_CACHE_PATH``: the model-call cache file (the default of ``cache.path``), an absolute path
  (``env_path``);
- ``EVALUATIONS_REFERENCE_FREE``: the default of ``judge.reference_free`` (comma-separated judges, or ``none``);
- ``EVALUATIONS_REPORTS``: the default of ``reports.write`` (``all`` or ``none``);
- ``HF_HUB_OFFLINE``: a boolean (1/0, true/false, yes/no, on/off).

Empty values count as unset.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from evaluations.core.errors import EvaluationsError

__all__ = ["PATH_VARIABLES", "data_home", "default_cache_dir", "env_dir", "env_file", "env_flag", "env_int", "env_path",
           "env_str", "env_url", "path_origin"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bad(name: str, value: str, what: str, fix: str) -> EvaluationsError:
    return EvaluationsError(f"{what} (got {value!r})", where=f"environment variable {name}",
                            fix=f"{fix}, or unset {name}")


def env_str(name: str, default: str = "") -> str:
    """``$name`` stripped of surrounding whitespace, or ``default`` when unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or default


def env_int(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    """``$name`` as a whole number from ``minimum`` to ``maximum`` (None: no upper bound); ``default`` when
    unset."""
    value = env_str(name)
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < minimum or (maximum is not None and number > maximum):
        what = f"must be a whole number ≥ {minimum}" if maximum is None else \
            f"must be a whole number from {minimum} to {maximum}"
        raise _bad(name, value, what, f"set e.g. {name}={max(minimum, 1)}")
    return number


def env_url(name: str, default: str) -> str:
    """``$name`` as an http(s) URL with a host; ``default`` when unset."""
    value = env_str(name)
    if not value:
        return default
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _bad(name, value, "must be an http:// or https:// URL with a host", f"set e.g. {name}={default}")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        raise _bad(name, value, "has an invalid port", f"set e.g. {name}={default}") from None
    return value


def env_dir(name: str, *, must_exist: bool = False) -> Path | None:
    """``$name`` as an absolute folder path (None when unset); never a file; existing if ``must_exist``."""
    path, value = env_path(name), env_str(name)
    if path is None:
        return None
    if path.exists() and not path.is_dir():
        raise _bad(name, value, "is a file, not a folder", f"point {name} at a folder")
    if must_exist and not path.is_dir():
        raise _bad(name, value, "the folder does not exist", f"create it or point {name} at an existing folder")
    return path


def env_path(name: str) -> Path | None:
    """``$name`` as an absolute path (None when unset), as ``env_dir`` requires of a folder: a relative one would
    land wherever the command happens to be started."""
    value = env_str(name)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise _bad(name, value, "must be an absolute path", f"set {name}={Path.cwd() / value}")
    return path


def env_file(name: str) -> Path | None:
    """``$name`` as the path of an existing file (None when unset)."""
    value = env_str(name)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "the file does not exist"
        raise _bad(name, value, what, f"point {name} at an existing file")
    return path


def env_flag(name: str, default: bool = False) -> bool:
    """``$name`` as a boolean: 1/true/yes/on or 0/false/no/off (any case); ``default`` when unset."""
    value = env_str(name)
    if not value:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise _bad(name, value, "must be a boolean (1/0, true/false, yes/no, on/off)", f"set {name}=1 or {name}=0")


#: variables that name a path this tool reads or writes, as ``path_origin`` looks them up
PATH_VARIABLES = ("EVALUATIONS_CACHE_PATH", "EVALUATIONS_JUDGE_GGUF", "EVALUATIONS_CACHE_DIR",
                  "EVALUATIONS_JUDGES_DIR", "XDG_DATA_HOME")


def path_origin(path: str | os.PathLike[str]) -> str | None:
    """The variable of ``PATH_VARIABLES`` that ``path`` came from: the one whose value is ``path`` or the
    folder nearest to it that holds it; None when no set variable does (a config key, a flag or a default)."""
    target = Path(path).expanduser().absolute()
    best: tuple[int, str] | None = None
    for name in PATH_VARIABLES:
        value = env_str(name)
        if not value:
            continue
        base = Path(value).expanduser().absolute()
        if (target == base or base in target.parents) and (best is None or len(base.parts) > best[0]):
            best = (len(base.parts), name)
    return best[1] if best else None


def data_home() -> Path:
    """Where this tool keeps data by default: ``$XDG_DATA_HOME/evaluations`` (~/.local/share/evaluations)."""
    base = env_dir("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return base / "evaluations"


def default_cache_dir() -> Path:
    """Where the judges keep verdicts and embeddings when no config names a data folder:
    ``$EVALUATIONS_CACHE_DIR/cache``, else ``<data home>/cache``."""
    return (env_dir("EVALUATIONS_CACHE_DIR") or data_home()) / "cache"
