"""The LLM judge: is the generated answer equivalent to one of the gold answers?

Served models (ollama / OpenAI-compatible): a small pydantic-ai ``Agent`` of our own, rubric in
``judges/answer_equivalence.md``. The prompt has four sections, ``<Input>`` (the question),
``<Output>`` (the answer text), ``<ExpectedOutput>`` (the gold alternatives, one per line) and
``<Rubric>``. Output modes degrade step by step, each tried with ``judge.retries`` output retries:

1. ``tool``: a ``GradingOutput`` {reason, pass, score} tool call;
2. ``native``: the same object as JSON under the server's JSON-schema response format;
3. ``prompted``: the schema in the instructions, JSON parsed from the text;
4. ``text``: a one-word yes/no reply. When the server returns ``top_logprobs`` for the first token,
   P(correct) = Σ_{yes spellings} e^{lp} / Σ_{yes and no spellings} e^{lp}; else yes -> 1, no -> 0.

A mode fails over to the next on invalid output (retries exhausted) or when the server rejects the request's
form (HTTP 400/422, or a 5xx whose body names a validation error, as llama-cpp-python's server does for a
``json_schema`` response format); transport errors, auth and overload are not degraded. The first mode that worked is remembered and
tried first for later cases. Per case: ``llm_judge`` (verdict with reason), ``llm_p_correct``
(P(correct): the text mode's probability, else ``score``), ``llm_judge_mode`` (label: the mode used).
No answer or no gold: ``{}``. The non-answer screen (``judges.nonanswer``) runs first: a non-answer is
incorrect without asking the model (``answer_kind`` names its kind). When every mode fails the evaluator raises and pydantic-evals records an
evaluator failure for the case (shown and counted, never dropped).

Provider ``embedded``: ``judges.embedded.EmbeddedLLMJudge`` (yes/no logits of an in-process model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from evaluations.core.errors import EvaluationsError
from evaluations.judging.shipped import shipped_path

if TYPE_CHECKING:
    from collections.abc import Callable

    from evaluations.core.config import Config, LLMModel

RUBRIC_PATH = shipped_path("answer_equivalence.md")  # package data: judges/ in a checkout (judges.shipped)
MODES = ("tool", "native", "prompted", "text")
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


@dataclass
class Grade:
    verdict: bool
    p_correct: float
    reason: str
    mode: str


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


def p_yes_from_logprobs(logprobs: list[dict[str, Any]] | None) -> float | None:
    """P(yes) from the first token's ``top_logprobs`` (OpenAI format); None without yes/no candidates."""
    if not logprobs:
        return None
    first = logprobs[0]
    candidates = list(first.get("top_logprobs") or []) or [first]
    yes = sum(math.exp(c["logprob"]) for c in candidates if c["token"].strip().lower() in YES_WORDS)
    no = sum(math.exp(c["logprob"]) for c in candidates if c["token"].strip().lower() in NO_WORDS)
    return yes / (yes + no) if yes + no > 0 else None


def _rejects_request(exc: Exception) -> bool:
    """The server refused this request's form (``models.retry.rejects_request`` on the HTTP error)."""
    from evaluations.models.retry import rejects_request

    return rejects_request(getattr(exc, "status_code", 0), str(getattr(exc, "body", "") or ""))


def parse_yes_no(text: str) -> bool | None:
    words = text.strip().lower().replace(".", " ").replace(",", " ").split()
    return None if not words else True if words[0] in YES_WORDS else False if words[0] in NO_WORDS else None


@dataclass(repr=False)
class AnswerEquivalenceJudge(Evaluator[Any, Any, Any]):
    """pass = the judge model says the answer is equivalent to at least one gold answer (modes: module doc)."""

    model: Model
    rubric: str
    model_settings: ModelSettings | None = None
    retries: int = 2
    evaluation_name: str = "llm_judge"
    modes: tuple[str, ...] = MODES
    logprobs: bool = True
    _working: list[str] = field(default_factory=list, init=False)

    def _agent(self, mode: str) -> Any:
        from pydantic_ai import Agent, NativeOutput, PromptedOutput, ToolOutput

        if mode == "text":
            return Agent(self.model, output_type=str, instructions=_TEXT_INSTRUCTIONS, retries=self.retries)
        wrap = {"tool": ToolOutput, "native": NativeOutput, "prompted": PromptedOutput}[mode]
        return Agent(self.model, output_type=wrap(GradingOutput), instructions=_INSTRUCTIONS, retries=self.retries)

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
        """The verdict of the first output mode that works (the remembered one first), replayed from the model-call
        cache alone first (``models.cache.replay_first``: a re-run repeats none of the calls that failed)."""
        from evaluations.models.cache import replay_first

        prompt = judge_prompt(question, answer, gold, self.rubric)
        return await replay_first(self.model, lambda: self._ladder(prompt))

    async def _ladder(self, prompt: str) -> Grade:
        from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior

        from evaluations.models.cache import CacheMiss

        order = list(self.modes)
        if self._working and self._working[0] in order:
            order.remove(self._working[0])
            order.insert(0, self._working[0])
        errors = []
        for mode in order:
            try:
                grade = await self._run(mode, prompt)
            except (UnexpectedModelBehavior, CacheMiss) as exc:
                errors.append(f"{mode}: {exc}")
                continue
            except ModelHTTPError as exc:
                if not _rejects_request(exc):
                    raise
                errors.append(f"{mode}: HTTP {exc.status_code}")
                continue
            if not self._working:
                self._working.append(mode)
            return grade
        raise UnexpectedModelBehavior("no judge output mode worked (retries exhausted): " + "; ".join(errors))

    async def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> dict[str, Any]:
        from evaluations.evaluators.answers import judged_case, screened

        case = judged_case(ctx)
        if case is None:
            return {}
        decided = screened(case, self.evaluation_name, "llm_p_correct")
        if decided is not None:  # a non-answer (or an unanswerable question): the model is not asked
            return decided
        grade = await self.grade(case.question, case.answer.strip(), case.refs)
        return {
            self.evaluation_name: EvaluationReason(grade.verdict, reason=grade.reason),
            "llm_p_correct": grade.p_correct,
            "llm_judge_mode": grade.mode,
        }

    def build_serialization_arguments(self) -> dict[str, Any]:
        return {"model": self.model.model_id, "retries": self.retries, "evaluation_name": self.evaluation_name}


def embedded_judge_name(model_cfg: LLMModel) -> str:
    """``judge.model.name`` when set, else the default embedded judge (the QA default, SmolLM2, cannot judge)."""
    from evaluations.judging.embedded import DEFAULT_JUDGE

    return model_cfg.name if "name" in model_cfg.model_fields_set else DEFAULT_JUDGE


def llm_judge(model_cfg: LLMModel, config: Config) -> Evaluator:
    """The judge for ``judge.model``: embedded -> ``EmbeddedLLMJudge``; served -> ``AnswerEquivalenceJudge``
    with sampling pinned and ``judge.retries`` retries."""
    if model_cfg.provider == "embedded":
        from evaluations.judging.embedded import EmbeddedLLMJudge

        return EmbeddedLLMJudge(model=embedded_judge_name(model_cfg), data_dir=str(config.data_dir()),
                                cache=config.cache.enabled)
    from evaluations.models.chat import build_model, model_settings

    return AnswerEquivalenceJudge(
        model=build_model(model_cfg, config),
        rubric=load_rubric(),
        model_settings=model_settings(model_cfg),
        retries=config.judge.retries,
    )


def describe_judge(model_cfg: LLMModel, config: Config) -> dict[str, Any]:
    """Run metadata of the LLM judge (``qa.models.describe_model``; embedded: the judge model and threshold)."""
    from evaluations.models.chat import describe_model

    described = describe_model(model_cfg, config)
    if model_cfg.provider == "embedded":
        from evaluations.judging.embedded import judge_params

        described.update(name=embedded_judge_name(model_cfg), method="P(yes) from next-token logits",
                         threshold=float(judge_params()["threshold"]))
    return described


def judge_check(model_cfg: LLMModel, config: Config) -> Callable[[], None]:
    """The pre-run check: the server serves the model, or the embedded judge's GGUF file is ready."""
    if model_cfg.provider == "embedded":
        from evaluations.judging.embedded import embedded_judge_path

        return lambda: (embedded_judge_path(embedded_judge_name(model_cfg), config.data_dir()), None)[1]
    from evaluations.models.chat import check_model

    return lambda: check_model(model_cfg, config, key="judge.model")


# -- many verdicts at once (judge-agreement, held-out studies) -------------------------------------------
def batch_judge(model_cfg: LLMModel, config: Config, *, concurrency: int = 4, cache: bool = True) -> Any:
    """A ``judges.agreement.BatchJudge`` running the LLM judge: verdict per example, NaN when the judge failed.

    Embedded: P(correct) ≥ the calibrated threshold, one verdict at a time. Served: ``concurrency`` requests
    in flight. Verdicts are cached on disk (``judges.embedded.VerdictCache``) keyed by judge, prompt and texts.
    """
    import numpy as np

    from evaluations.judging.embedded import VerdictCache

    store = VerdictCache() if cache else None
    if model_cfg.provider == "embedded":
        from evaluations.judging.embedded import judge_many, judge_params, load_judge

        name = embedded_judge_name(model_cfg)

        def run_embedded(examples: Any, progress: Any = None) -> np.ndarray:
            judge = load_judge(name, config.data_dir())
            items = [(e.question, e.references, e.answer) for e in examples]
            p = judge_many(judge, items, cache=store, progress=progress, answerable=[e.answerable for e in examples])
            return (p >= float(judge_params()["threshold"])).astype(float)

        return run_embedded

    import asyncio
    import hashlib

    from evaluations.judging.nonanswer import screen

    judge: AnswerEquivalenceJudge = llm_judge(model_cfg, config)  # type: ignore[assignment]
    judge_id = hashlib.sha256(f"{model_cfg.provider}:{model_cfg.name}:{model_cfg.base_url}\0{judge.rubric}".encode())
    judge_id_hex = judge_id.hexdigest()[:16]

    def run_served(examples: Any, progress: Any = None) -> np.ndarray:
        async def one(e: Any, gate: asyncio.Semaphore) -> float:
            decided = screen(e.question, list(e.references), e.answer, answerable=e.answerable).decided
            if decided is not None:  # the non-answer screen, as in a run
                if progress is not None:
                    progress(1)
                return float(decided)
            key = VerdictCache.key(judge_id_hex, e.question, e.references, e.answer)
            entry = store.entry(key) if store is not None else None
            if entry is None:
                try:
                    async with gate:
                        grade = await judge.grade(e.question, e.answer, list(e.references))
                except Exception:  # noqa: BLE001 - a failed verdict is counted as not judged
                    return float("nan")
                finally:
                    if progress is not None:
                        progress(1)
                entry = (grade.p_correct, {"verdict": grade.verdict, "mode": grade.mode})
                if store is not None:
                    store.put(key, *entry)
            elif progress is not None:
                progress(1)
            return float(entry[1].get("verdict", entry[0] >= 0.5))

        async def run_all() -> list[float]:
            gate = asyncio.Semaphore(concurrency)
            return await asyncio.gather(*(one(e, gate) for e in examples))

        return np.array(asyncio.run(run_all()), dtype=float)

    return run_served
