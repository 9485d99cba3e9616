"""P(yes) for any yes/no question to an embedded chat GGUF model: one forward pass, no generation.

The reference-free judges (faithfulness, context relevance) ask the embedded Qwen model short yes/no questions
about a passage. The prompt, in the model's chat format, is

    <|im_start|>system\\n{system}<|im_end|>\\n<|im_start|>user\\n{shared}{tail}<|im_end|>\\n<|im_start|>assistant\\n

and, with l the logits of the next token, Y the single-token spellings of "yes" and N those of "no"
(``judging.correctness.embedded.YES`` / ``NO``):

    P(yes) = Σ_{t∈Y} e^{l_t} / Σ_{t∈Y∪N} e^{l_t},   mass = Σ_{t∈Y∪N} softmax(l)_t.

``shared`` is the part several questions have in common (a passage); ``tail`` is what differs (a claim, a
question). The KV cache of the longest common token prefix with the previous call is kept (``Llama.n_tokens`` is
cut back to it; ``Llama.eval`` drops the rest), and the state after system + shared (+ the first tail asked, which
a later question cuts back; a new prefix and its tail are one decode) is kept for the last
``STATES`` passages (``Llama.save_state`` / ``load_state``), so several questions about one text (claims of an
answer about one sentence window; a repeated passage) evaluate it once even when other cases' calls come between.
The judges use the same system prompt (``PASSAGE_SYSTEM``) and put their instruction in the tail, so any text they
both ask about is evaluated once. One ``Llama`` per (file, window) is loaded per process and shared by every scorer on it; calls are
serialised by its lock. ``cached_probability`` keys a verdict by (scorer id, shared, tail) in the one cache store
(``VerdictCache``), so a re-run makes no model call.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from evaluations.core.errors import JudgeFailed
from evaluations.judging.correctness.embedded import NO, YES, VerdictCache, embedded_judge_path
from evaluations.models.llamacpp import load_llama, n_threads, require_llama_cpp
from evaluations.models.meter import count_calls

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["N_CTX", "MIN_PASSAGE_TOKENS", "InputTooLong", "PASSAGE_SYSTEM", "passage_shared", "char_budget",
           "YesNoScorer", "load_scorer", "for_system", "cached_probability", "cached_conversation", "fan_out",
           "is_served"]

N_CTX = 2048  # the window of the reference-free judges' model (system + passage + claim/question)
MIN_PASSAGE_TOKENS = 32  # the least of the window a passage must have beside the question and claim to be judged
STATES = 16  # passages whose evaluated prefix state is kept per model (a state of ~400 tokens is ~11 MB)
PASSAGE_SYSTEM = (
    "You read a passage, then answer one yes/no question about it. "
    "Use only what the passage says, not what you know. Answer yes or no."
)
def passage_shared(text: str) -> str:
    """The shared part of every question the reference-free judges ask about a passage (or a window of one)."""
    return f"Passage:\n{text}\n\n"


def char_budget(scorer: Any, text: str, tail: str) -> int | None:
    """The characters a part of ``text`` may have to be read whole beside ``tail``: None when all of ``text`` fits
    the scorer's window (``fit`` keeps it), else 90% of the characters of it that ``fit`` keeps (the window is in
    tokens, the budget in characters: the margin is for denser parts), at least 200. None too for a scorer
    without ``fit`` (a cache-only stand-in): the text is then read as it always was."""
    fit = getattr(scorer, "fit", None)
    if fit is None:
        return None
    shared = passage_shared(text)
    held = fit(shared, tail)
    if held == shared:
        return None
    return max(int(0.9 * (len(held) - len(passage_shared("")))), 200)


class InputTooLong(JudgeFailed):
    """The question and claim of one check do not leave room for the passage in the embedded model's window."""


_HEADER = "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n"
_END = "<|im_end|>\n<|im_start|>assistant\n"


@dataclass
class _Model:
    """One loaded Llama, shared by every scorer on the same file and window."""

    llm: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0
    states: OrderedDict[tuple[int, ...], Any] = field(default_factory=OrderedDict)

    def evaluate(self, prefix: list[int], rest: list[int]) -> None:
        """Evaluate prefix + rest, reusing the KV cache in place or a kept state of ``prefix``."""
        llm, prompt = self.llm, prefix + rest
        keep = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], prompt):
            if a != b:
                break
            keep += 1
        key = tuple(prefix)
        if keep < len(prefix) and key in self.states:
            llm.load_state(self.states[key])
            self.states.move_to_end(key)
            keep = len(prefix)
        # a prefix not read yet is read with the rest in one batch (each llama.cpp decode has a fixed cost: two took
        # 0.93 s a HotpotQA check, one 0.75 s); the state kept then holds the rest too, and a later question about the
        # same prefix cuts it back (``n_tokens``: ``Llama.eval`` drops the cache past it)
        unread = keep < len(prefix)
        keep = min(keep, len(prompt) - 1)  # at least one token is evaluated, for its logits
        llm.n_tokens = keep
        llm.eval(prompt[keep:])
        if unread:
            self.states[key] = llm.save_state()
            while len(self.states) > STATES:
                self.states.popitem(last=False)
        self.calls += 1
        count_calls()  # the forward pass of this case's judge (``models.meter``)


_models: dict[tuple[str, int], _Model] = {}
_models_lock = threading.Lock()


def _model(path: Path, n_ctx: int) -> _Model:
    key = (str(path), n_ctx)
    with _models_lock:
        if key not in _models:
            _models[key] = _Model(load_llama(path, n_ctx=n_ctx, n_threads=n_threads(), n_batch=512))
        return _models[key]


class YesNoScorer:
    """P(yes) of (system prompt, shared text, tail) from the logits of an embedded chat model."""

    def __init__(self, path: Path, system: str, *, n_ctx: int = N_CTX):
        self._llama_cpp = require_llama_cpp()
        self.path = Path(path)
        self.n_ctx = n_ctx
        self.model = _model(self.path, n_ctx)
        self.system = system.strip()
        self.header = self.tokens(_HEADER.format(system=self.system))
        self.end = self.tokens(_END)
        self.yes_ids = self._single(YES)
        self.no_ids = self._single(NO)
        llm = self.model.llm
        model_id = f"{llm.metadata.get('general.name', '')}:{self.path.stat().st_size}"
        self.id = hashlib.sha256(f"{model_id}\0{self.system}\0{_HEADER}{_END}".encode()).hexdigest()[:16]

    @property
    def calls(self) -> int:
        """Forward passes made on this scorer's model in this process (all scorers on the model together)."""
        return self.model.calls

    def tokens(self, text: str) -> list[int]:
        """The model's tokens of ``text``; chat-format markers written by a user are defused."""
        return list(self.model.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def text_tokens(self, text: str) -> list[int]:
        return self.tokens(text.replace("<|", "< |"))

    def _single(self, words: tuple[str, ...]) -> list[int]:
        ids = [self.tokens(w) for w in words]
        return sorted({t[0] for t in ids if len(t) == 1})

    def room(self, tail: str) -> int:
        """How many tokens of shared text fit beside ``tail`` in the window."""
        return self._room(len(self.text_tokens(tail)))

    def _room(self, tail_tokens: int) -> int:
        return self.n_ctx - 1 - len(self.header) - len(self.end) - tail_tokens

    def fit(self, shared: str, tail: str) -> str:
        """``shared`` cut (at a token boundary, from the end) so that the prompt fits the window."""
        return self._cut(shared, self.text_tokens(shared), self.room(tail))

    def _cut(self, shared: str, tokens: list[int], room: int) -> str:
        if len(tokens) <= room:
            return shared
        return self.model.llm.detokenize(tokens[: max(room - 2, 0)]).decode("utf-8", "ignore") + " ..."

    def probability(self, shared: str, tail: str) -> tuple[float, float]:
        """(P(yes), yes/no probability mass); ``shared`` is cut to fit the window (``fit``). ``InputTooLong`` when
        ``tail`` (the question and the claim) leaves less than ``MIN_PASSAGE_TOKENS`` of the window for the passage."""
        tail_tokens = self.text_tokens(tail)  # each text tokenized once (the cut passage again, as it is read)
        if (room := self._room(len(tail_tokens))) < MIN_PASSAGE_TOKENS:
            raise InputTooLong(
                f"the question and the answer or claim are {len(tail_tokens)} tokens: with the prompt they "
                f"leave {max(room, 0)} of the judge model's {self.n_ctx}-token window for the passage (at least "
                f"{MIN_PASSAGE_TOKENS} needed); shorten the question or the answer")
        shared_tokens = self.text_tokens(shared)
        if len(shared_tokens) > room:
            shared_tokens = self.text_tokens(self._cut(shared, shared_tokens, room))
        prefix = self.header + shared_tokens
        model = self.model
        with model.lock:
            llm = model.llm
            model.evaluate(prefix, tail_tokens + self.end)
            ptr = self._llama_cpp.llama_get_logits_ith(llm.ctx, -1)
            logits = np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)
        top = logits.max()
        log_z = top + np.log(np.exp(logits - top).sum())
        yes = np.exp(logits[self.yes_ids] - top).sum()
        no = np.exp(logits[self.no_ids] - top).sum()
        return float(yes / (yes + no)), float(np.exp(np.log(yes + no) + top - log_z))


_scorers: dict[tuple[str, str, int], YesNoScorer] = {}
_scorers_lock = threading.Lock()


def load_scorer(system: str, name: str | None = None, *, n_ctx: int = N_CTX, data_dir: Path | None = None) -> YesNoScorer:
    """The scorer of ``system`` on embedded model ``name`` (default: the embedded judge's), once per process."""
    path = embedded_judge_path(name, data_dir) if name else embedded_judge_path(data_dir=data_dir)
    return _scorer(Path(path), system, n_ctx)


def _scorer(path: Path, system: str, n_ctx: int) -> YesNoScorer:
    """The one scorer of (model file, system prompt, window) in this process."""
    key = (str(path), system, n_ctx)
    with _scorers_lock:
        if key not in _scorers:
            _scorers[key] = YesNoScorer(path, system, n_ctx=n_ctx)
        return _scorers[key]


def for_system(scorer: Any, system: str) -> Any:
    """The scorer of the same embedded model file and window as ``scorer`` under ``system`` (once per process);
    ``scorer`` itself when it is no ``YesNoScorer`` (a served checker asks under its own rubric) or already asks
    under ``system``."""
    if not isinstance(scorer, YesNoScorer) or scorer.system == system.strip():
        return scorer
    return _scorer(scorer.path, system, scorer.n_ctx)


def fan_out(scorer: Any, ask: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[ask(item) for item in items]``, asked at once on up to ``scorer.parallel`` threads when the scorer takes
    questions in parallel (a served checker: the run's concurrency), one after another otherwise (the embedded
    model reads one question at a time). The results keep ``items``' order; the first error is raised."""
    workers = min(getattr(scorer, "parallel", 1), len(items))
    if workers <= 1:
        return [ask(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge-question") as pool:
        return list(pool.map(ask, items))


def _cached(parts: list[str], ask: Callable[[], tuple[float, float]],
            cache: VerdictCache | None) -> tuple[float, bool]:
    """(P(yes), whether the model was called): the verdict store's entry keyed by ``parts`` if any, else ``ask()``
    (P(yes), mass), stored."""
    key = hashlib.sha256(json.dumps(parts).encode()).hexdigest()
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit, False
    p, mass = ask()
    if cache is not None:
        cache.put(key, p, {"yes_no_mass": mass})
    return p, True


def cached_probability(scorer: YesNoScorer, shared: str, tail: str, cache: VerdictCache | None) -> tuple[float, bool]:
    """(P(yes), whether the model was called): the verdict store's entry for (scorer, shared, tail) if any."""
    return _cached(["yesno", scorer.id, shared, tail], lambda: scorer.probability(shared, tail), cache)


def cached_conversation(scorer: Any, system: str, prompt: str, question: str,
                        cache: VerdictCache | None) -> tuple[float, bool]:
    """(P(yes), whether the model was called) of ``question`` continuing the conversation (``system``, ``prompt``)
    of a served checker (``ServedChecker.conversation``): the verdict store's entry for them if any."""
    return _cached(["conversation", scorer.id, system, prompt, question],
                   lambda: scorer.conversation(system, prompt, question), cache)


def is_served(scorer: Any) -> bool:
    """Whether ``scorer`` asks a served model (it continues conversations: ``ServedChecker.conversation``). Read
    on its class, so a proxy that loads the embedded model at first use is not made to load it."""
    return callable(getattr(type(scorer), "conversation", None))
