"""Gate an evaluation run from pytest (`pytest -k eval`), e.g. in CI after `evaluations ... --out runs/current`.

    EVAL_RUN=runs/current EVAL_BASELINE=runs/baseline pytest examples/test_eval_gate.py -k eval

EVAL_BASELINE may be "last" (the latest comparable run in the history store). Without EVAL_RUN the test
is skipped with the reason printed (nothing to gate).
"""

import os

import pytest

from evaluations.experiments.pytest_gate import assert_gate

RULES = os.path.join(os.path.dirname(__file__), "gate.yaml")


@pytest.mark.skipif(not os.environ.get("EVAL_RUN"), reason="EVAL_RUN (a run folder) not set")
def test_eval_quality_gate():
    assert_gate(os.environ["EVAL_RUN"], RULES, baseline=os.environ.get("EVAL_BASELINE") or None)
