"""Review sheets out, a person's labels back in: the files of a review.

In the run folder:

- ``review_design.json``: per measure, the sample design (``review.design.Design``), written by the first review;
- ``human_labels.jsonl``: one line per label given, ``{"case_id", "measure", "label", "at", "source"}``, in the
  order given. A later line for the same (case, measure) replaces the earlier one (and ``review --labels`` says so);
  nothing is ever deleted.

A sheet (``review --out SHEET``) is JSONL, one row per chosen case (``SheetRow``), and a CSV of the same columns
beside it (``SHEET`` with ``.csv``), for a spreadsheet. A person fills in ``label``: true/false, yes/no, y/n, 1/0;
empty or null is "not labelled".
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from evaluations.core.errors import EvaluationsError
from evaluations.core.fsutil import atomic_write_bytes, atomic_write_json
from evaluations.review.design import Design

__all__ = ["DESIGN_FILE", "LABELS_FILE", "HumanLabel", "SheetRow", "append_labels", "current_labels", "read_designs",
           "read_labels", "read_sheet", "write_design", "write_sheet"]

DESIGN_FILE = "review_design.json"
LABELS_FILE = "human_labels.jsonl"
_TRUE, _FALSE = {"true", "yes", "y", "1"}, {"false", "no", "n", "0"}
_EMPTY = {"", "null", "none"}
_FIX_SHEET = "label is true/false (yes/no, y/n, 1/0), or empty for a case not labelled"


class HumanLabel(BaseModel):
    case_id: str
    measure: str
    label: bool
    at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    source: str = ""  # the sheet it came from, or "session"


class SheetRow(BaseModel):
    case_id: str
    measure: str
    stratum: str = ""
    question: str = ""
    context: str = ""
    answer: str | None = None
    judge_verdict: bool | None = None
    judge_p: float | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)
    label: bool | None = None


def read_designs(folder: Path) -> dict[str, Design]:
    path = folder / DESIGN_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {name: Design.model_validate(d) for name, d in data.items()}
    except (ValueError, ValidationError, AttributeError) as exc:
        raise EvaluationsError(f"not a review design file ({type(exc).__name__})", where=str(path),
                               fix="restore it from a copy of the run folder; without it the labels cannot be "
                                   "weighed (remove it and human_labels.jsonl to start the review again)") from None


def write_design(folder: Path, design: Design) -> None:
    designs = read_designs(folder)
    designs[design.measure] = design
    atomic_write_json(folder / DESIGN_FILE, {k: v.model_dump(mode="json") for k, v in designs.items()})


def read_labels(folder: Path) -> list[HumanLabel]:
    """Every label line of ``human_labels.jsonl`` in order (none when absent); one error naming a bad line."""
    path = folder / LABELS_FILE
    if not path.is_file():
        return []
    out = []
    for number, line in enumerate(path.read_bytes().decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(HumanLabel.model_validate_json(line))
        except ValidationError:
            raise EvaluationsError("not a human label line", where=f"{path}:{number}",
                                   fix="the file was edited; restore the line, or delete it and label that case "
                                       "again with `evaluations review`") from None
    return out


def current_labels(labels: Iterable[HumanLabel]) -> dict[tuple[str, str], HumanLabel]:
    """(case id, measure) -> its latest label."""
    latest: dict[tuple[str, str], HumanLabel] = {}
    for label in labels:
        latest[(label.case_id, label.measure)] = label
    return latest


def append_labels(folder: Path, new: list[HumanLabel]) -> None:
    """Add ``new`` to ``human_labels.jsonl`` (the whole file rewritten atomically: never half a line)."""
    path = folder / LABELS_FILE
    old = path.read_bytes() if path.is_file() else b""
    if old and not old.endswith(b"\n"):
        old += b"\n"
    atomic_write_bytes(path, old + "".join(label.model_dump_json() + "\n" for label in new).encode("utf-8"))


def _csv_path(sheet: Path) -> Path:
    return sheet.with_suffix(".csv") if sheet.suffix != ".csv" else sheet.with_suffix(".csv.csv")


def write_sheet(sheet: Path, rows: list[SheetRow]) -> Path:
    """The JSONL sheet and its CSV twin; returns the CSV's path."""
    atomic_write_bytes(sheet, "".join(r.model_dump_json() + "\n" for r in rows).encode("utf-8"))
    buffer = io.StringIO()
    fields = list(SheetRow.model_fields)
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    for row in rows:
        data = row.model_dump(mode="json")
        data["evidence"] = json.dumps(data["evidence"], ensure_ascii=False)
        data["label"] = ""
        writer.writerow(data)
    atomic_write_bytes(_csv_path(sheet), buffer.getvalue().encode("utf-8"))
    return _csv_path(sheet)


def _label_value(value: Any, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().casefold()
    if text in _EMPTY:
        return None
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise EvaluationsError(f"label {value!r} is not yes or no", where=where, fix=_FIX_SHEET)


def read_sheet(path: Path, measure: str | None = None) -> list[tuple[str, str, bool]]:
    """(case id, measure, label) of every labelled row of a sheet (JSONL, or CSV when it ends in .csv). A row's
    ``measure`` column wins; ``measure`` is the default for rows without one."""
    if not path.is_file():
        raise EvaluationsError("no such sheet", where=str(path), fix="give the file `review --out` wrote")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EvaluationsError(f"not valid UTF-8 (byte {exc.start})", where=str(path),
                               fix="save the sheet as UTF-8") from None
    rows: list[tuple[int, dict[str, Any]]] = []
    if path.suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames or "case_id" not in reader.fieldnames or "label" not in reader.fieldnames:
            raise EvaluationsError("a sheet needs the columns case_id and label", where=f"{path}:1",
                                   fix="keep the header row `review --out` wrote")
        rows = [(i + 2, row) for i, row in enumerate(reader)]
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise EvaluationsError("not valid JSON", where=f"{path}:{number}",
                                       fix="one JSON object per line, as `review --out` wrote it") from None
            if not isinstance(row, dict):
                raise EvaluationsError("not a JSON object", where=f"{path}:{number}", fix=_FIX_SHEET)
            rows.append((number, row))
    out = []
    for number, row in rows:
        where = f"{path}:{number}"
        case = row.get("case_id")
        if not isinstance(case, str) or not case:
            raise EvaluationsError("the row has no case_id", where=where, fix="keep each row's case_id as written")
        label = _label_value(row.get("label"), where)
        name = row.get("measure") or measure
        if not name:
            raise EvaluationsError("the row names no measure", where=where, fix="give --measure")
        if label is not None:
            out.append((case, str(name), label))
    return out
