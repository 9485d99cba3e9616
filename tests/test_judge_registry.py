"""The one registry of judges (``judging.validation.registry``): every command's list of judges comes from it."""

from __future__ import annotations

import pytest

from evaluations.core.errors import EvaluationsError
from evaluations.cli.judges import commands
from evaluations.cli.options import parse_judges
from evaluations.judging.validation.registry import JUDGES, per_passage, reads_gold, reads_passages, refittable


def test_judge_agreement_and_judge_check_accept_exactly_the_registry():
    with pytest.raises(EvaluationsError) as caught:
        parse_judges("keyword,faithfulnes")
    assert "did you mean faithfulness?" in str(caught.value.render())
    for name in JUDGES:
        assert parse_judges(name)  # each name alone is accepted


def test_calibrate_judge_offers_offline_and_every_refittable_judge():
    option = next(p for p in {c.name: c for c in commands}["calibrate-judge"].params if p.name == "judge")
    assert set(option.type.choices) == {"offline", *refittable()}
    assert set(refittable()) == {"faithfulness", "groundedness", "context_relevance"}


def test_what_each_judge_reads():
    """By hand: the lexical and model correctness judges read the gold; the reference-free ones read passages;
    faithfulness and context relevance ask the checker per claim or passage."""
    assert reads_gold(["keyword", "f1", "em", "containment", "semantic", "offline", "llm", "combined"]) == \
        ["keyword", "f1", "em", "containment", "semantic", "offline", "llm", "combined"]
    assert reads_gold(["answer_relevance", "faithfulness", "context_relevance"]) == []
    assert not reads_passages(["keyword", "offline", "llm"])
    assert all(reads_passages([n]) for n in ("answer_relevance", "faithfulness", "groundedness", "context_relevance"))
    assert per_passage(list(JUDGES)) == ["faithfulness", "groundedness", "context_relevance"]
    assert JUDGES["faithfulness"].refit is JUDGES["groundedness"].refit is not None
    assert JUDGES["faithfulness"].not_judged and JUDGES["offline"].not_judged is None
