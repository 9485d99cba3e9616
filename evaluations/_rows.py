"""Reading rows from local files (JSONL[.gz], JSON arrays, parquet, CSV/TSV) with their line numbers.

Every problem becomes one EvaluationsError naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import EvaluationsError

SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet", ".csv", ".csv.gz", ".tsv", ".tsv.gz")


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open("r", encoding="utf-8")


def find_file(folder: Path, stem: str) -> Path | None:
    """``folder/stem`` with any supported suffix, or None."""
    for suffix in SUFFIXES:
        candidate = folder / f"{stem}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def iter_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line_number, row) for every row of ``path``; line numbers start at 1.

    For JSON arrays and parquet, the "line" is the 1-based row index.
    """
    if not path.is_file():
        raise EvaluationsError("file not found", where=str(path), fix="check the path (--source / dataset folder)")
    name = path.name
    try:
        if name.endswith((".jsonl", ".jsonl.gz")):
            with _open_text(path) as handle:
                for number, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise EvaluationsError(f"not valid JSON ({exc.msg})", where=f"{path}:{number}",
                                               fix="fix or remove that line") from None
                    if not isinstance(row, dict):
                        raise EvaluationsError("a row must be a JSON object", where=f"{path}:{number}",
                                               fix="write one JSON object per line")
                    yield number, row
        elif name.endswith((".json", ".json.gz")):
            with _open_text(path) as handle:
                data = json.load(handle)
            if isinstance(data, dict):
                data = next((v for v in data.values() if isinstance(v, list)), [data])
            for number, row in enumerate(data, 1):
                if not isinstance(row, dict):
                    raise EvaluationsError("a row must be a JSON object", where=f"{path}:{number}",
                                           fix="make the file an array of objects")
                yield number, row
        elif name.endswith(".parquet"):
            import pyarrow.parquet as pq

            for number, row in enumerate(pq.read_table(path).to_pylist(), 1):
                yield number, row
        elif name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz")):
            delimiter = "\t" if ".tsv" in name else ","
            with _open_text(path) as handle:
                reader = csv.DictReader(handle, delimiter=delimiter)
                for row in reader:
                    yield reader.line_num, dict(row)
        else:
            raise EvaluationsError(
                "unsupported file type", where=str(path), fix=f"use one of {', '.join(SUFFIXES)}"
            )
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise EvaluationsError(f"cannot read file: {exc}", where=str(path), fix="check the file is complete") from None


def field(row: dict[str, Any], name: str, where: str, *, kind: type | tuple[type, ...] = str,
          required: bool = True, default: Any = None) -> Any:
    """``row[name]`` checked for presence and type; errors name ``where`` (file:line) and the field."""
    value = row.get(name)
    if value is None or (kind is str and isinstance(value, str) and not value.strip() and required):
        if required:
            raise EvaluationsError(f"missing or empty field '{name}'", where=where,
                                   fix=f"every row needs a non-empty '{name}'")
        return default
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise EvaluationsError(f"field '{name}' must be {expected}, got {type(value).__name__}", where=where,
                               fix=f"correct '{name}' on that line")
    return value
