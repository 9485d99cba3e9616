"""The published JSON schemas of the files users write, generated from the pydantic models.

``datasets/schemas/<name>.schema.json``; regenerate with ``python -m evaluations.scoring.schemas [FOLDER]``
(``tests/test_generic_dataset.py`` fails when a file is not current).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel


def _dataset() -> type[BaseModel]:
    from evaluations.datasets.generic import DatasetRecord

    return DatasetRecord


def _log() -> type[BaseModel]:
    from evaluations.scoring.logs import LogRecord

    return LogRecord


def _golden() -> type[BaseModel]:
    from evaluations.datasets.golden_schema import GoldenQuery

    return GoldenQuery


#: file stem -> the model whose ``model_json_schema()`` it holds (a golden file is an array of these)
SCHEMAS: dict[str, Callable[[], type[BaseModel]]] = {
    "dataset_record": _dataset,
    "log_record": _log,
    "golden_code_query": _golden,
}


def schema_text(name: str) -> str:
    return json.dumps(SCHEMAS[name]().model_json_schema(), indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: str | Path) -> list[Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        path = folder / f"{name}.schema.json"
        path.write_text(schema_text(name), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_schemas(sys.argv[1] if len(sys.argv) > 1 else "datasets/schemas"):
        print(f"wrote {path}")
