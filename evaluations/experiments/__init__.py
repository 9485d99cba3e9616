"""Experiments over run folders: compare (paired statistics), gate (quality rules), history (SQLite trend).

Everything here takes runs as typed ``RunData`` (``results.rundata``: a folder read back, or a run just finished).

The names below are loaded on first use (PEP 562): recording a run in the history after every run must not pay
for scipy/statsmodels, which only ``compare`` and ``gate`` need.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "compare_runs": "compare", "write_compare": "compare",
    "Rules": "gate", "load_rules": "gate", "parse_rules": "gate", "render": "gate", "run_gate": "gate",
    "history_path": "history", "last_comparable": "history", "list_runs": "history", "record_run": "history",
    "RunData": "evaluations.results.rundata", "load_run": "evaluations.results.rundata",
}

__all__ = list(_HOME)


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module if "." in module else f".{module}", __name__), name)
