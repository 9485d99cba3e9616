"""Small statistics used by the reports: percentiles and distribution summaries."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100), ``numpy.percentile`` with its default linear interpolation between
    closest ranks (``v[f] + (v[c] - v[f]) * (r - f)`` with ``r = q/100 * (n - 1)`` on the sorted values);
    None for no values."""
    data = np.asarray(values, dtype=float)
    return float(np.percentile(data, q)) if data.size else None


def distribution(values: Iterable[float]) -> dict[str, float | int | None]:
    """mean, p50, p95, p99, max and n of ``values`` (None entries are ignored)."""
    data = np.array([float(v) for v in values if v is not None])
    if not data.size:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    p50, p95, p99 = (float(v) for v in np.percentile(data, [50, 95, 99]))
    return {"n": int(data.size), "mean": float(data.mean()), "p50": p50, "p95": p95, "p99": p99,
            "max": float(data.max())}

