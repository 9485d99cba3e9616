"""Served checkers for the reference-free judges: the embedded yes/no question, asked of an Ollama or
OpenAI-compatible model.

The faithfulness and context-relevance judges ask short yes/no questions about a passage through any object with
the ``yesno.YesNoScorer`` duck type (``id``, ``calls``, ``probability(shared, tail) -> (P(yes), mass)``,
``fit(shared, tail) -> shared``). ``checker_for(model_cfg, config)`` gives the embedded scorer for provider
``embedded`` and a ``ServedChecker`` otherwise. A served checker asks the same question as the embedded prompt:

    system = yesno.PASSAGE_SYSTEM + the judge's rubric (judges/<judge>.md, else judges/reference_free_served.md)
    user   = shared (the passage, cut to ``max_chars`` characters by ``fit``) + tail (the judge's question)

or, in ``conversation`` (context relevance's and faithfulness's conversation form), the next user turn of a given
conversation: its system prompt and first user turn (the QA agent's), then the question, nothing added in text mode

through the one output-mode ladder (``models.ladder``), as the served correctness judge (``judging.correctness.llm``) does,
in the order the checker is given (``served_tools``: ``text`` first, the quantity the judges' parameters were
fitted on; ``checker_for``'s default: ``SERVED_LADDER``). ``text`` asks for one word, and P(yes) comes from the
first token's ``top_logprobs`` (``llm.yes_no_masses``; the yes/no probability mass beside it), else from the word
(``llm.parse_yes_no``); ``tool`` / ``native`` / ``prompted`` ask for a ``YesNo`` object {reason, answer: yes|no}
(P(yes) = 1 or 0). Each mode gets ``judge.retries``
output retries; the ladder remembers the mode that worked. ``claims(question, answer)`` (and
``claims_from_model``) asks for a ``Claims`` object {claims: [str]}, the answer's atomic claims, in the structured
modes only; None when the model cannot give one (the judges then use their deterministic splitter), and for every
answer when it could not split ``PROBE``'s, asked once before the first.

Every request goes through the model-call cache (``models.chat.build_model`` -> ``models.cache.CachedModel``,
replayed first by the ladder), so a re-run makes no call; ``calls`` counts the questions that needed the server.
The API is synchronous (the judges run in worker threads): each checker runs its model on its own event loop in
a daemon thread (an anyio blocking portal), so the HTTP client stays on one loop whichever thread asks, also while
another event loop runs in the caller's process. Questions from several threads run at once on that loop, at most
``parallel`` (the run's ``concurrency``) in flight together; the judges ask the questions of one verdict (a claim
each, a passage each) at once through ``yesno.fan_out``. A server that cannot be reached is one ``EvaluationsError``
naming its URL; a question the server fails (an error status, a reply that is not the API's JSON, no usable
answer in any mode) is one ``CheckFailed`` naming the URL, which callers count as a failed row or case.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel

from evaluations.core.errors import EvaluationsError, JudgeFailed
from evaluations.judging.correctness.llm import embedded_judge_name, parse_yes_no, yes_no_masses
from evaluations.judging.basics.shipped import judge_file, read_judge_text
from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM, load_scorer
from evaluations.models.ladder import SERVED_LADDER, InvalidOutput, LadderFailed, OutputLadder, output_type

if TYPE_CHECKING:
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings

    from evaluations.core.config import Config, LLMModel

__all__ = ["CONVERSATION_CHARS", "FALLBACK_RUBRIC", "MAX_CHARS", "Claims", "CheckFailed", "ServedChecker", "YesNo",
           "checker_for",
           "claims_from_model", "embedded_checker", "judge_tools", "served_rubric", "served_tools"]

FALLBACK_RUBRIC = "reference_free_served.md"  # used while a judge ships no rubric of its own
MAX_CHARS = 6000  # characters of shared text (passage) + tail per question, ~1,500 tokens
#: characters of QA context, question and ask a conversation-form question may carry (``conversation``;
#: ``judging.basics.passages.opening``): about what a 2,048-token window (llama.cpp's and Ollama's default) holds of
#: English text with the system prompt. The RepliQA job's QA contexts of 5,600-8,000 characters fit it whole (its
#: longest QA request was 1,581 tokens); a QA context cut shorter than the QA's own makes the server read the
#: passages again
CONVERSATION_CHARS = 9000
STRUCTURED = "Give a short reason, then the answer: yes or no."
ONE_WORD = "Reply with one word: yes or no."
CLAIMS_INSTRUCTIONS = (
    "Split the answer to the question into atomic claims: short statements that each say one fact and can be read "
    "alone (name the subject instead of 'he', 'it' or 'this'). A bare value (a name, a number, a date) is one claim: "
    "write it as a sentence with the question's subject. Leave out filler such as 'Based on the context' and parts "
    "that only repeat the question. Give the claims as a list of strings."
)
#: the decomposition a served checker is asked before the first answer's (once per checker; cached like every
#: call): a model that cannot split this plain two-fact answer in any structured mode is asked for no other answer's
#: claims, and the judges split every answer with their deterministic splitter. A weak model otherwise pays the
#: failed modes on every answer: SmolLM2-135M behind llama.cpp's server, 7 requests of up to max_tokens each
#: (tool and prompted with their retries, native refused), and never one claim
PROBE = ("Where was Marie Curie born, and what did she win?", "Marie Curie was born in Warsaw and won a Nobel Prize.")
T = TypeVar("T")


class YesNo(BaseModel):
    """The structured reply to a yes/no question."""

    reason: str = ""
    answer: Literal["yes", "no"]


class Claims(BaseModel):
    """The structured decomposition of an answer."""

    claims: list[str]


class CheckFailed(JudgeFailed):
    """One question the served checker could not answer: every output mode failed (``failures``: (mode, error)
    in the order tried), or, with ``request`` True, the server answered the request with an error (an HTTP error
    status, a reply that is not the API's JSON; ``failures``: one ("request", error)). ``url``: the server's."""

    def __init__(self, failures: list[tuple[str, Exception]], *, url: str = "", request: bool = False):
        self.failures, self.url, self.request = failures, url, request
        at = f" at {url}" if url else ""
        what = (f"the model server{at} failed the request" if request
                else f"no output mode of the served checker{at} worked")
        super().__init__(f"{what}: " + "; ".join(str(error) if request else f"{mode}: {error}"
                                                 for mode, error in failures))


def _daemon_portal() -> Any:
    """An anyio blocking portal whose event loop runs on a daemon thread. (``anyio.from_thread.
    start_blocking_portal`` runs it on a ThreadPoolExecutor's thread, which the interpreter joins at exit: a process
    whose checker was never closed then hung after its command finished.)"""
    import queue

    import anyio
    from anyio.from_thread import BlockingPortal

    ready: queue.Queue[Any] = queue.Queue(maxsize=1)

    async def serve() -> None:
        async with BlockingPortal() as portal:
            ready.put(portal)
            await portal.sleep_until_stopped()

    threading.Thread(target=anyio.run, args=(serve,), name="served-checker", daemon=True).start()
    return ready.get()


class ServedChecker:
    """P(yes) of (passage, question) from a served chat model, with the YesNoScorer duck type (module docstring).

    ``model``: a pydantic-ai model, normally behind the call cache (``models.chat.build_model``); ``identity``:
    what names the model in ``id`` (provider, name, URL, sampling); ``where``/``url``: the config key and URL
    an unreachable-server error names."""

    def __init__(self, model: Model, rubric: str, *, identity: str, settings: ModelSettings | None = None,
                 retries: int = 2, modes: Sequence[str] = SERVED_LADDER, max_chars: int = MAX_CHARS,
                 logprobs: bool = True, url: str = "", where: str = "judge.model", parallel: int = 1,
                 conversation_chars: int = CONVERSATION_CHARS):
        self.model = model
        #: questions of one verdict the judges may ask at once (``yesno.fan_out``), and the most this checker has in
        #: flight at the server from all threads together: the run's concurrency
        self.parallel = max(1, parallel)
        self._in_flight: Any = None  # the anyio semaphore of ``parallel``, made on the portal's loop
        self.system = f"{PASSAGE_SYSTEM}\n\n{rubric.strip()}"
        self.settings: dict[str, Any] = dict(settings or {})
        self.retries = retries
        self.ladder = OutputLadder(modes)
        structured = [m for m in modes if m != "text"]
        self.claims_ladder = OutputLadder(structured) if structured else None
        self.max_chars = max_chars
        self.conversation_chars = conversation_chars  # the QA context a conversation carries (``conversation``)
        self.logprobs = logprobs
        self.url, self.where = url, where
        self.id = hashlib.sha256(json.dumps([identity, self.system, list(modes), max_chars]).encode()).hexdigest()[:16]
        self._calls = 0
        self._lock = threading.Lock()
        self._agents: dict[tuple[str, str], Any] = {}
        self._portal: Any = None
        self._probe_lock = threading.Lock()
        self._can_decompose: bool | None = None  # PROBE's answer split into claims: None until asked

    # -- the YesNoScorer duck type -----------------------------------------------------------------
    @property
    def calls(self) -> int:
        """Questions (yes/no or claims) this checker had to send to the server: 0 when all came from the cache."""
        return self._calls

    def fit(self, shared: str, tail: str) -> str:
        """``shared`` cut (at a space, from the end) so that shared + tail fit ``max_chars`` characters."""
        room = self.max_chars - len(tail)
        if len(shared) <= room:
            return shared
        cut = shared[: max(room - 6, 0)]
        cut = cut[: cut.rfind(" ")] if " " in cut else cut
        return cut + " ...\n\n"

    def probability(self, shared: str, tail: str) -> tuple[float, float]:
        """(P(yes), yes/no probability mass) of the question ``tail`` about ``shared`` (``fit`` to the budget)."""
        prompt = self.fit(shared, tail) + tail
        return self._sync(self.ladder, lambda mode: self._yes_no(mode, prompt))

    def conversation(self, system: str, prompt: str, question: str) -> tuple[float, float]:
        """(P(yes), yes/no probability mass) of ``question`` asked as the next user turn of a conversation whose
        system prompt is ``system`` and whose first user turn is ``prompt`` (no answer between them). Nothing is
        added to ``system`` in text mode, so a conversation that repeats another request's system and first turn
        (the QA agent's: ``pipeline.qa_agent``) is, on a server that keeps the last prompt's prefix (llama.cpp,
        Ollama), read only from ``question`` on."""
        return self._sync(self.ladder, lambda mode: self._yes_no(mode, question, history=(system, prompt)))

    def claims(self, question: str, answer: str) -> list[str] | None:
        """The model's atomic claims of ``answer`` (structured modes only); None when it cannot give them, or
        when it could not split ``PROBE``'s answer (asked once per checker, before the first answer)."""
        if self.claims_ladder is None or not self._decomposes():
            return None
        return self._claims_of(question, answer)

    def _decomposes(self) -> bool:
        """Whether the model split ``PROBE``'s answer into claims (asked once; a server failure is raised and the
        probe asked again at the next answer)."""
        with self._probe_lock:
            if self._can_decompose is None:
                self._can_decompose = self._claims_of(*PROBE) is not None
            return self._can_decompose

    def _claims_of(self, question: str, answer: str) -> list[str] | None:
        prompt = f"Question: {question.strip()}\nAnswer: {answer.strip()}"
        try:
            return self._sync(self.claims_ladder, lambda mode: self._claims(mode, prompt))
        except CheckFailed as failed:
            if failed.request:  # the server failed, not the model's output: the question fails
                raise
            return None

    def close(self) -> None:
        """Stop this checker's event loop thread (a later question starts a new one)."""
        with self._lock:
            portal, self._portal = self._portal, None
        if portal is not None:
            portal.call(portal.stop)

    # -- one question through the ladder, synchronously ---------------------------------------------
    def _sync(self, ladder: OutputLadder, attempt: Callable[[str], Awaitable[T]]) -> T:
        with self._lock:
            if self._portal is None:
                self._portal = _daemon_portal()
            portal = self._portal
        return portal.call(self._climb, ladder, attempt)

    async def _climb(self, ladder: OutputLadder, attempt: Callable[[str], Awaitable[T]]) -> T:
        from pydantic_ai.exceptions import ModelAPIError, ModelConnectionError

        from evaluations.models.cache import CachedModel

        import anyio

        if self._in_flight is None:  # made on the portal's one loop thread: no race
            self._in_flight = anyio.Semaphore(self.parallel)
        passes = 0

        def start() -> None:
            nonlocal passes
            passes += 1

        try:
            async with self._in_flight:
                result = await ladder.run(self.model, attempt, start)
        except LadderFailed as exc:
            raise CheckFailed(exc.failures, url=self.url) from exc
        except ModelConnectionError as exc:
            raise EvaluationsError(
                f"cannot reach the model server of the reference-free judges at {self.url} ({exc.message})",
                where=self.where,
                fix=f"start the server, or correct {self.where}; or use the built-in model (provider: embedded)",
            ) from None
        except ModelAPIError as exc:  # an HTTP error status after its retries, a reply that is not the API's JSON
            raise CheckFailed([("request", exc)], url=self.url, request=True) from exc
        finally:
            replayable = isinstance(self.model, CachedModel) and self.model.cache is not None
            if passes > 1 or (passes == 1 and not replayable):
                self._calls += 1  # the portal's loop runs one coroutine step at a time: no lock needed
        return result

    def _agent(self, kind: str, mode: str, system: str | None = None) -> Any:
        """The agent of one kind of question in one output mode; ``system``: a conversation's own system prompt
        (``conversation``), kept as it is in text mode."""
        from pydantic_ai import Agent

        key = (kind, mode) if system is None else (kind, mode, system)
        if key not in self._agents:
            if kind == "claims":
                schema, instructions = Claims, CLAIMS_INSTRUCTIONS
            elif system is not None:
                schema, instructions = YesNo, system if mode == "text" else f"{system}\n\n{STRUCTURED}"
            else:
                line = ONE_WORD if mode == "text" else STRUCTURED
                schema, instructions = YesNo, self.system if self.system.endswith(line) else f"{self.system}\n\n{line}"
            self._agents[key] = Agent(self.model, output_type=output_type(mode, schema),
                                      instructions=instructions, retries=self.retries)
        return self._agents[key]

    async def _yes_no(self, mode: str, prompt: str, history: tuple[str, str] | None = None) -> tuple[float, float]:
        """P(yes) and mass of ``prompt`` in ``mode``; ``history``: (system, first user turn) of a conversation
        ``prompt`` continues (``conversation``)."""
        agent = self._agent("yesno", mode, None if history is None else history[0])
        earlier: dict[str, Any] = {}
        if history is not None:
            from pydantic_ai.messages import ModelRequest, UserPromptPart

            earlier["message_history"] = [ModelRequest(parts=[UserPromptPart(content=history[1])])]
        if mode != "text":
            result = await agent.run(prompt, model_settings=dict(self.settings), **earlier)
            return float(result.output.answer == "yes"), 1.0
        from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior

        from evaluations.models.retry import rejects_request

        settings = dict(self.settings, max_tokens=4)
        if self.logprobs:
            settings.update(openai_logprobs=True, openai_top_logprobs=10)
        try:
            result = await agent.run(prompt, model_settings=settings, **earlier)
        except ModelHTTPError as exc:
            if not self.logprobs or not rejects_request(exc.status_code, str(exc.body or "")):
                raise
            settings.pop("openai_logprobs"), settings.pop("openai_top_logprobs")  # the server refuses logprobs
            result = await agent.run(prompt, model_settings=settings, **earlier)
        logprobs = (getattr(result.all_messages()[-1], "provider_details", None) or {}).get("logprobs")
        masses, word = yes_no_masses(logprobs), parse_yes_no(result.output)
        if masses is not None and sum(masses) > 0:
            return masses[0] / sum(masses), float(sum(masses))
        if word is None:
            raise UnexpectedModelBehavior(f"the checker replied {result.output[:80]!r}, neither yes nor no")
        return float(word), 1.0

    async def _claims(self, mode: str, prompt: str) -> list[str]:
        result = await self._agent("claims", mode).run(prompt, model_settings=dict(self.settings))
        claims = list(dict.fromkeys(c.strip() for c in result.output.claims if c.strip()))
        if not claims:
            raise InvalidOutput("the model gave no claim")
        return claims


# -- building -------------------------------------------------------------------------------------
def served_rubric(judge: str | None = None) -> str:
    """The served rubric of ``judge`` (judges/<judge>.md when shipped), else judges/reference_free_served.md."""
    name = f"{judge}.md" if judge else FALLBACK_RUBRIC
    return read_judge_text(name if judge and judge_file(name).is_file() else FALLBACK_RUBRIC)


_checkers: dict[str, ServedChecker] = {}
_checkers_lock = threading.Lock()


def _url(model_cfg: LLMModel, config: Config, key: str) -> tuple[str, str]:
    """(the server's URL, the config key it comes from, or the environment variable: ``Config.origin``)."""
    from evaluations.models.chat import describe_model

    url = describe_model(model_cfg, config)["base_url"] or ""
    if model_cfg.provider == "openai" and model_cfg.base_url:
        return url, f"{key}.base_url"
    return url, config.origin(f"providers.{model_cfg.provider}.base_url")


def checker_for(model_cfg: LLMModel, config: Config, *, judge: str | None = None, key: str = "judge.model",
                modes: Sequence[str] = SERVED_LADDER, max_chars: int = MAX_CHARS, check: bool = True) -> Any:
    """The yes/no checker of ``model_cfg`` for ``judge`` ("faithfulness", "context_relevance"; its rubric, see
    ``served_rubric``): ``yesno.load_scorer(PASSAGE_SYSTEM, name)`` for provider ``embedded`` (the default judge
    model unless ``name`` is set), else a ``ServedChecker`` (one per model, rubric, cache and settings in a process;
    ``check``: the server is asked first whether it serves the model, ``models.chat.check_model``)."""
    if model_cfg.provider == "embedded":
        return load_scorer(PASSAGE_SYSTEM, embedded_judge_name(model_cfg), data_dir=config.data_dir())
    from evaluations.models.chat import build_model, check_model, describe_model, model_settings

    rubric = served_rubric(judge)
    identity = json.dumps(describe_model(model_cfg, config), sort_keys=True)
    cache = str(config.cache_path()) if config.cache.enabled else ""
    fingerprint = json.dumps([identity, rubric, cache, config.judge.retries, config.requests.model_dump(mode="json"),
                              key, list(modes), max_chars, config.evaluation.concurrency])
    with _checkers_lock:
        checker = _checkers.get(fingerprint)
        if checker is None:
            if check:
                check_model(model_cfg, config, key=key)
            url, where = _url(model_cfg, config, key)
            checker = ServedChecker(build_model(model_cfg, config), rubric, identity=identity,
                                    settings=model_settings(model_cfg), retries=config.judge.retries, modes=modes,
                                    max_chars=max_chars, url=url, where=where, parallel=config.evaluation.concurrency)
            _checkers[fingerprint] = checker
        return checker


def claims_from_model(question: str, answer: str, model_cfg: LLMModel, config: Config) -> list[str] | None:
    """A served model's atomic claims of ``answer`` (structured output); None for the embedded provider or when
    the model cannot give structured output (the caller then uses the deterministic splitter)."""
    if model_cfg.provider == "embedded":
        return None
    return checker_for(model_cfg, config).claims(question, answer)


def served_tools(config: Config, judge: str) -> tuple[Any, Callable[[str, str], list[str] | None] | None]:
    """(checker, claim decomposition) of ``judge`` ("faithfulness", "context_relevance") on ``judge.model`` when
    it is a served model (provider ollama/openai), else (None, None): the embedded model and the deterministic
    splitter. The served checker asks in text mode first (P(yes) from the first token's logprobs, the quantity the
    judges' parameters were fitted on), then falls back down the ladder's structured modes (P(yes) 1 or 0); an
    unreachable server is an error here, before any question."""
    model = config.judge.model
    if model is None or model.provider == "embedded":
        return None, None
    modes = ("text", *(m for m in SERVED_LADDER if m != "text"))
    checker = checker_for(model, config, judge=judge, modes=modes)
    return checker, checker.claims  # its claims ladder is the structured modes, as claims_from_model's checker's


class _Deferred:
    """``judge_tools``'s embedded scorer, loaded at its first use (a run builds its judges before any case)."""

    def __init__(self, config: Config, judge: str):
        self._config, self._judge = config, judge
        self._scorer: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # only for what the proxy itself lacks: the scorer's public attributes
        if name.startswith("_"):  # the proxy's own (before __init__ ran: copy, pickle) and dunder lookups
            raise AttributeError(name)
        with self._lock:
            if self._scorer is None:
                self._scorer = judge_tools(self._config, self._judge)[0]
        return getattr(self._scorer, name)


def embedded_checker(config: Config, judge: str) -> Any:
    """The embedded yes/no scorer a run's ``judge`` asks when ``judge.model`` is not served: the model
    ``judge.model.name`` names (default: the embedded judge) under the config's ``storage.data_dir``, as the judge
    commands (``judge_tools``) and the run's metadata (``reference_free_judge``) say; loaded at its first use."""
    return _Deferred(config, judge)


def judge_tools(config: Config, judge: str) -> tuple[Any, Callable[[str, str], list[str] | None] | None]:
    """(checker, claim decomposition) of ``judge`` on ``judge.model`` for the judge commands (judge-agreement,
    calibrate-judge): ``served_tools`` for a served model; for the embedded provider (or none) the embedded scorer
    of ``judge.model.name`` (default: the embedded judge) under the config's ``storage.data_dir``, and the
    deterministic splitter (None)."""
    from evaluations.core.config import LLMModel

    model = config.judge.model
    if model is None or model.provider == "embedded":
        return checker_for(model or LLMModel(provider="embedded"), config, judge=judge), None
    return served_tools(config, judge)
