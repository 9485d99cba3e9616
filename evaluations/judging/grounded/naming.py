"""The naming screen of ``answer_relevance``: does the embedded judge model find an answer to name in the reply?

The wording rules of ``answer_relevance`` reject the non-answers they were written from; a refusal, a restatement or
a vague sentence in another writer's words passes them. After the rules accept an answer to an answerable question,
the embedded judge model (Qwen2.5-Coder-1.5B-Instruct) is asked to *copy* the words of the reply that answer the
question, or to write NONE (``SYSTEM``, with eight worked examples, ``SHOTS``, written for the screen from no
labelled split). Nothing is generated: one forward pass reads the first token of the reply it would write,

    P(named) = 1 − Σ_{t ∈ NONE} softmax(l)_t,

with l the next-token logits and NONE the tokens of ``NONE_SPELLINGS`` (each one token: a first token that only
begins NONE, such as "N", also begins names). The answer is rejected (kind
``no_answer``) when P(named) < ``THRESHOLD``. The threshold was read off design splits only (``answers_writers``,
``design``, ``clapnq3``, ``heldout3`` of ``datasets/relevance``) at the least cost to their gold answers
(``benchmarks/answer_extraction.py``).

Many answers are read side by side in one batched pass (``YesNoScorer.next_logits``); each P(named) is kept in the
verdict store (``VerdictCache``) under (``naming``, the scorer's id, the prompt), so a re-run makes no model call.
The question is cut to ``QUESTION_CHARS`` characters, the reply to ``REPLY_CHARS`` (its answer is near its start)
and the prompt to the model's window. The screen always reads the embedded judge model, whichever model
``judge.model`` names for the other judges (as the rules always read the embedded MiniLM).

What it takes (``benchmarks/NOTES.md``, twenty-third session): refusals in wordings the rules were not written from
(66 of 68 on a held-out split other writers wrote); most of their restatements and vague sentences still pass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SYSTEM", "SHOTS", "NONE_SPELLINGS", "THRESHOLD", "QUESTION_CHARS", "REPLY_CHARS", "Naming", "prompt",
           "system_prompt"]

THRESHOLD = 0.15
QUESTION_CHARS = 600
REPLY_CHARS = 1200  # a reply's answer is near its start: the rest is not read (a long reply costs no more)
BATCH = 64  # prompts handed to one ``next_logits`` call (it decodes as many side by side as the context holds)
#: the spellings of NONE the model writes as one token (a first token "N" or "NON" also begins "Nikkei" or "Nonsuch":
#: a probe that counted them rejected every answer starting with N)
NONE_SPELLINGS = ("NONE", " NONE", "None", " None")
SYSTEM = ("You find the answer inside a reply. Given a question and a reply, copy the words of the reply that answer "
          "the question: a name, place, date, number, choice, yes or no, reason or way, even if it looks wrong or is "
          "said casually. Write NONE only when the reply gives no answer: it repeats or describes the question, says "
          "it does not know or cannot find it, is a title, or talks about something else.")
SHOTS = (  # (question, reply, what to write), written for the screen
    ("When did the museum open?", "It opened its doors in 1998, after years of delay.", "1998"),
    ("When did the museum open?", "You would like to know the year the museum first opened.", "NONE"),
    ("Who wrote the report?", "Probably Dana Li, if I remember right.", "Dana Li"),
    ("Who wrote the report?", "Sorry, I have no details about who authored it.", "NONE"),
    ("Why did the bridge close?", "Cracks were found in its main support, so it was shut.",
     "Cracks were found in its main support"),
    ("Why did the bridge close?", "The bridge is one of the busiest crossings in the region.", "NONE"),
    ("How do I reset my password?", "Open Settings, choose Security, then click Reset.",
     "Open Settings, choose Security, then click Reset"),
    ("How do I reset my password?", "Resetting Your Account Password", "NONE"),
)


def system_prompt() -> str:
    """The system prompt: ``SYSTEM`` and the worked examples."""
    return SYSTEM + "\n\nExamples:\n" + "\n".join(f"Question: {q}\nReply: {a}\nCopy: {e}\n" for q, a, e in SHOTS)


def prompt(question: str, answer: str) -> str:
    """The user turn of one answer."""
    return f"Question: {question[:QUESTION_CHARS]}\nReply: {answer[:REPLY_CHARS]}"


@dataclass
class Naming:
    """P(named) of (question, answer) pairs on the embedded judge model (module docstring). ``cache``: the verdict
    store (a ``VerdictCache``; None: none); ``data_dir``: where the embedded model's file is assembled (None: the
    default). The model loads at the first pair not in the store."""

    cache: Any = None
    data_dir: Path | str | None = None
    threshold: float = THRESHOLD
    _scorer: Any = field(default=None, init=False, repr=False)
    _none: list[int] = field(default_factory=list, init=False, repr=False)

    @property
    def scorer(self) -> Any:
        if self._scorer is None:
            from evaluations.judging.checkers.yesno import load_scorer

            scorer = load_scorer(system_prompt(), data_dir=Path(self.data_dir) if self.data_dir else None)
            self._none = sorted({ids[0] for ids in map(scorer.tokens, NONE_SPELLINGS) if len(ids) == 1})
            self._scorer = scorer
        return self._scorer

    def key(self, question: str, answer: str) -> str:
        scorer = self.scorer  # loads the NONE tokens too
        return hashlib.sha256(json.dumps(["naming", scorer.id, self._none, prompt(question, answer)]).encode()
                              ).hexdigest()

    def probabilities(self, pairs: Sequence[tuple[str, str]],
                      progress: Callable[[int], None] | None = None) -> list[float]:
        """P(named) of each (question, answer): the verdict store's where it has one, the rest read side by side."""
        from evaluations.judging.checkers.yesno import cached_batch

        def ask(missing: list[int]) -> list[tuple[float, dict[str, Any]]]:
            # the prompt as the tail: the system prompt and its worked examples are the prefix read once and kept
            # (the next case's answer reuses it); cut from its end (the reply's) when it overflows the window
            logits = self.scorer.next_logits([("", self.scorer.fit_tail(prompt(*pairs[i]))) for i in missing])
            return [(_named(row, self._none), {"judge": "answer_relevance_naming"}) for row in logits]

        keys = [self.key(q, a) for q, a in pairs]
        return [float(p) for p, _ in cached_batch(keys, ask, self.cache, batch=BATCH, progress=progress)]

    def names(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[bool, float]]:
        """(P(named) ≥ threshold, P(named)) of each pair."""
        return [(p >= self.threshold, p) for p in self.probabilities(pairs)]


def _named(logits: np.ndarray, none: list[int]) -> float:
    p = np.exp(logits - logits.max())
    return float(1 - p[none].sum() / p.sum())
