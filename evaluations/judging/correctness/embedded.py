"""The embedded LLM judge: Qwen2.5-Coder-1.5B-Instruct (GGUF) in-process, P(correct) from yes/no logits.

One verdict is one forward pass, no generation. The prompt, in the model's chat format, is

    prefix = <|im_start|>system\\n{rubric}<|im_end|>\\n<|im_start|>user\\n
    suffix = Question: q\\nReference answers: r1 | r2\\nCandidate answer: a\\nCorrect (yes/no)?<|im_end|>\\n
             <|im_start|>assistant\\n

The prefix is tokenised and evaluated once; its KV cache is kept in place (or, asked so, its cells kept aside and
restored: ``models.llamacpp.keep_sequence``), so a verdict costs only the suffix's tokens. With
l the logits of the next token after the suffix, Y the single-token spellings of "yes" ("yes", "Yes",
" yes", " Yes", "YES") and N those of "no":

    P(correct) = Σ_{t∈Y} e^{l_t} / Σ_{t∈Y∪N} e^{l_t},   verdict = P(correct) ≥ threshold,

with the threshold calibrated on human-labelled answers (``judges/embedded_judge.json``, written by
``evaluations.judging.validation.heldout``). ``yes_no_mass`` = Σ_{t∈Y∪N} softmax(l)_t tells how sure the model is
that the reply is yes/no at all. The Llama is loaded once per file; verdicts are serialised with a lock
and run in a worker thread. Verdicts can be cached on disk (``VerdictCache``: kind ``verdict`` of the one cache
store, ``models.cache.open_store``, keyed by model, prompt and texts). ``EmbeddedGrader.grade`` is one verdict as
a ``judging.basics.grade.Grade``; the pydantic-evals evaluator is ``evaluators.llm_judges.EmbeddedLLMJudge``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluations.core.errors import EvaluationsError
from evaluations.judging.basics.grade import Grade
from evaluations.judging.basics.shipped import shipped_path
from evaluations.models.cache import open_store
from evaluations.models.llamacpp import keep_sequence, load_llama, restore_sequence
from evaluations.models.meter import count_calls

__all__ = [
    "DEFAULT_JUDGE",
    "EmbeddedGrader",
    "YesNoJudge",
    "VerdictCache",
    "verdict_cache",
    "load_judge",
    "judge_params",
    "embedded_judge_path",
]

#: the embedded judge model (``judge.model.name`` / ``--judge embedded:NAME``)
DEFAULT_JUDGE = "qwen2.5-coder-1.5b"
RUBRIC_PATH = shipped_path("answer_equivalence_yesno.md")  # package data: judges/ in a checkout (judging.basics.shipped)
N_CTX = 1024  # the rubric (~230 tokens) + the case (question, gold alternatives, answer up to MAX_ANSWER_TOKENS)
MAX_ANSWER_TOKENS = 160  # a longer candidate keeps its first tokens (the answer is stated early)
YES = ("yes", "Yes", " yes", " Yes", "YES")
NO = ("no", "No", " no", " No", "NO")
_QUESTION = "Question: {question}\nReference answers: {refs}\nCandidate answer: {answer}\n"
_ASK = "Correct (yes/no)?<|im_end|>\n<|im_start|>assistant\n"


def embedded_judge_path(name: str = DEFAULT_JUDGE, data_dir: Path | None = None) -> Path:
    """The assembled, sha256-checked GGUF file of judge model ``name`` (``evaluations.models.gguf``).

    ``$EVALUATIONS_JUDGE_GGUF`` points at a file directly (experiments); ``data_dir`` None: the default config's.
    """
    from evaluations.core.env import env_file

    override = env_file("EVALUATIONS_JUDGE_GGUF")
    if override is not None:
        return override
    from evaluations.models import gguf

    model = gguf.resolve(name, where="judge.model.name")
    if data_dir is None:
        from evaluations.core.config import Config

        data_dir = Config().data_dir()
    return gguf.gguf_file(model, data_dir)


def _threads() -> int:
    from evaluations.models.llamacpp import n_threads  # $EVALUATIONS_LLM_THREADS, checked

    return n_threads()


def _rubric() -> str:
    try:
        return RUBRIC_PATH.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise EvaluationsError(
            f"cannot read the judge rubric ({exc.strerror})", where=str(RUBRIC_PATH),
            fix="restore judges/answer_equivalence_yesno.md from the repository",
        ) from None


class YesNoJudge:
    """P(correct) of (question, gold alternatives, answer) from one forward pass of a chat GGUF model."""

    def __init__(self, path: Path, *, n_threads: int | None = None):
        from evaluations.models.llamacpp import require_llama_cpp

        llama_cpp = require_llama_cpp()
        self._llama_cpp = llama_cpp
        self.path = Path(path)
        self.llm = load_llama(self.path, n_ctx=N_CTX, n_threads=n_threads or _threads(), n_batch=256)
        self.rubric = _rubric()
        self.lock = threading.Lock()
        self.prefix = self._tokens(f"<|im_start|>system\n{self.rubric}<|im_end|>\n<|im_start|>user\n")
        self.yes_ids = self._single_tokens(YES)
        self.no_ids = self._single_tokens(NO)
        self.n_vocab = self.llm.n_vocab()
        model_id = f"{self.llm.metadata.get('general.name', '')}:{self.path.stat().st_size}"
        self.id = hashlib.sha256(f"{model_id}\0{self.rubric}\0{_QUESTION}{_ASK}".encode()).hexdigest()[:16]
        self._state = None

    def _tokens(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _single_tokens(self, words: Sequence[str]) -> list[int]:
        ids = [self._tokens(w) for w in words]
        return sorted({t[0] for t in ids if len(t) == 1})

    def suffix(self, question: str, refs: Sequence[str], answer: str) -> list[int]:
        """The case's tokens: question, gold alternatives, the answer (first MAX_ANSWER_TOKENS tokens), the ask."""
        answer_tokens = self._tokens(answer.strip())
        if len(answer_tokens) > MAX_ANSWER_TOKENS:
            answer = self.llm.detokenize(answer_tokens[:MAX_ANSWER_TOKENS]).decode("utf-8", "ignore") + " ..."
        text = _QUESTION.format(question=question.strip(), refs=" | ".join(r.strip() for r in refs), answer=answer.strip())
        return self._tokens(text.replace("<|", "< |")) + self._tokens(_ASK)

    def _logits(self) -> np.ndarray:
        ptr = self._llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float64)

    def _forward(self, suffix: list[int], reuse: str) -> np.ndarray:
        """Logits after prefix + suffix. reuse: "truncate" keeps the prefix's KV cache in place and drops what
        follows it (``Llama.n_tokens`` = prefix length; ``Llama.eval`` removes the rest of the KV cache);
        "state" restores the prefix's KV cells kept after it was read (``models.llamacpp.keep_sequence``); "none"
        evaluates everything."""
        llm, n = self.llm, len(self.prefix)
        if reuse == "truncate" and llm.n_tokens >= n and list(llm.input_ids[:n]) == self.prefix:
            llm.n_tokens = n
            llm.eval(suffix)
        elif reuse == "state" and self._state is not None and restore_sequence(llm, self._state):
            llm.eval(suffix)
        elif reuse == "none":
            llm.reset()
            llm.eval(self.prefix + suffix)
        else:
            llm.reset()
            llm.eval(self.prefix)
            if reuse == "state":
                self._state = keep_sequence(llm)
            llm.eval(suffix)
        return self._logits()

    def probability(
        self, question: str, refs: Sequence[str], answer: str, *, reuse: str = "truncate"
    ) -> tuple[float, float]:
        """(P(correct), yes/no probability mass): the formulas in the module docstring."""
        suffix = self.suffix(question, refs, answer)
        room = N_CTX - len(self.prefix) - 1
        if len(suffix) > room:
            suffix = suffix[: room - 8] + suffix[-8:]
        with self.lock:
            logits = self._forward(suffix, reuse)
        count_calls()  # one forward pass (``models.meter``)
        top = logits.max()
        log_z = top + np.log(np.exp(logits - top).sum())
        yes = np.exp(logits[self.yes_ids] - top).sum()
        no = np.exp(logits[self.no_ids] - top).sum()
        mass = float(np.exp(np.log(yes + no) + top - log_z))
        return float(yes / (yes + no)), mass


_judges: dict[str, YesNoJudge] = {}
_judges_lock = threading.Lock()


def load_judge(name: str = DEFAULT_JUDGE, data_dir: Path | None = None) -> YesNoJudge:
    """The judge for ``name``, loaded once per process."""
    path = embedded_judge_path(name, data_dir)
    with _judges_lock:
        if str(path) not in _judges:
            _judges[str(path)] = YesNoJudge(path)
        return _judges[str(path)]


# -- verdict cache ----------------------------------------------------------------------------------
def default_verdict_cache(cache_dir: str | Path | None = None) -> Path:
    """The verdict store in ``cache_dir`` (a run's: ``Config.judge_cache_dir``); None: beside the embedding cache
    (``semantic.default_cache_path``)."""
    from evaluations.judging.correctness.semantic import default_cache_path

    return default_cache_path(cache_dir).parent / "llm_verdicts.sqlite"


def verdict_cache(enabled: bool, cache_dir: str | Path | None = None) -> VerdictCache | None:
    """The ``VerdictCache`` in ``cache_dir`` (``default_verdict_cache``), None when ``enabled`` is False
    (``--no-cache``: verdicts neither read nor written)."""
    return VerdictCache(default_verdict_cache(cache_dir)) if enabled else None


class VerdictCache:
    """P(correct) per (judge id, question, gold, answer): the ``verdict`` entries of the cache store at ``path``
    (default ``default_verdict_cache()``). The store is opened once per process and file (``open_store``), so
    making a ``VerdictCache`` per case costs nothing; safe to share between threads, processes and runs."""

    KIND = "verdict"

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else default_verdict_cache()
        self.store = open_store(self.path)

    @staticmethod
    def key(judge_id: str, question: str, refs: Sequence[str], answer: str) -> str:
        return hashlib.sha256(json.dumps([judge_id, question, list(refs), answer]).encode()).hexdigest()

    def get(self, key: str) -> float | None:
        entry = self.entry(key)
        return None if entry is None else entry[0]

    def entry(self, key: str) -> tuple[float, dict[str, Any]] | None:
        """(P(correct), what was stored beside it) or None."""
        value = self.store.get(key)
        if not isinstance(value, str):
            return None
        stored = json.loads(value)
        return float(stored["p"]), stored.get("info") or {}

    def put(self, key: str, p: float, info: dict[str, Any] | None = None) -> None:
        self.store.put(self.KIND, key, json.dumps({"p": float(p), "info": info or {}}))

    def __len__(self) -> int:
        return self.store.count(self.KIND)


def judge_many(
    judge: YesNoJudge,
    items: Sequence[tuple[str, Sequence[str], str]],
    *,
    cache: VerdictCache | None = None,
    progress: Callable[[int], None] | None = None,
    answerable: Sequence[bool] | None = None,
    screen_answers: bool = True,
) -> np.ndarray:
    """P(correct) for many (question, gold alternatives, answer) items, cached verdicts reused. With
    ``screen_answers`` the non-answer screen decides first (``judging.correctness.nonanswer``: P = 0 for a non-answer, 1 for
    a refusal to an unanswerable question) and the model is not run for those items."""
    from evaluations.judging.correctness.nonanswer import screen

    out = np.empty(len(items))
    for i, (question, refs, answer) in enumerate(items):
        if screen_answers:
            result = screen(question, list(refs), answer, answerable=answerable[i] if answerable is not None else True)
            if result.decided is not None:
                out[i] = float(result.decided)
                if progress is not None:
                    progress(1)
                continue
        key = VerdictCache.key(judge.id, question, refs, answer) if cache is not None else ""
        p = cache.get(key) if cache is not None else None
        if p is None:
            p, mass = judge.probability(question, refs, answer)
            if cache is not None:
                cache.put(key, p, {"yes_no_mass": mass})
        out[i] = p
        if progress is not None:
            progress(1)
    return out


# -- calibrated threshold -----------------------------------------------------------------------------
def params_path() -> Path:
    from evaluations.judging.basics.fitted import default_params_path

    return default_params_path("embedded_judge.json")


def judge_params(path: Path | None = None) -> dict[str, Any]:
    """The calibrated threshold (and how it was obtained); threshold 0.5 when no file is shipped. A file that
    cannot be used (not UTF-8, not JSON, no ``threshold`` in [0, 1]) is one EvaluationsError naming it."""
    from evaluations.judging.basics.fitted import params_fix, read_json

    path = path or params_path()
    fix = params_fix(path, path.name, "python benchmarks/judge_validation.py --write-params")
    if not path.exists():  # as before read_json: a missing file (or a link to none) is no calibration
        return {"threshold": 0.5, "calibrated": False}
    data = read_json(path, "embedded judge parameters", fix)
    threshold = data.get("threshold") if isinstance(data, dict) else None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
        what = "missing key 'threshold'" if isinstance(data, dict) and "threshold" not in data else \
            "'threshold' must be a probability in [0, 1]" if isinstance(data, dict) else \
            f"must be a JSON object, got a {type(data).__name__}"
        raise EvaluationsError(f"invalid embedded judge parameters: {what}", where=str(path), fix=fix)
    return data


def combined_params_path() -> Path:
    return params_path().with_name("combined_judge.json")


def combined_verdict(refs: Sequence[str], answer: str, p: float, question: str = "") -> tuple[float, bool, str]:
    """(``combined_p_correct``, verdict, reason): the offline judge's features plus llm_logit(p)
    (``judges/combined_judge.json``, fitted by ``judging.validation.heldout.write_params``)."""
    from evaluations.judging.correctness.offline import load_model
    from evaluations.judging.basics.fitted import llm_logit

    model = load_model(combined_params_path())
    pc, verdict = model.judge(refs, answer, extras={"llm_logit": float(llm_logit(p))}, question=question)
    reason = f"p(correct) = {pc:.2f}, threshold {model.threshold:g} (offline features + LLM P(yes) {p:.2f})"
    return pc, bool(verdict), reason


# -- one verdict ----------------------------------------------------------------------------------------
@dataclass
class EmbeddedGrader:
    """One verdict of the embedded judge ``model``: P(correct) ≥ ``threshold`` (None: the calibrated one of
    ``judges/embedded_judge.json``). ``cache``: read and write verdicts in the ``VerdictCache`` in ``cache_dir``
    (None: the default one); False (``--no-cache``) neither reads nor writes them. ``data_dir``: where the assembled
    GGUF lives."""

    model: str = DEFAULT_JUDGE
    threshold: float | None = None
    cache: bool = True
    data_dir: str | None = None
    cache_dir: str | None = None

    def probability(self, question: str, refs: Sequence[str], answer: str) -> float:
        """P(correct), from the verdict cache when it is there (runs the model in this thread otherwise)."""
        judge = load_judge(self.model, Path(self.data_dir) if self.data_dir else None)
        cache = verdict_cache(self.cache, self.cache_dir)
        return float(judge_many(judge, [(question, refs, answer)], cache=cache)[0])

    async def grade(self, question: str, answer: str, gold: list[str]) -> Grade:
        """The verdict on ``answer`` (the model runs in a worker thread, off the event loop)."""
        import anyio.to_thread

        p = await anyio.to_thread.run_sync(self.probability, question, gold, answer)
        threshold = self.threshold if self.threshold is not None else float(judge_params()["threshold"])
        verdict = p >= threshold
        reason = f"P(yes) = {p:.3f} {'>=' if verdict else '<'} threshold {threshold:.3f} ({self.model}, embedded)"
        return Grade(verdict, p, reason, "embedded")
