"""The reference-free judges as batch judges for ``judge-agreement`` and ``judge-check``: ``faithfulness`` (alias
``groundedness``) and ``context_relevance``, over labelled rows that carry their passages (``LabelledAnswer.passages``,
``judging.labels.passage_rows``). Their label is the property they measure (the answer is supported by the passages / a
passage is needed to answer the question), not correctness, and their controls are ``controls.PASSAGE_CONTROLS``.

A registry beside ``agreement.JUDGES`` (``run_judges(batch=...)``) rather than in it: these judges' fitting code
uses ``judging.validation.heldout``, which reads ``judging.validation.agreement``.

* ``faithfulness``: 1 when every claim of the answer is supported (``judging.grounded.faithfulness``), NaN (not judged) when
  the judge does not apply (a refusal, an empty answer, no passage);
* ``context_relevance``: 1 when a passage of the row is judged needed to answer (``judging.grounded.context_relevance``).

Each factory takes ``cache`` and ``config``: with ``judge.model`` on a served model (``--judge ollama:NAME`` /
``openai:NAME``) the judges ask that server, as a run does (``served_checker.served_tools``: the server's claim
decomposition and its yes/no), so a served judge can be checked against the same labels; else the embedded model
(``judge.model.name``, under the config's ``storage.data_dir``: ``served_checker.judge_tools``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from evaluations.judging.validation.agreement import BatchJudge, Progress
from evaluations.judging.labels.rows import LabelledAnswer

if TYPE_CHECKING:
    from evaluations.core.config import Config

__all__ = ["NOT_JUDGED", "PASSAGE_JUDGES"]


def _passages_of(e: LabelledAnswer) -> list[Any]:
    from evaluations.judging.basics.passages import Passage

    return [Passage(id=str(rank), text=text) for rank, text in enumerate(e.passages, 1)]


def _faithful(e: LabelledAnswer, cache: Any, tools: tuple[Any, Any]) -> float:
    from evaluations.judging.grounded.faithfulness import judge_faithfulness

    scorer, decompose = tools
    result = judge_faithfulness(e.question, e.answer, _passages_of(e), cache=cache, scorer=scorer,
                                decompose=decompose)
    return float(all(c.supported for c in result.claims)) if result.applicable else float("nan")


def _context_relevant(e: LabelledAnswer, cache: Any, tools: tuple[Any, Any]) -> float:
    from evaluations.judging.grounded.context_relevance import judge_context_relevance

    result = judge_context_relevance(e.question, _passages_of(e), cache=cache, scorer=tools[0])
    return float(any(c.relevant for c in result.chunks)) if result.applicable else float("nan")


def _per_example(rule: Callable[[LabelledAnswer, Any, tuple[Any, Any]], float], judge: str) -> Callable[..., BatchJudge]:
    """The factory of a batch judge of a per-example rule that may not apply (NaN), one progress step per example:
    ``factory(cache=True, config=None)``; the served checker (if any) is made when the factory is called, so an
    unreachable server is an error before any example. Verdicts are kept in the verdict store of the config's
    ``judge_cache_dir`` (no config: the default one) unless ``cache`` is False."""

    def factory(cache: bool = True, config: Config | None = None) -> BatchJudge:
        from evaluations.judging.correctness.embedded import verdict_cache
        from evaluations.judging.checkers.served_checker import judge_tools

        tools = judge_tools(config, judge) if config is not None else (None, None)
        store = verdict_cache(cache, config.judge_cache_dir() if config is not None else None)

        def run(examples: Sequence[LabelledAnswer], progress: Progress | None = None) -> np.ndarray:
            values = []
            for e in examples:
                values.append(rule(e, store, tools))
                if progress is not None:
                    progress(1)
            return np.array(values, dtype=float)

        return run

    return factory


#: judge name -> factory(cache=True, config=None) -> batch judge
PASSAGE_JUDGES: dict[str, Callable[..., BatchJudge]] = {
    "faithfulness": _per_example(_faithful, "faithfulness"),
    "groundedness": _per_example(_faithful, "faithfulness"),  # faithfulness's other name
    "context_relevance": _per_example(_context_relevant, "context_relevance"),
}
_FAITHFULNESS_NOT_JUDGED = "not applicable: an empty, refused or echoed answer, no claim or no passage"
#: judge name -> why it leaves a row unjudged (its NaN verdict), said under judge-agreement's table
NOT_JUDGED: dict[str, str] = {
    "faithfulness": _FAITHFULNESS_NOT_JUDGED,
    "groundedness": _FAITHFULNESS_NOT_JUDGED,
    "context_relevance": "not applicable: no passage",
}
