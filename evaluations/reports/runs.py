"""Read a finished run folder for a report: ``summary.json`` and ``cases.jsonl`` as plain JSON.

(``evaluations.results.rundata`` reads the same files, but importing that package pulls scipy and the
statistics in; a report of one run needs neither.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluations.core.errors import EvaluationsError


@dataclass
class RunData:
    path: Path
    summary: dict[str, Any]
    records: list[dict[str, Any]]

    @property
    def name(self) -> str:
        return str(self.summary.get("name") or self.path.name)


def _json(path: Path, line: int | None = None, text: str | None = None) -> Any:
    try:
        return json.loads(text if text is not None else path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        where = f"{path}:{line}" if line else str(path)
        raise EvaluationsError(f"cannot read {path.name} ({exc})", where=where,
                               fix="re-run, or point at the --out folder of a finished run") from None


def read_run(folder: str | Path) -> RunData:
    folder = Path(folder)
    for name in ("summary.json", "cases.jsonl"):
        if not (folder / name).is_file():
            raise EvaluationsError(f"{name} not found: not a finished run folder", where=str(folder),
                                   fix="give the --out folder of a finished `evaluations` run")
    records = []
    with (folder / "cases.jsonl").open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                records.append(_json(folder / "cases.jsonl", number, line))
    return RunData(folder, _json(folder / "summary.json"), records)
