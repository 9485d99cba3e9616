"""Gate a run from pytest, so ``pytest -k eval`` can fail a CI job when quality drops.

Usage (a test file in your project, e.g. ``tests/test_eval_gate.py``)::

    from evaluations.experiments.pytest_gate import assert_gate

    def test_eval_quality_gate():
        assert_gate("runs/nightly", rules="examples/gate.yaml", baseline="last")

``assert_gate`` raises ``AssertionError`` listing every broken rule (the same text as ``evaluations gate``),
and returns the verdict dict when all rules hold. Bad input (unknown metric, missing run folder or
baseline) raises ``EvaluationsError``: a test error, not a quality failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaluations.experiments.gate import Rules, load_rules, parse_rules, render, run_gate
from evaluations.experiments.history import last_comparable
from evaluations.results.rundata import load_run


def gate_result(run_dir: str | Path, rules: str | Path | dict[str, Any] | Rules,
                baseline: str | Path | None = None, *, history: str | Path | None = None,
                config: Any = None) -> dict[str, Any]:
    """The gate's verdict dict. ``rules``: a YAML path, a mapping or ``Rules``; ``baseline``: a run folder,
    ``"last"`` (the latest comparable run in the history at ``history``, default the config's) or None."""
    if isinstance(rules, Rules):
        parsed = rules
    elif isinstance(rules, dict):
        parsed = parse_rules(rules)
    else:
        parsed = load_rules(rules)
    run = load_run(run_dir)
    base = None
    if baseline == "last":
        from evaluations.experiments.history import history_path

        base = load_run(last_comparable(run, Path(history) if history else history_path(config)))
    elif baseline is not None:
        base = load_run(baseline)
    return run_gate(run, parsed, base)


def assert_gate(run_dir: str | Path, rules: str | Path | dict[str, Any] | Rules,
                baseline: str | Path | None = None, **kwargs: Any) -> dict[str, Any]:
    """``gate_result``, raising AssertionError with the readable verdict when a rule is broken."""
    result = gate_result(run_dir, rules, baseline, **kwargs)
    if not result["passed"]:
        raise AssertionError(render(result))
    return result
