"""Reading a fitted judge's parameters file: one place for every way such a file can be wrong.

A parameters file (``judges/<judge>.json``, or the same name in ``$EVALUATIONS_JUDGES_DIR``, written by
``calibrate-judge``) holds a logistic model: ``features``, ``mean``, ``scale``, ``coef``, ``intercept``,
``threshold``. ``read_json`` reads any judge's parameters file as JSON (the one wording of a file that is missing,
a folder, not UTF-8 or not JSON, for every judge); ``read_params`` returns it validated (pydantic) and checked as a
model: every feature known to the judge, one mean, scale and coefficient per feature, all finite, scales positive,
the threshold in [0, 1]. Anything else is one ``EvaluationsError`` naming the file and the fix, raised before a
judge asks any model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from evaluations.core.errors import EvaluationsError

__all__ = ["JUDGES_ENV", "LogisticParams", "best_threshold", "check_model", "default_output_path",
           "default_params_path", "llm_logit", "params_fix", "read_json", "read_params"]

#: the folder of a user's own fitted parameters (``default_params_path``)
JUDGES_ENV = "EVALUATIONS_JUDGES_DIR"

P = TypeVar("P", bound=BaseModel)


def params_fix(path: Path, name: str, refit: str) -> str:
    """The fix for a bad file: a user's own fit (in ``$EVALUATIONS_JUDGES_DIR``) is moved aside first (calibrate-judge
    reads the current file too, so it cannot re-write a damaged one in place), then re-fitted with ``refit``; the
    shipped file is restored."""
    from evaluations.judging.basics.shipped import shipped_path

    if path.resolve() == shipped_path(name).resolve():
        return f"restore judges/{name} from the repository (or re-install the package)"
    return (f"move it out of ${JUDGES_ENV} (the shipped judges/{name} is then used), then re-fit your own if you "
            f"want one ({refit})")


def check_model(params: Any, known: Sequence[str]) -> str | None:
    """Why a fitted logistic model cannot be used (None when it can): unknown features, lengths that differ,
    values that are not finite, scales that are not positive, a threshold outside [0, 1]."""
    unknown = [f for f in params.features if f not in known]
    if unknown:
        return f"unknown features {unknown} (the judge computes {list(known)})"
    lengths = {len(params.features), len(params.mean), len(params.scale), len(params.coef)}
    if len(lengths) != 1 or not params.features:
        return (f"{len(params.features)} features but {len(params.mean)} means, {len(params.scale)} scales and "
                f"{len(params.coef)} coefficients")
    numbers = [*params.mean, *params.scale, *params.coef, params.intercept, params.threshold]
    if not all(math.isfinite(v) for v in numbers):
        return "a mean, scale, coefficient, intercept or threshold is not a finite number"
    if any(s <= 0 for s in params.scale):
        return "a scale is not positive (features are divided by it)"
    if not 0.0 <= params.threshold <= 1.0:
        return f"threshold {params.threshold} is not a probability in [0, 1]"
    return None


def read_json(path: Path, what: str, fix: str, *, missing_fix: str | None = None) -> Any:
    """The JSON value in ``path``; a file that is missing (the fix ``missing_fix`` when given), a folder, unreadable,
    not UTF-8 or not JSON is one EvaluationsError naming it (and the line of a JSON error). ``what``: the judge's
    parameters, for messages ("faithfulness parameters")."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvaluationsError(f"{what} not found", where=where, fix=missing_fix or fix) from None
    except IsADirectoryError:
        raise EvaluationsError(f"{what}: a folder, not a file", where=where, fix=fix) from None
    except UnicodeDecodeError as exc:
        raise EvaluationsError(f"{what} are not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset "
                               f"{exc.start})", where=where, fix=fix) from None
    except OSError as exc:
        raise EvaluationsError(f"{what} cannot be read ({exc.strerror or exc})", where=where, fix=fix) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvaluationsError(f"{what} are not valid JSON ({exc.msg})", where=f"{where}:{exc.lineno}",
                               fix=fix) from None


def read_params(path: Path, model: type[P], *, what: str, known: Sequence[str] | Callable[[P], Sequence[str]],
                refit: str, unwrap: Callable[[dict], Any] = lambda doc: doc,
                extra: Callable[[P], str | None] = lambda _: None) -> P:
    """The parameters in ``path`` as ``model``, checked (module docstring). ``what``: the judge, for messages;
    ``known``: the features the judge computes (or a function of the parameters read giving them, for a judge whose
    width is its model's); ``refit``: the command that writes the file; ``unwrap``: where the parameters sit in the
    file's object; ``extra``: a further check of the judge's own fields."""
    fix = params_fix(path, path.name, refit)
    where = str(path)
    doc = read_json(path, f"{what} parameters", fix)
    if not isinstance(doc, dict):
        raise EvaluationsError(f"{what} parameters must be a JSON object, got a {type(doc).__name__}", where=where,
                               fix=fix)
    try:
        params = model.model_validate(unwrap(doc))
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise EvaluationsError(f"invalid {what} parameters: {key}: {first['msg']}", where=where, fix=fix) from None
    problem = check_model(params, known(params) if callable(known) else known) or extra(params)
    if problem:
        raise EvaluationsError(f"invalid {what} parameters: {problem}", where=where, fix=fix)
    return params


# -- shared by every fitted judge ------------------------------------------------------------------------
class LogisticParams(BaseModel):
    """A fitted logistic model: standardisation, weights and threshold over ``features``."""

    features: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    threshold: float

    def probability(self, x: np.ndarray) -> np.ndarray:
        """σ(b + ((X − μ) / s) · w) for rows of X in ``features`` order."""
        z = self.intercept + ((np.atleast_2d(x) - np.array(self.mean)) / np.array(self.scale)) @ np.array(self.coef)
        return 1.0 / (1.0 + np.exp(-z))


def llm_logit(p: float | np.ndarray) -> float | np.ndarray:
    """log(p / (1 − p)) with p clipped to [1e-4, 1 − 1e-4]."""
    q = np.clip(p, 1e-4, 1 - 1e-4)
    return np.log(q / (1 - q))


def default_params_path(name: str = "offline_judge.json") -> Path:
    """Where parameters are read from: ``$EVALUATIONS_JUDGES_DIR/<name>`` when that folder (it must exist) holds
    the file, else the shipped package data (``judging.basics.shipped``; ``judges/<name>`` in a checkout): a folder of
    your own fits (``calibrate-judge``) needs only the files you refitted."""
    from evaluations.core.env import env_dir
    from evaluations.judging.basics.shipped import shipped_path

    folder = env_dir(JUDGES_ENV, must_exist=True)
    return folder / name if folder is not None and (folder / name).exists() else shipped_path(name)


def default_output_path(name: str = "offline_judge.json") -> Path:
    """Where the developers' refits write (``heldout.write_params``, the benchmarks): ``$EVALUATIONS_JUDGES_DIR/
    <name>``, else the repository's ``judges/<name>`` in a checkout (the file runs read), else ``./<name>`` (an
    installed package's own files are not rewritten). ``calibrate-judge`` without ``--out`` writes to
    ``$EVALUATIONS_JUDGES_DIR`` or the working directory instead, never over a shipped file."""
    from evaluations.core.env import env_dir
    from evaluations.judging.basics.shipped import checkout_judges_dir

    folder = env_dir(JUDGES_ENV) or checkout_judges_dir()
    return (folder if folder is not None else Path.cwd()) / name


def best_threshold(p: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """argmax_t weighted accuracy(p ≥ t, y) over t ∈ {0.01, …, 0.99}; ties: the t closest to 0.5."""
    grid = np.round(np.arange(0.01, 1.0, 0.01), 2)
    w = np.ones(len(y)) if weights is None else weights
    acc = np.array([np.sum(w * ((p >= t) == y)) for t in grid])
    best = np.flatnonzero(np.isclose(acc, acc.max()))
    return float(grid[best[np.argmin(np.abs(grid[best] - 0.5))]])
