"""Synthesise a labelled dataset: sample documents, have a model write a question per passage, filter, keep N.

- Documents whose whitespace-collapsed text is shorter than ``min_doc_chars`` are skipped; the rest are shuffled
  with ``seed`` (``sample_order``): the same corpus and seed give the same documents in the same order.
- Each document shows the model one passage of at most ``max_doc_chars`` (``passage``): the whole text when it
  fits, else a window starting at a sentence start drawn with (``seed``, document id), ending at a sentence end
  (or a word end) inside the window.
- Documents are sent in that order, ``concurrency`` at a time, and their results are filtered in that order
  (``synth.filters``), so "keep the first of two near-duplicates" does not depend on which call returned first.
  It stops as soon as ``n`` pairs are kept (calls still in flight are cancelled), when every eligible document
  was tried, or after ``max_docs`` documents (default ``3 * n``).
- Each kept question's ``overlap`` is the share of its keywords found in the passage it was written from
  (``judging.grounded.grounding.coverage``). Questions written from one passage reuse its words, so a set with a high mean
  overlap is easy for a lexical retriever: ``EASY_OVERLAP`` (0.85) is where the command warns. For reference,
  SciFact's real queries share 0.48 of their keywords with their relevant abstracts, RepliQA's human-written
  questions 0.78 with their documents.
- A kept pair becomes a dataset record (``DatasetRecord``): ``id`` ``synth-`` + 12 hex digits of
  sha256(document id, question), ``query``, ``relevant_doc_ids`` = [the source document], ``answers`` =
  [the answer], ``tags`` = ["synth"].
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluations.judging.grounded.grounding import coverage
from evaluations.core.types import Document
from evaluations.synth.filters import NearDuplicates, check_pair
from evaluations.synth.generate import QuestionWriter, WriteFailed

__all__ = ["EASY_OVERLAP", "REASONS", "SynthOptions", "SynthResult", "passage", "record_id", "sample_order", "synthesize"]

#: why a document gave no question, in the order the checks run
REASONS = ("model_error", "malformed", "empty", "not_a_question", "not_standalone", "refusal", "unsupported",
           "answer_in_question", "vague", "duplicate")
MAX_EXAMPLES = 3  # dropped pairs shown per reason in the summary
EASY_OVERLAP = 0.85  # mean question/passage keyword overlap from which a set counts as easy for lexical retrieval
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?\s+")


@dataclass
class SynthOptions:
    n: int
    seed: int = 0
    max_doc_chars: int = 2000
    min_doc_chars: int = 200
    max_docs: int | None = None  # None: 3 * n
    concurrency: int = 1

    def doc_budget(self) -> int:
        return self.max_docs if self.max_docs is not None else 3 * self.n


@dataclass
class SynthResult:
    records: list[dict[str, Any]]
    eligible: int  # documents long enough to be sampled
    tried: int  # documents sent to the model
    generated: int  # pairs the model produced in the schema
    dropped: Counter = field(default_factory=Counter)
    examples: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    modes: Counter = field(default_factory=Counter)  # output mode -> pairs produced with it
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    overlaps: list[float] = field(default_factory=list)  # per kept question: its keywords found in its passage
    stopped: str = "enough"  # enough | corpus exhausted | max docs reached
    seconds: float = 0.0


def _flat(text: str) -> str:
    return " ".join(text.split())


def sample_order(documents: Sequence[Document], seed: int, min_chars: int) -> list[Document]:
    """The documents of at least ``min_chars`` characters (whitespace collapsed), shuffled with ``seed``."""
    eligible = [d for d in documents if len(_flat(d.text)) >= min_chars]
    return random.Random(seed).sample(eligible, len(eligible))


def passage(document: Document, max_chars: int, seed: int) -> str:
    """At most ``max_chars`` characters of the document (module docstring), whitespace collapsed."""
    text = _flat(document.text)
    if len(text) <= max_chars:
        return text
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text) if m.end() <= len(text) - max_chars // 2]
    start = random.Random(f"{seed}:{document.id}").choice(starts)
    window = text[start:start + max_chars]
    if start + max_chars >= len(text):
        return window
    ends = [m.end() for m in _SENTENCE_END.finditer(window + " ")]
    end = max((e for e in ends if e >= max_chars // 2), default=window.rfind(" "))
    return window[:end if end > 0 else max_chars].strip()


def record_id(doc_id: str, question: str) -> str:
    return "synth-" + hashlib.sha256(f"{doc_id}\n{question}".encode()).hexdigest()[:12]


def _record(doc_id: str, question: str, answer: str) -> dict[str, Any]:
    return {"id": record_id(doc_id, question), "query": question, "relevant_doc_ids": [doc_id], "answers": [answer],
            "tags": ["synth"]}


class _Tally:
    """Filters results in document order and keeps the counts."""

    def __init__(self, result: SynthResult) -> None:
        self.result = result
        self.duplicates = NearDuplicates()

    def drop(self, reason: str, doc_id: str, **detail: str) -> None:
        self.result.dropped[reason] += 1
        shown = self.result.examples.setdefault(reason, [])
        if len(shown) < MAX_EXAMPLES:
            shown.append({"doc_id": doc_id, **detail})

    def take(self, doc: Document, text: str, outcome: Any) -> bool:
        """Count one document's outcome (``Written`` or ``WriteFailed``); True when its pair was kept."""
        self.result.tried += 1
        if isinstance(outcome, WriteFailed):
            self.drop(outcome.reason, doc.id, error=outcome.error[:300])
            return False
        self.result.generated += 1
        self.result.modes[outcome.mode] += 1
        self.result.tokens["input"] += outcome.input_tokens
        self.result.tokens["output"] += outcome.output_tokens
        question, answer = outcome.pair.question.strip(), outcome.pair.answer.strip()
        reason = check_pair(question, answer, text)
        earlier = None if reason else self.duplicates.match(question)
        if earlier is not None:
            reason = "duplicate"
        if reason:
            self.drop(reason, doc.id, question=question, answer=answer, **({"like": earlier} if earlier else {}))
            return False
        record = _record(doc.id, question, answer)
        self.duplicates.add(record["id"], question)
        self.result.records.append(record)
        self.result.overlaps.append(coverage(question, [text]) or 0.0)
        return True


async def _outcome(writer: QuestionWriter, text: str) -> Any:
    try:
        return await writer.write(text)
    except WriteFailed as exc:
        return exc


async def synthesize(documents: Sequence[Document], writer: QuestionWriter, options: SynthOptions,
                     on_result: Callable[[SynthResult], None] | None = None) -> SynthResult:
    """Up to ``options.n`` records from ``documents`` (module docstring); ``on_result`` is called after each
    document's outcome is counted (progress)."""
    start = time.perf_counter()
    order = sample_order(documents, options.seed, options.min_doc_chars)
    budget = order[:options.doc_budget()]
    result = SynthResult(records=[], eligible=len(order), tried=0, generated=0)
    tally = _Tally(result)
    queue = iter(budget)
    pending: deque[tuple[Document, str, asyncio.Task]] = deque()

    def fill() -> None:
        while len(pending) < options.concurrency and len(result.records) < options.n:
            doc = next(queue, None)
            if doc is None:
                return
            text = passage(doc, options.max_doc_chars, options.seed)
            pending.append((doc, text, asyncio.ensure_future(_outcome(writer, text))))

    try:
        fill()
        while pending and len(result.records) < options.n:
            doc, text, task = pending.popleft()
            tally.take(doc, text, await task)
            if on_result is not None:
                on_result(result)
            fill()
    finally:
        for _, _, task in pending:
            task.cancel()
        await asyncio.gather(*(task for _, _, task in pending), return_exceptions=True)
    if len(result.records) < options.n:
        result.stopped = "corpus exhausted" if result.tried == len(order) else "max docs reached"
    result.seconds = time.perf_counter() - start
    return result
