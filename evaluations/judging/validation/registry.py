"""The one registry of judges the judge tools and runs ask: what each judge reads, how to run it over labelled rows,
and how to refit it.

``JUDGES``: name -> ``Judge``. Every list of judge names a command accepts, every "does this judge read the gold
answer / the passages" question and every refit comes from here (``judge-agreement``, ``judge-check``,
``calibrate-judge --judges``, the run's and ``score``'s reference-free judges' parameters files):

=====================  ==========  ===========  =========  ===================================================
judge                  gold        passages     refit      batch judge (over labelled rows)
=====================  ==========  ===========  =========  ===================================================
keyword, f1, em,       reads it    no           no         ``agreement`` (lexical rules)
containment
semantic, offline      reads it    no           offline:   ``agreement`` (MiniLM; the calibrated judge)
                                                calibrate
llm, combined          reads it    no           no         ``agreement`` (the embedded or served LLM judge)
answer_relevance,      no          its context  no         ``agreement`` (the rules, then the naming screen on
answer_relevance_rules                                      the embedded judge model; ``_rules``: no model)
faithfulness           no          yes          yes        ``passage_judges`` (alias ``groundedness``)
context_relevance      no          yes          yes        ``passage_judges``
=====================  ==========  ===========  =========  ===================================================

A batch judge is made by ``Judge.batch(keyword_threshold, cache=, config=)`` and returns one verdict per labelled
row (bool, or float with NaN = not judged). The run's own evaluators live in ``evaluators/`` (a higher layer):
``pipeline.plan.VERDICTS`` names the correctness verdicts a run computes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evaluations.judging.validation import agreement, passage_judges, refit
from evaluations.judging.validation.agreement import BatchJudge

__all__ = ["JUDGES", "Judge", "batch_judge", "per_passage", "reads_gold", "reads_passages", "refittable"]


@dataclass(frozen=True)
class Judge:
    name: str
    batch: Callable[..., BatchJudge]  # (keyword_threshold, cache=True, config=None) -> batch judge
    reads_gold: bool  # compares the answer with the gold answer: a row needs one
    reads_passages: bool  # reads the row's passages (labelled rows with a context: ``labels.passage_rows``)
    per_passage: bool = False  # asks the checker model about each claim or passage of a row (its failures counted)
    refit: refit.Refitter | None = None  # ``calibrate-judge --judges NAME`` refits its parameters
    not_judged: str | None = None  # why it leaves a row unjudged (its NaN verdict), said under the agreement table


def _passage(name: str) -> Callable[..., BatchJudge]:
    factory = passage_judges.PASSAGE_JUDGES[name]
    return lambda _threshold=None, cache=True, config=None: factory(cache=cache, config=config)


JUDGES: dict[str, Judge] = {
    **{name: Judge(name, factory, reads_gold=name not in agreement.REFERENCE_FREE,
                   reads_passages=name in agreement.REFERENCE_FREE)
       for name, factory in agreement.JUDGES.items()},
    **{name: Judge(name, _passage(name), reads_gold=False, reads_passages=True, per_passage=True,
                   refit=refit.REFITS.get(name),
                   not_judged=passage_judges.NOT_JUDGED.get(name))
       for name in passage_judges.PASSAGE_JUDGES},
}


def batch_judge(name: str, keyword_threshold: float, *, cache: bool = True, config=None) -> BatchJudge:
    """The batch judge ``name`` (``JUDGES``)."""
    return JUDGES[name].batch(keyword_threshold, cache=cache, config=config)


def reads_gold(names) -> list[str]:
    """The judges of ``names`` that compare the answer with the gold answer."""
    return [n for n in dict.fromkeys(names) if n in JUDGES and JUDGES[n].reads_gold]


def reads_passages(names) -> bool:
    """Whether one of ``names`` reads labelled rows with passages."""
    return any(JUDGES[n].reads_passages for n in names if n in JUDGES)


def per_passage(names) -> list[str]:
    """The judges of ``names`` that ask the checker about each claim or passage (faithfulness, context relevance)."""
    return [n for n in names if n in JUDGES and JUDGES[n].per_passage]


def refittable() -> list[str]:
    """The judges ``calibrate-judge --judges`` refits and whose parameters files runs read, in their files' order."""
    return [n for n in refit.REFITS if n in JUDGES and JUDGES[n].refit is not None]
