"""The reference-free judges as batch judges for ``judge-agreement`` and ``judge-check``: ``faithfulness`` (alias
``groundedness``) and ``context_relevance``, over labelled rows that carry their passages (``LabelledAnswer.passages``,
``judging.passage_rows``). Their label is the property they measure (the answer is supported by the passages / a
passage is needed to answer the question), not correctness, and their controls are ``controls.PASSAGE_CONTROLS``.

A registry beside ``agreement.JUDGES`` (``run_judges(batch=...)``) rather than in it: these judges' fitting code
uses ``judging.heldout``, which reads ``judging.agreement``.

* ``faithfulness``: 1 when every claim of the answer is supported (``judging.faithfulness``), NaN (not judged) when
  the judge does not apply (a refusal, an empty answer, no passage);
* ``context_relevance``: 1 when a passage of the row is judged needed to answer (``judging.context_relevance``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evaluations.judging.agreement import BatchJudge, Progress
from evaluations.judging.labels import LabelledAnswer

__all__ = ["PASSAGE_JUDGES"]


def _passages_of(e: LabelledAnswer) -> list[Any]:
    from evaluations.judging.passages import Passage

    return [Passage(id=str(rank), text=text) for rank, text in enumerate(e.passages, 1)]


def _verdict_cache(cache: bool) -> Any:
    from evaluations.judging.embedded import VerdictCache

    return VerdictCache() if cache else None


def _faithful(e: LabelledAnswer, cache: bool) -> float:
    from evaluations.judging.faithfulness import judge_faithfulness

    result = judge_faithfulness(e.question, e.answer, _passages_of(e), cache=_verdict_cache(cache))
    return float(all(c.supported for c in result.claims)) if result.applicable else float("nan")


def _context_relevant(e: LabelledAnswer, cache: bool) -> float:
    from evaluations.judging.context_relevance import judge_context_relevance

    result = judge_context_relevance(e.question, _passages_of(e), cache=_verdict_cache(cache))
    return float(any(c.relevant for c in result.chunks)) if result.applicable else float("nan")


def _per_example(rule: Callable[[LabelledAnswer, bool], float], cache: bool) -> BatchJudge:
    """A batch judge of a per-example rule that may not apply (NaN), one progress step per example."""

    def run(examples: Sequence[LabelledAnswer], progress: Progress | None = None) -> np.ndarray:
        values = []
        for e in examples:
            values.append(rule(e, cache))
            if progress is not None:
                progress(1)
        return np.array(values, dtype=float)

    return run


#: judge name -> factory(cache=True) -> batch judge
PASSAGE_JUDGES: dict[str, Callable[..., BatchJudge]] = {
    "faithfulness": lambda cache=True: _per_example(_faithful, cache),
    "groundedness": lambda cache=True: _per_example(_faithful, cache),  # faithfulness's other name
    "context_relevance": lambda cache=True: _per_example(_context_relevant, cache),
}
