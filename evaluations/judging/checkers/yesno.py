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
``STATES`` passages (sequence 0's KV cells: ``models.llamacpp.keep_sequence`` / ``restore_sequence``), so several
questions about one text (claims of an answer about one sentence window; a repeated passage) evaluate it once even
when other cases' calls come between.
The judges use the same system prompt (``PASSAGE_SYSTEM``) and put their instruction in the tail, so any text they
both ask about is evaluated once. One ``Llama`` per (file, window) is loaded per process and shared by every scorer
on it; calls are serialised by its lock. ``cached_probability`` keys a verdict by (scorer id, shared, tail) in the
one cache store (``VerdictCache``), so a re-run makes no model call.

Several questions at once (``probabilities``, ``cached_probabilities``: the passages of a retrieved set) are read
side by side in one batched pass: the prompts' common token prefix (the system prompt) once in sequence 0, then each
prompt's own tokens in a sequence of its own that shares the prefix's cells (``llama_memory_seq_cp``), all in one
``llama_decode`` with logits at each prompt's last token, as far as ``SEQUENCES`` and the window hold (a decode
may hold the whole window: llama.cpp reads it in physical batches of 512); the extra sequences are removed after.
The context is made with ``SEQUENCES`` sequences in one KV cache (``models.llamacpp.load_llama``). Each prompt is
the tokens it has when asked alone and attends only to its own sequence, so its P(yes) is the same up to the rounding
of batched arithmetic: over 100 HotpotQA passages the logits differed by at most 0.25 (a P(yes) of 0.5 by 0.06; the
first prompt of a decode is exact). Each llama.cpp decode has a fixed cost, and prompt reading on 2
cores runs at ~130 tokens a second whatever the batch: a 10-passage set read side by side took 0.84 s a passage
against 1.04 s one by one.
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
from evaluations.models.llamacpp import (NO_GGML, KeptSequence, LayerTap, keep_sequence, load_llama, n_threads,
                                         require_llama_cpp, restore_sequence)
from evaluations.models.meter import count_calls

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["N_CTX", "MIN_PASSAGE_TOKENS", "InputTooLong", "PASSAGE_SYSTEM", "passage_shared", "char_budget",
           "YesNoScorer", "load_scorer", "for_system", "cached_probability", "cached_probabilities", "cached_batch",
           "cached_conversation", "fan_out", "is_served"]

N_CTX = 2048  # the window of the reference-free judges' model (system + passage + claim/question)
MIN_PASSAGE_TOKENS = 32  # the least of the window a passage must have beside the question and claim to be judged
SEQUENCES = 16  # sequences of the judge model's context: a shared prefix and up to 15 prompts read side by side
STATES = 16  # passages whose evaluated prefix state is kept per model (the KV cells of ~400 tokens: ~11 MB)
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
    _llama_cpp: Any  # the llama_cpp module (its public low-level API)
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0
    states: OrderedDict[tuple[int, ...], KeptSequence] = field(default_factory=OrderedDict)
    tap: LayerTap | None = None  # reads inner layers' outputs (``side_by_side``'s ``layers``)

    def evaluate(self, prefix: list[int], rest: list[int]) -> None:
        """Evaluate prefix + rest, reusing the KV cache in place or a kept state of ``prefix``."""
        llm, prompt = self.llm, prefix + rest
        keep = self._reuse(prefix, prompt)
        # a prefix not read yet is read with the rest in one batch (each llama.cpp decode has a fixed cost: two took
        # 0.93 s a HotpotQA check, one 0.75 s); the state kept then holds the rest too, and a later question about the
        # same prefix cuts it back (``n_tokens``: ``Llama.eval`` drops the cache past it)
        unread = keep < len(prefix)
        keep = min(keep, len(prompt) - 1)  # at least one token is evaluated, for its logits
        llm.n_tokens = keep
        llm.eval(prompt[keep:])
        if unread:
            self._keep(prefix)
        self.calls += 1
        count_calls()  # the forward pass of this case's judge (``models.meter``)

    def prime(self, prefix: list[int]) -> None:
        """Leave exactly ``prefix`` in the KV cache of sequence 0 (``Llama.n_tokens`` at its end), reusing the
        cache in place or a kept state, and keep its state when it had to be read."""
        llm = self.llm
        keep = self._reuse(prefix, prefix)
        llm.n_tokens = keep
        if keep < len(prefix):
            llm.eval(prefix[keep:])
            self._keep(prefix)
        else:  # a later token of the cache is dropped as ``Llama.eval`` would drop it
            self._llama_cpp.llama_memory_seq_rm(self._memory(), -1, len(prefix), -1)

    def _reuse(self, prefix: list[int], prompt: list[int]) -> int:
        """How many tokens of ``prompt`` the KV cache holds already: its common prefix with the cache, or all of
        ``prefix`` when a kept state of it is loaded."""
        llm, keep = self.llm, 0
        for a, b in zip(llm.input_ids[: llm.n_tokens], prompt):
            if a != b:
                break
            keep += 1
        key = tuple(prefix)
        if keep < len(prefix) and key in self.states:
            if not restore_sequence(self.llm, self.states[key]):
                del self.states[key]
                return 0  # nothing is held any more: the prompt is read from its start
            self.states.move_to_end(key)
            keep = len(prefix)
        return keep

    def _keep(self, prefix: list[int]) -> None:
        """Keep the state just read as ``prefix``'s (the last ``STATES``): sequence 0's KV cells and their tokens."""
        self.states[tuple(prefix)] = keep_sequence(self.llm)
        while len(self.states) > STATES:
            self.states.popitem(last=False)

    def side_by_side(self, prefix: list[int], rests: Sequence[list[int]], hidden: bool = False,
                     layers: tuple[int, ...] = ()) -> list[Any]:
        """The next-token logits after prefix + each of ``rests``: the prefix is read once (``prime``), then the
        rests side by side, each in a sequence of its own that shares the prefix's cells, as many in one decode as
        the batch, the sequences and the window hold (``SEQUENCES``). The same logits as reading each prompt alone,
        in fewer decodes (each has a fixed cost). Each prompt fits the window, so each rest fits a decode.
        ``hidden``: (logits, the model's last hidden state at that position) of each, read in the same decodes
        (llama.cpp's embeddings output, on for these decodes only); with ``layers`` too, (logits, hidden state,
        {layer: that layer's output row at that position}) (``LayerTap``)."""
        api, llm = self._llama_cpp, self.llm
        if layers and not hidden:
            raise ValueError("layers' outputs are read with the hidden state (hidden=True)")
        if layers and (self.tap is None or not self.tap.available):
            raise JudgeFailed(f"{NO_GGML}: the judge model's inner layers cannot be read")
        self.prime(prefix)
        out: list[Any] = [None] * len(rests)
        if hidden:
            api.llama_set_embeddings(llm.ctx, True)
        try:
            self._decode_groups(prefix, rests, out, hidden, layers)
        finally:
            if hidden:
                api.llama_set_embeddings(llm.ctx, False)
        return [logits for logits in out if logits is not None]

    def _decode_groups(self, prefix: list[int], rests: Sequence[list[int]], out: list[Any], hidden: bool,
                       layers: tuple[int, ...] = ()) -> None:
        api, llm = self._llama_cpp, self.llm
        for group in self._groups(len(prefix), rests):
            memory, total = self._memory(), sum(len(rests[i]) for i in group)
            batch = api.llama_batch_init(total, 0, 1)
            try:
                at, last = 0, []
                for seq, i in enumerate(group, 1):
                    api.llama_memory_seq_cp(memory, 0, seq, 0, len(prefix))
                    for pos, token in enumerate(rests[i]):
                        batch.token[at], batch.pos[at], batch.n_seq_id[at] = token, len(prefix) + pos, 1
                        # with the embeddings output on, llama.cpp outputs every token (and warns of each batch
                        # that does not ask it to): every token is marked so
                        batch.seq_id[at][0], batch.logits[at] = seq, hidden or pos == len(rests[i]) - 1
                        at += 1
                    last.append(at - 1)
                batch.n_tokens = at
                if layers:
                    self.tap.arm(layers)
                try:
                    code = api.llama_decode(llm.ctx, batch)
                finally:
                    rows = self.tap.disarm() if layers else {}
                if code != 0:
                    raise JudgeFailed(f"llama.cpp could not read {len(group)} prompts side by side (llama_decode "
                                      f"returned {code})")
                for i, index in zip(group, last):
                    out[i] = (self._logits(index), self._hidden(index)) if hidden else self._logits(index)
                    if layers:  # the tapped rows are the batch's tokens in order
                        out[i] = (*out[i], {layer: rows[layer][index].astype(np.float64) for layer in layers})
            finally:
                for seq in range(1, len(group) + 1):
                    api.llama_memory_seq_rm(memory, seq, -1, -1)
                api.llama_batch_free(batch)
            self.calls += 1
            count_calls(len(group))  # a run's judge cost counts questions read, batched or not (``models.meter``)

    def _groups(self, shared: int, rests: Sequence[list[int]]) -> list[list[int]]:
        """Indices of ``rests`` in runs read by one decode: at most the batch's tokens, ``SEQUENCES`` - 1 of them,
        and the window's cells beside the shared prefix."""
        llm, groups, size = self.llm, [], 0
        cells = min(llm.n_batch, llm.n_ctx() - shared)
        for i, rest in enumerate(rests):
            if groups and len(groups[-1]) < SEQUENCES - 1 and size + len(rest) <= cells:
                groups[-1].append(i)
                size += len(rest)
            else:
                groups.append([i])
                size = len(rest)
        return groups

    def _memory(self) -> Any:
        return self._llama_cpp.llama_get_memory(self.llm.ctx)

    def _logits(self, index: int) -> np.ndarray:
        ptr = self._llama_cpp.llama_get_logits_ith(self.llm.ctx, index)
        return np.ctypeslib.as_array(ptr, shape=(self.llm.n_vocab(),)).astype(np.float64)

    def _hidden(self, index: int) -> np.ndarray:
        ptr = self._llama_cpp.llama_get_embeddings_ith(self.llm.ctx, index)
        return np.ctypeslib.as_array(ptr, shape=(self.llm.n_embd(),)).astype(np.float64)


_models: dict[tuple[str, int], _Model] = {}
_models_lock = threading.Lock()


def _model(path: Path, n_ctx: int) -> _Model:
    key = (str(path), n_ctx)
    with _models_lock:
        if key not in _models:
            tap = LayerTap()
            llm = load_llama(path, n_ctx=n_ctx, n_threads=n_threads(), n_batch=n_ctx, sequences=SEQUENCES, tap=tap)
            tap.width = llm.n_embd()
            _models[key] = _Model(llm, require_llama_cpp(), tap=tap)
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

    def fit_tail(self, tail: str) -> str:
        """``tail`` cut (at a token boundary, from the end) so that it can be asked with no shared text: it leaves
        ``MIN_PASSAGE_TOKENS`` of the window, as ``probability`` requires."""
        return self._cut(tail, self.text_tokens(tail), self.room("") - MIN_PASSAGE_TOKENS)

    def _cut(self, shared: str, tokens: list[int], room: int) -> str:
        if len(tokens) <= room:
            return shared
        return self.model.llm.detokenize(tokens[: max(room - 2, 0)]).decode("utf-8", "ignore") + " ..."

    def probability(self, shared: str, tail: str) -> tuple[float, float]:
        """(P(yes), yes/no probability mass); ``shared`` is cut to fit the window (``fit``). ``InputTooLong`` when
        ``tail`` (the question and the claim) leaves less than ``MIN_PASSAGE_TOKENS`` of the window for the passage."""
        prompt, split = self._prompt(shared, tail)  # the KV state kept is the shared part's (``_Model.evaluate``)
        model = self.model
        with model.lock:
            model.evaluate(prompt[:split], prompt[split:])
            logits = model._logits(-1)
        return self._yes(logits)

    def yes(self, logits: np.ndarray) -> float:
        """P(yes) of next-token ``logits`` (of ``next_logits``), as ``probability`` reads it."""
        return self._yes(logits)[0]

    def probabilities(self, asks: Sequence[tuple[str, str]]) -> list[tuple[float, float]]:
        """``probability(shared, tail)`` of each (shared, tail) of ``asks``, read side by side: the prompts' common
        token prefix (the system prompt at least) once, then what differs in each, as many in one decode as fit
        (``_Model.side_by_side``). Each prompt is the tokens ``probability`` reads, so the P(yes) are its."""
        return [self._yes(row) for row in self.next_logits(asks)]

    def next_logits(self, asks: Sequence[tuple[str, str]], hidden: bool = False,
                    layers: tuple[int, ...] = ()) -> list[Any]:
        """The next-token logits after each (shared, tail) of ``asks`` (the prompts ``probability`` reads), read
        side by side: the prompts' common token prefix once (at most the system prompt and the shared text, whose
        state is kept for the next call: a lone prompt's own tail is not), then what differs in each. ``hidden``:
        (logits, last hidden state) of each; ``layers`` (with ``hidden``): and those layers' outputs there
        (``_Model.side_by_side``)."""
        split = [self._prompt(shared, tail) for shared, tail in asks]
        if not split:
            return []
        prompts = [p for p, _ in split]
        # each prompt keeps a token of its own, for its logits
        common = min(min(len(p) - 1, shared) for p, shared in split)
        for prompt in prompts[1:]:
            common = next((i for i, (a, b) in enumerate(zip(prompts[0][:common], prompt)) if a != b), common)
        with self.model.lock:
            return list(self.model.side_by_side(prompts[0][:common], [p[common:] for p in prompts], hidden,
                                                layers))

    def _prompt(self, shared: str, tail: str) -> tuple[list[int], int]:
        """The tokens of one question (``probability``) and where its shared part ends; ``InputTooLong`` when
        ``tail`` leaves too little room."""
        tail_tokens = self.text_tokens(tail)
        if (room := self._room(len(tail_tokens))) < MIN_PASSAGE_TOKENS:
            raise InputTooLong(
                f"the question and the answer or claim are {len(tail_tokens)} tokens: with the prompt they "
                f"leave {max(room, 0)} of the judge model's {self.n_ctx}-token window for the passage (at least "
                f"{MIN_PASSAGE_TOKENS} needed); shorten the question or the answer")
        shared_tokens = self.text_tokens(shared)
        if len(shared_tokens) > room:
            shared_tokens = self.text_tokens(self._cut(shared, shared_tokens, room))
        prefix = self.header + shared_tokens
        return prefix + tail_tokens + self.end, len(prefix)

    def _yes(self, logits: np.ndarray) -> tuple[float, float]:
        """(P(yes), yes/no probability mass) of next-token ``logits`` (module docstring)."""
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


def _key(parts: list[str]) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _cached(parts: list[str], ask: Callable[[], tuple[float, float]],
            cache: VerdictCache | None) -> tuple[float, bool]:
    """(P(yes), whether the model was called): the verdict store's entry keyed by ``parts`` if any, else ``ask()``
    (P(yes), mass), stored."""
    key = _key(parts)
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


def cached_probabilities(scorer: Any, asks: Sequence[tuple[str, str]],
                         cache: VerdictCache | None) -> list[tuple[float, bool]]:
    """``cached_probability`` of each (shared, tail) of ``asks``; the ones not in the verdict store are asked
    together (``YesNoScorer.probabilities``: side by side, in as few decodes as fit), or one by one through a scorer
    without that method (a served checker, a cache-only stand-in)."""
    def ask(missing: list[int]) -> list[tuple[float, dict[str, Any]]]:
        together = getattr(scorer, "probabilities", None)
        asked = (together([asks[i] for i in missing]) if together is not None
                 else [scorer.probability(*asks[i]) for i in missing])
        return [(p, {"yes_no_mass": mass}) for p, mass in asked]

    return cached_batch([_key(["yesno", scorer.id, shared, tail]) for shared, tail in asks], ask, cache)


def cached_batch(keys: Sequence[str], ask: Callable[[list[int]], Sequence[tuple[float, dict[str, Any]]]],
                 cache: VerdictCache | None, *, batch: int | None = None,
                 progress: Callable[[int], None] | None = None) -> list[tuple[float, bool]]:
    """(value, whether it was asked) for each of ``keys``: the verdict store's entry if any; the indices without one
    asked together, ``batch`` at a time (None: all at once), by ``ask(indices)`` -> (value, what to store beside it)
    each, and stored after each batch (an interrupted pass keeps what it read); ``progress`` called with each
    batch's size."""
    out: list[tuple[float, bool] | None] = [None] * len(keys)
    if cache is not None:
        for i, key in enumerate(keys):
            hit = cache.get(key)
            if hit is not None:
                out[i] = (hit, False)
    missing = [i for i, got in enumerate(out) if got is None]
    step = batch or max(len(missing), 1)
    for start in range(0, len(missing), step):
        chunk = missing[start:start + step]
        for i, (value, info) in zip(chunk, ask(chunk)):
            out[i] = (value, True)
            if cache is not None:
                cache.put(keys[i], value, info)
        if progress is not None:
            progress(len(chunk))
    return [got for got in out if got is not None]


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
