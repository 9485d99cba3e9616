"""Small statistics used by the reports: percentiles and distribution summaries."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between closest ranks (numpy's default).

    ``p = v[f] + (v[c] - v[f]) * (r - f)`` with ``r = q/100 * (n - 1)``, ``f = floor(r)``, ``c = ceil(r)``
    on the sorted values; None for no values.
    """
    data = sorted(float(v) for v in values)
    if not data:
        return None
    rank = q / 100 * (len(data) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return data[low] + (data[high] - data[low]) * (rank - low)


def distribution(values: Iterable[float]) -> dict[str, float | int | None]:
    """mean, p50, p95, p99, max and n of ``values`` (None entries are ignored)."""
    data = [float(v) for v in values if v is not None]
    if not data:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    return {
        "n": len(data),
        "mean": sum(data) / len(data),
        "p50": percentile(data, 50),
        "p95": percentile(data, 95),
        "p99": percentile(data, 99),
        "max": max(data),
    }
