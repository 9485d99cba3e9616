"""The LLM judge: is the generated answer equivalent to one of the gold answers?

Served models (ollama / OpenAI-compatible): a small pydantic-ai ``Agent`` of our own, rubric in
``judges/answer_equivalence.md``. The prompt has four sections, ``<Input>`` (the question),
``<Output>`` (the answer text), ``<ExpectedOutput>`` (the gold alternatives, one per line) and
``<Rubric>``: the sections and the grading instructions are pydantic-evals' (``LLMJudge``'s
``judge_input_output_expected`` in ``pydantic_evals.evaluators.llm_as_a_judge``). Its public function asks for
the structured verdict only; this judge needs the modes below and the first token's logprobs, so it builds the
same prompt itself. Output modes degrade step by step, each tried with ``judge.retries`` output retries:

1. ``tool``: a ``GradingOutput`` {reason, pass, score} tool call;
2. ``native``: the same object as JSON under the server's JSON-schema response format;
3. ``prompted``: the schema in the instructions, JSON parsed from the text;
4. ``text``: a one-word yes/no reply. When the server returns ``top_logprobs`` for the first token,
   P(correct) = Σ_{yes spellings} e^{lp} / Σ_{yes and no spellings} e^{lp}; else yes -> 1, no -> 0.

The modes are tried through the one output-mode ladder (``models.ladder``: its fail-over policy, the cache
replay, and the mode that last worked tried first for later cases). ``AnswerGrader.grade`` returns a ``Grade``:
verdict with reason, P(correct) (the text mode's probability, else ``score``) and the mode used; when every mode
fails it raises. The pydantic-evals evaluators (non-answer screen first, results ``llm_judge``, ``llm_p_correct``,
``llm_judge_mode``) are ``evaluators.llm_judges``.

Provider ``embedded``: ``judging.correctness.embedded.EmbeddedGrader`` (yes/no logits of an in-process model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from evaluations.core.errors import EvaluationsError
from evaluations.judging.basics.grade import Grade
from evaluations.judging.basics.shipped import shipped_path
from evaluations.models.ladder import SERVED_LADDER, LadderFailed, OutputLadder, output_type

if TYPE_CHECKING:
    from collections.abc import Callable

    from evaluations.core.config import Config, LLMModel

RUBRIC_PATH = shipped_path("answer_equivalence.md")  # package data: judges/ in a checkout (judging.basics.shipped)
MODES = SERVED_LADDER
YES_WORDS, NO_WORDS = frozenset({"yes", "true", "correct"}), frozenset({"no", "false", "incorrect"})

_INSTRUCTIONS = (
    "You are grading output according to a user-specified rubric. If the statement in the rubric is true for "
    "the provided input, expected output, and output, then the output passes the test. Give a short reason, "
    "pass (true/false) and score (1.0 when it passes, else 0.0)."
)
_TEXT_INSTRUCTIONS = (
    "You are grading output according to a user-specified rubric. If the statement in the rubric is true for "
    "the provided input, expected output, and output, reply yes; otherwise reply no. Reply with one word."
)


class GradingOutput(BaseModel):
    """The judge's structured verdict."""

    model_config = ConfigDict(populate_by_name=True)
    reason: str = ""
    pass_: bool = Field(alias="pass")
    score: float | None = None


def load_rubric(path: Path = RUBRIC_PATH) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise EvaluationsError(
            f"cannot read the judge rubric ({exc.strerror})",
            where=str(path),
            fix="restore judges/answer_equivalence.md in a checkout, or reinstall evaluations",
        ) from None


def judge_prompt(question: str, answer: str, gold: list[str], rubric: str) -> str:
    sections = (("Input", question), ("Output", answer), ("ExpectedOutput", "\n".join(gold)), ("Rubric", rubric))
    return "\n".join(f"<{tag}>\n{text}\n</{tag}>" for tag, text in sections)


def yes_no_masses(logprobs: list[dict[str, Any]] | None) -> tuple[float, float] | None:
    """(Σ e^lp of the yes spellings, Σ e^lp of the no spellings) among the first token's ``top_logprobs`` (OpenAI
    format; the token itself when it has none); None without logprobs."""
    if not logprobs:
        return None
    first = logprobs[0]
    candidates = list(first.get("top_logprobs") or []) or [first]
    yes = sum(math.exp(c["logprob"]) for c in candidates if c["token"].strip().lower() in YES_WORDS)
    no = sum(math.exp(c["logprob"]) for c in candidates if c["token"].strip().lower() in NO_WORDS)
    return yes, no


def p_yes_from_logprobs(logprobs: list[dict[str, Any]] | None) -> float | None:
    """P(yes) from the first token's ``top_logprobs`` (OpenAI format); None without yes/no candidates."""
    masses = yes_no_masses(logprobs)
    return masses[0] / sum(masses) if masses is not None and sum(masses) > 0 else None


def _rejects_request(exc: Exception) -> bool:
    """The server refused this request's form (``models.retry.rejects_request`` on the HTTP error)."""
    from evaluations.models.retry import rejects_request

    return rejects_request(getattr(exc, "status_code", 0), str(getattr(exc, "body", "") or ""))


def parse_yes_no(text: str) -> bool | None:
    words = text.strip().lower().replace(".", " ").replace(",", " ").split()
    return None if not words else True if words[0] in YES_WORDS else False if words[0] in NO_WORDS else None


@dataclass
class AnswerGrader:
    """The served judge: is the answer equivalent to at least one gold answer (modes: module docstring)?
    ``retries``: output retries per mode; ``logprobs``: ask for the first token's log-probabilities in text mode."""

    model: Model
    rubric: str
    model_settings: ModelSettings | None = None
    retries: int = 2
    modes: tuple[str, ...] = MODES
    logprobs: bool = True
    ladder: OutputLadder = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.ladder = OutputLadder(self.modes)

    def _agent(self, mode: str) -> Any:
        from pydantic_ai import Agent

        instructions = _TEXT_INSTRUCTIONS if mode == "text" else _INSTRUCTIONS
        return Agent(self.model, output_type=output_type(mode, GradingOutput), instructions=instructions,
                     retries=self.retries)

    async def _run(self, mode: str, prompt: str) -> Grade:
        settings: dict[str, Any] = dict(self.model_settings or {})
        if mode != "text":
            result = await self._agent(mode).run(prompt, model_settings=settings)
            out: GradingOutput = result.output
            p = min(1.0, max(0.0, out.score)) if out.score is not None else float(out.pass_)
            return Grade(out.pass_, p, out.reason, mode)
        from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior

        settings["max_tokens"] = 4
        if self.logprobs:
            settings.update(openai_logprobs=True, openai_top_logprobs=10)
        try:
            result = await self._agent(mode).run(prompt, model_settings=settings)
        except ModelHTTPError as exc:
            if not self.logprobs or not _rejects_request(exc):
                raise
            settings.pop("openai_logprobs"), settings.pop("openai_top_logprobs")  # server refuses logprobs
            result = await self._agent(mode).run(prompt, model_settings=settings)
        response = result.all_messages()[-1]
        p = p_yes_from_logprobs((getattr(response, "provider_details", None) or {}).get("logprobs"))
        word = parse_yes_no(result.output)
        if p is None and word is None:
            raise UnexpectedModelBehavior(f"the judge replied {result.output[:80]!r}, neither yes nor no")
        if p is None:
            p = float(word)
        source = "P(yes) from logprobs" if word is None or self.logprobs else "reply"
        return Grade(p >= 0.5, p, f"replied {result.output.strip()[:40]!r}; {source} = {p:.3f}", mode)

    async def grade(self, question: str, answer: str, gold: list[str]) -> Grade:
        """The verdict of the first output mode that works (the ladder's remembered one first), replayed from the
        model-call cache alone first (``models.cache.replay_first``: a re-run repeats none of the failed calls)."""
        from pydantic_ai.exceptions import UnexpectedModelBehavior

        prompt = judge_prompt(question, answer, gold, self.rubric)
        try:
            return await self.ladder.run(self.model, lambda mode: self._run(mode, prompt))
        except LadderFailed as exc:
            errors = "; ".join(f"{mode}: {_short(error)}" for mode, error in exc.failures)
            raise UnexpectedModelBehavior("no judge output mode worked (retries exhausted): " + errors) from exc


def _short(error: Exception) -> str:
    from pydantic_ai.exceptions import ModelHTTPError

    return f"HTTP {error.status_code}" if isinstance(error, ModelHTTPError) else str(error)


def answer_grader(model_cfg: LLMModel, config: Config) -> AnswerGrader:
    """The served judge of ``judge.model``: sampling pinned (``models.chat.model_settings``), ``judge.retries``
    output retries, the shipped rubric."""
    from evaluations.models.chat import build_model, model_settings

    return AnswerGrader(model=build_model(model_cfg, config), rubric=load_rubric(),
                        model_settings=model_settings(model_cfg), retries=config.judge.retries)


def embedded_judge_name(model_cfg: LLMModel) -> str:
    """``judge.model.name`` when set, else the default embedded judge (the QA default, SmolLM2, cannot judge)."""
    from evaluations.judging.correctness.embedded import DEFAULT_JUDGE

    return model_cfg.name if "name" in model_cfg.model_fields_set else DEFAULT_JUDGE


def describe_judge(model_cfg: LLMModel, config: Config) -> dict[str, Any]:
    """Run metadata of the LLM judge (``models.chat.describe_model``; embedded: the judge model and threshold)."""
    from evaluations.models.chat import describe_model

    described = describe_model(model_cfg, config)
    if model_cfg.provider == "embedded":
        from evaluations.judging.correctness.embedded import judge_params

        described.update(name=embedded_judge_name(model_cfg), method="P(yes) from next-token logits",
                         threshold=float(judge_params()["threshold"]))
    return described


def judge_check(model_cfg: LLMModel, config: Config) -> Callable[[], None]:
    """The pre-run check: the server serves the model, or the embedded judge's GGUF file is ready."""
    if model_cfg.provider == "embedded":
        from evaluations.judging.correctness.embedded import embedded_judge_path

        return lambda: (embedded_judge_path(embedded_judge_name(model_cfg), config.data_dir()), None)[1]
    from evaluations.models.chat import check_model

    return lambda: check_model(model_cfg, config, key="judge.model")


# -- many verdicts at once (judge-agreement, held-out studies) -------------------------------------------
def batch_judge(model_cfg: LLMModel, config: Config, *, concurrency: int = 4, cache: bool = True,
                errors: list[tuple[str, str]] | None = None) -> Any:
    """A ``judging.validation.agreement.BatchJudge`` running the LLM judge: verdict per example, NaN when the judge failed
    (a served judge's failure is appended to ``errors`` as (the example's source, the error), for the command to
    name the first one).

    Embedded: P(correct) ≥ the calibrated threshold, one verdict at a time. Served: ``concurrency`` requests
    in flight. Verdicts are cached on disk (``judging.correctness.embedded.VerdictCache``, in ``config.judge_cache_dir()``)
    keyed by judge, prompt and texts; ``cache`` False neither reads nor writes them.
    """
    import numpy as np

    from evaluations.judging.correctness.embedded import VerdictCache, verdict_cache

    store = verdict_cache(cache, config.judge_cache_dir())
    if model_cfg.provider == "embedded":
        from evaluations.judging.correctness.embedded import judge_many, judge_params, load_judge

        name = embedded_judge_name(model_cfg)

        def run_embedded(examples: Any, progress: Any = None) -> np.ndarray:
            judge = load_judge(name, config.data_dir())
            items = [(e.question, e.references, e.answer) for e in examples]
            p = judge_many(judge, items, cache=store, progress=progress, answerable=[e.answerable for e in examples])
            return (p >= float(judge_params()["threshold"])).astype(float)

        return run_embedded

    import hashlib

    import anyio

    from evaluations.judging.correctness.nonanswer import screen

    grader = answer_grader(model_cfg, config)
    judge_id = hashlib.sha256(f"{model_cfg.provider}:{model_cfg.name}:{model_cfg.base_url}\0{grader.rubric}".encode())
    judge_id_hex = judge_id.hexdigest()[:16]

    async def one(e: Any) -> float:
        decided = screen(e.question, list(e.references), e.answer, answerable=e.answerable).decided
        if decided is not None:  # the non-answer screen, as in a run
            return float(decided)
        key = VerdictCache.key(judge_id_hex, e.question, e.references, e.answer)
        entry = store.entry(key) if store is not None else None
        if entry is None:
            try:
                grade = await grader.grade(e.question, e.answer, list(e.references))
            except Exception as exc:  # noqa: BLE001 - a failed verdict is counted, and said by the command
                if errors is not None:
                    errors.append((e.source, f"{type(exc).__name__}: {exc}"))
                return float("nan")
            entry = (grade.p_correct, {"verdict": grade.verdict, "mode": grade.mode})
            if store is not None:
                store.put(key, *entry)
        return float(entry[1].get("verdict", entry[0] >= 0.5))

    def run_served(examples: Any, progress: Any = None) -> np.ndarray:
        examples = list(examples)
        verdicts = np.full(len(examples), np.nan)

        async def judged(i: int, limiter: anyio.CapacityLimiter) -> None:
            async with limiter:  # at most ``concurrency`` verdicts in flight
                verdicts[i] = await one(examples[i])
            if progress is not None:
                progress(1)

        async def run_all() -> None:  # anyio's public limiter and task group (pydantic-evals' gather is private)
            limiter = anyio.CapacityLimiter(concurrency)
            async with anyio.create_task_group() as group:
                for i in range(len(examples)):
                    group.start_soon(judged, i, limiter)

        anyio.run(run_all)
        return verdicts

    return run_served
