"""A lean install (issue 43): Ray and the OTLP exporter are extras (``evaluations[ray]``, ``evaluations[otel]``),
not dependencies. A command that needs a missing one fails before any work with the one-error contract, naming
the extra to install. The extra is made missing here in-process (its modules set to None in ``sys.modules``,
so importing them raises ImportError, as on an install without it); the CLI is the real one, in-process."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from conftest import SCIFACT, assert_one_error
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
FTS_RUN = ["beir", str(SCIFACT), "--limit", "3", "--search-mode", "fts", "--skip-qa", "--no-progress"]


def _uninstalled(monkeypatch, package: str) -> None:
    """``import package`` (and any of its modules, loaded already or not) raises ImportError until the test ends."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")] + [package]:
        monkeypatch.setitem(sys.modules, name, None)


def _fix_line(err: str, extra: str) -> None:
    fixes = [line.strip() for line in err.splitlines() if line.strip().startswith("fix:")]
    assert len(fixes) == 1 and fixes[0].startswith(f"fix: pip install 'evaluations[{extra}]'"), err


def _project() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]


def test_default_dependencies_name_neither_ray_nor_the_otlp_exporter():
    project = _project()
    names = {Requirement(r).name.lower() for r in project["dependencies"]}
    assert "ray" not in names
    assert not {n for n in names if n.startswith("opentelemetry")}, names
    optional = project["optional-dependencies"]
    assert [(r.name, r.extras) for r in map(Requirement, optional["ray"])] == [("ray", {"data"})]
    assert {Requirement(r).name for r in optional["otel"]} == {"opentelemetry-sdk",
                                                                 "opentelemetry-exporter-otlp-proto-http"}
    # every extra an error tells a user to install is one pyproject declares
    from evaluations.core.extras import EXTRAS

    assert set(EXTRAS) <= set(optional)


def test_executor_ray_without_the_ray_extra_is_one_error_before_any_work(cli, tmp_path, monkeypatch):
    _uninstalled(monkeypatch, "ray")
    out, db = tmp_path / "out", tmp_path / "db"
    code, _, err = cli([*FTS_RUN, "--db", str(db), "--out", str(out), "--executor", "ray"])
    assert_one_error(code, err, "--executor", "'ray'", "not installed")
    _fix_line(err, "ray")
    assert not out.exists() and not db.exists()
    # the same from the config file's executor (no flag): named there
    config = tmp_path / "c.yaml"
    config.write_text("executor: ray:auto\n")
    code, _, err = cli([*FTS_RUN, "--db", str(db), "--out", str(out), "--config", str(config)])
    assert_one_error(code, err, "executor", "'ray:auto'", "not installed")
    _fix_line(err, "ray")
    assert not out.exists() and not db.exists()


def test_matrix_on_ray_without_the_ray_extra_is_one_error_before_any_cell(cli, tmp_path, monkeypatch):
    grid = {"dataset": "beir", "source": str(SCIFACT), "limit": 3, "skip_qa": True,
            "axes": {"search_mode": ["fts", "vector"]}}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    _uninstalled(monkeypatch, "ray")
    for args in (["--executor", "ray"], []):
        if not args:  # the grid's own executor
            (tmp_path / "grid.yaml").write_text(yaml.safe_dump({**grid, "executor": "ray"}))
        code, _, err = cli(["matrix", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "m"), "--no-progress",
                            *args])
        assert_one_error(code, err, "'ray'", "not installed")
        _fix_line(err, "ray")
        assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
def test_otlp_export_without_the_otel_extra_is_one_error_before_any_work(cli, tmp_path, monkeypatch, variable):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, "http://127.0.0.1:4318")
    _uninstalled(monkeypatch, "opentelemetry.sdk")
    _uninstalled(monkeypatch, "opentelemetry.exporter.otlp")
    out, db = tmp_path / "out", tmp_path / "db"
    code, _, err = cli([*FTS_RUN, "--db", str(db), "--out", str(out)])
    assert_one_error(code, err, "OpenTelemetry", variable, "not installed")
    _fix_line(err, "otel")
    assert not out.exists() and not db.exists()
    grid = {"dataset": "beir", "source": str(SCIFACT), "limit": 3, "skip_qa": True, "axes": {"search_mode": ["fts"]}}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    code, _, err = cli(["matrix", str(tmp_path / "grid.yaml"), "--out", str(tmp_path / "m"), "--no-progress"])
    assert_one_error(code, err, "OpenTelemetry", variable, "not installed")
    _fix_line(err, "otel")
    assert not (tmp_path / "m").exists()
