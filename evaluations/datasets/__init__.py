"""Dataset adapters: a registry of declarative specs, each turning data into a ``Corpus``."""

from __future__ import annotations

from evaluations.core.errors import EvaluationsError
from evaluations.datasets.spec import DatasetSpec, LoadOptions
from evaluations.datasets.beir import SPEC as BEIR
from evaluations.datasets.repliqa import SPEC as REPLIQA
from evaluations.datasets.wix import SPEC as WIX

DATASETS: dict[str, DatasetSpec] = {spec.name: spec for spec in (REPLIQA, WIX, BEIR)}


def get_spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise EvaluationsError(f"unknown dataset {name!r}", fix=f"use one of {', '.join(DATASETS)}") from None


__all__ = ["DATASETS", "DatasetSpec", "LoadOptions", "get_spec"]
