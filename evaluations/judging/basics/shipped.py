"""Files shipped with the package: judge rubrics and fitted judge parameters, read with importlib.resources.

The source of truth is the repository's top-level ``judges/`` folder. In the package it is
``evaluations/judges/resources``: a symlink to ``../../judges`` in a checkout (editable installs read and
``calibrate-judge`` writes the repository's files), real files in a wheel (``[tool.setuptools.package-data]``),
so an installed package needs no checkout.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from evaluations.core.errors import EvaluationsError

__all__ = ["checkout_judges_dir", "judge_file", "read_judge_text", "shipped_path"]

RESOURCES = "resources"


def judge_file(name: str) -> Traversable:
    """The shipped file ``name`` (e.g. ``answer_equivalence.md``) as an importlib.resources Traversable."""
    return files("evaluations.judging").joinpath(RESOURCES, name)


def shipped_path(name: str) -> Path:
    """The shipped file ``name`` on the file system (symlinks resolved: ``judges/NAME`` in a checkout)."""
    path = Path(str(judge_file(name)))
    return path.resolve() if path.exists() else path


def read_judge_text(name: str) -> str:
    """The text of the shipped file ``name``; EvaluationsError naming it when it cannot be read."""
    resource = judge_file(name)
    try:
        return resource.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise EvaluationsError(
            f"cannot read the shipped file {name} ({reason})", where=str(resource),
            fix=f"restore judges/{name} in a checkout, or reinstall: pip install --force-reinstall evaluations",
        ) from None


def checkout_judges_dir() -> Path | None:
    """The repository's ``judges/`` folder when the package runs from a source checkout, else None."""
    folder = Path(str(files("evaluations.judging").joinpath(RESOURCES))).resolve()
    if folder.name == "judges" and (folder.parent / "pyproject.toml").is_file():
        return folder
    return None
