"""Experiments over run folders: compare (paired statistics), gate (quality rules), history (SQLite trend).

Everything here reads run folders (``cases.jsonl`` + ``summary.json``), never live objects.
"""

from .compare import compare_runs, write_compare
from .gate import Rules, load_rules, parse_rules, render, run_gate
from .history import history_path, last_comparable, list_runs, record_run
from .runfolder import RunFolder, load_run

__all__ = ["compare_runs", "write_compare", "Rules", "load_rules", "parse_rules", "render", "run_gate",
           "history_path", "last_comparable", "list_runs", "record_run", "RunFolder", "load_run"]
