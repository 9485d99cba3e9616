"""Read a run folder (``cases.jsonl`` + ``summary.json``): the only input of compare, gate and history.

A case may appear several times in ``cases.jsonl`` (``repeat`` 0..N-1); ``RunFolder.cases`` keeps every
record, grouped by case name, in file order. Nothing here imports the run pipeline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError


@dataclass
class RunFolder:
    """One run as read from disk. ``label`` names it in comparisons (set by the caller when names clash)."""

    path: Path
    summary: dict[str, Any]
    cases: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    label: str = ""

    @property
    def name(self) -> str:
        return str(self.summary.get("name") or self.path.name)

    @property
    def dataset(self) -> dict[str, Any]:
        return self.summary.get("dataset") or {}

    def tags(self) -> dict[str, set[str]]:
        """tag -> names of the cases carrying it."""
        out: dict[str, set[str]] = {}
        for name, records in self.cases.items():
            for tag in records[0].get("tags") or []:
                out.setdefault(str(tag), set()).add(name)
        return out


def _read_cases(path: Path) -> dict[str, list[dict[str, Any]]]:
    cases: dict[str, list[dict[str, Any]]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise EvaluationsError(f"not valid JSON: {exc.msg}", where=f"{path}:{number}",
                                       fix="the run was interrupted mid-write or the file was edited; re-run it"
                                       ) from None
            if not isinstance(record, dict) or "name" not in record:
                raise EvaluationsError("a case record needs a 'name'", where=f"{path}:{number}",
                                       fix="point at a run folder written by `evaluations`")
            # schema 2 names a repeat "<case> [i/N]" and keeps the case's own name in "case"
            cases.setdefault(str(record.get("case") or record["name"]), []).append(record)
    return cases


def load_run(path: str | Path) -> RunFolder:
    """Read ``path/summary.json`` and ``path/cases.jsonl``; EvaluationsError naming the missing/bad file."""
    folder = Path(path)
    summary_path, cases_path = folder / "summary.json", folder / "cases.jsonl"
    for needed in (summary_path, cases_path):
        if not needed.is_file():
            raise EvaluationsError(f"{needed.name} not found: not a run folder", where=str(folder),
                                   fix="give the --out folder of a finished `evaluations` run")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise EvaluationsError(f"not valid JSON: {exc.msg}", where=f"{summary_path}:{exc.lineno}",
                               fix="re-run to rewrite summary.json") from None
    return RunFolder(path=folder, summary=summary, cases=_read_cases(cases_path),
                     label=str(summary.get("name") or folder.name))


def label_runs(runs: list[RunFolder]) -> None:
    """Give every run a unique label: its summary name, else its folder name, else ``name#i``."""
    names = [r.name for r in runs]
    for i, run in enumerate(runs):
        label = run.name
        if names.count(label) > 1:
            label = run.path.name
            if [r.path.name for r in runs].count(label) > 1:
                label = f"{run.name}#{i + 1}"
        run.label = label
