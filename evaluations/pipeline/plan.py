"""The answer side of a run: the QA agent, the judges and what gets recorded about them.

``build_qa_plan(config)`` builds everything from the config (``qa.model``, ``judge.*``) without
contacting any server; ``QAPlan.check()`` verifies every configured server before the run starts.

The primary judge (the verdict behind "answer accuracy" and "tokens per correct answer", ``choose_primary``):
``judge.primary`` when set (it must be a verdict the run computes); else, of the correctness judges the run
computes whose shipped validation describes the judge this config runs (``VERDICTS``), the one that validates
best on weak *and* strong answers (``judging.validation.validation.best_judge``: highest min(weak, strong) held-out
accuracy); else, when none is validated, the first the run computes in ``VERDICTS`` order (the LLM judge when
one runs, else ``offline_correct``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from evaluations.core.config import Config, LLMModel, Price
from evaluations.core.errors import EvaluationsError
from evaluations.evaluators.answers import (
    Containment,
    ExactMatch,
    JudgeAgreement,
    KeywordOverlap,
    OfflineJudge,
    SemanticSimilarity,
    TokenF1,
)
from evaluations.judging.validation.validation import Validation, best_judge, load_validation
from evaluations.pipeline.qa_agent import build_qa_agent
from evaluations.evaluators.context import ContextWaste, Coverage
from evaluations.models.chat import build_model, check_model, describe_model, model_settings

#: host names of the user's own machine or network (besides loopback and private addresses, and one-label names
#: such as a compose service ``ollama``)
_LOCAL_SUFFIXES = (".local", ".lan", ".internal", ".home.arpa", ".localhost")


def runs_locally(model: LLMModel, config: Config) -> bool:
    """The model runs on the user's hardware: the embedded model, or an Ollama model served from this machine or
    its network (loopback or private address, ``localhost``, a one-label or ``.local``/``.lan``/``.internal``
    host) that is not one of Ollama's cloud models (a ``…cloud`` tag, run by ollama.com through the local
    server). A remote Ollama (another company's server, ollama.com) may charge, so it is not assumed free."""
    if model.provider == "embedded":
        return True
    if model.provider != "ollama" or model.name.rsplit(":", 1)[-1].endswith("cloud"):
        return False
    host = (urlsplit(config.providers.ollama.base_url).hostname or "").lower().rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith(_LOCAL_SUFFIXES)
    return address.is_loopback or address.is_private or address.is_link_local


def _always(config: Config) -> bool:
    return True


def _llm_judge_runs(config: Config) -> bool:
    return config.judge.model is not None


def _embedded_default_judge(config: Config) -> bool:
    """The LLM judge is the embedded default model: the one ``judges/validation.json`` (and the combined judge's
    fit) describe; a served judge or another embedded model shares the verdict name, not the validation."""
    model = config.judge.model
    if model is None or model.provider != "embedded":
        return False
    from evaluations.judging.correctness.embedded import DEFAULT_JUDGE
    from evaluations.judging.correctness.llm import embedded_judge_name

    return embedded_judge_name(model) == DEFAULT_JUDGE


def _combined_judge_runs(config: Config) -> bool:
    """The embedded LLM judge also gives ``combined_correct`` when ``judges/combined_judge.json`` is shipped."""
    model = config.judge.model
    if model is None or model.provider != "embedded":
        return False
    from evaluations.judging.correctness.embedded import combined_params_path

    return combined_params_path().is_file()


@dataclass(frozen=True)
class Verdict:
    """A correctness verdict a run may compute: ``computed(config)`` — this config's run computes it;
    ``validated(config)`` — the judge this config runs is the one its validation entry describes; ``default`` —
    it may be the primary judge without ``judge.primary``."""

    name: str
    computed: Callable[[Config], bool]
    validated: Callable[[Config], bool]
    default: bool = True


#: every verdict a run may compute, in order of preference when none is validated (and on equal validation)
VERDICTS: tuple[Verdict, ...] = (
    Verdict("llm_judge", _llm_judge_runs, _embedded_default_judge),
    Verdict("combined_correct", _combined_judge_runs, _embedded_default_judge),
    Verdict("offline_correct", _always, _always),
    Verdict("keyword_correct", _always, _always, default=False),
    Verdict("exact_match", _always, _always, default=False),
    Verdict("contains_gold", _always, _always, default=False),
)


@dataclass(frozen=True)
class PrimaryChoice:
    name: str
    chosen_by: str  # for people: how it was chosen
    validation: dict[str, Any] | None  # its entry of judges/validation.json (JudgeValidation); None: not validated


def choose_primary(config: Config, validation: Validation | None = None) -> PrimaryChoice:
    """The primary judge of a run with ``config`` (module docstring); ``validation`` defaults to the shipped file."""
    validation = validation if validation is not None else load_validation()
    computed = [v for v in VERDICTS if v.computed(config)]
    validated = [v.name for v in computed if v.validated(config)]
    forced = config.judge.primary
    if forced is not None:
        if forced not in [v.name for v in computed]:
            raise EvaluationsError(
                f"{forced!r} is not a verdict this run computes", where="judge.primary",
                fix="choose one of " + ", ".join(v.name for v in computed) + " (llm_judge needs judge.model or "
                    "--judge; combined_correct the embedded judge), or remove judge.primary")
        name, how = forced, "judge.primary"
    elif (best := best_judge([v.name for v in computed if v.default and v.name in validated], validation)) is not None:
        name, how = best, "validates best: highest min(weak, strong) accuracy in judges/validation.json"
    else:
        name = next(v.name for v in computed if v.default)
        how = "no judge of this run is validated: the LLM judge when one runs, else offline_correct"
    entry = validation.judges.get(name) if name in validated else None
    return PrimaryChoice(name, how, entry.model_dump(mode="json") if entry is not None else None)


@dataclass
class QAPlan:
    agent: Any
    evaluators: list
    report_evaluators: list
    metadata: dict[str, Any]
    primary_judge: str  # the verdict behind "answer accuracy" and "tokens per correct answer" (choose_primary)
    # USD per 1M input / output tokens of the QA model; None: unknown (a served model the config does not price)
    price: tuple[float, float] | None = (0.0, 0.0)
    max_concurrency: int | None = None  # the in-process model runs one generation at a time
    max_context_chars: int | None = None
    checks: list[Callable[[], None]] = field(default_factory=list)
    primary_validation: dict[str, Any] | None = None  # the primary judge's validation entry (None: not validated)
    primary_chosen_by: str | None = None

    def check(self) -> None:
        for check in self.checks:
            check()


def build_qa_plan(config: Config) -> QAPlan:
    qa_model = config.qa.model
    agent = build_qa_agent(build_model(qa_model, config), model_settings(qa_model))
    evaluators: list = [
        KeywordOverlap(threshold=config.judge.keyword_threshold), TokenF1(), ExactMatch(), Containment(),
        SemanticSimilarity(cache=config.cache.enabled, cache_dir=str(config.judge_cache_dir())),
        OfflineJudge(cache=config.cache.enabled, cache_dir=str(config.judge_cache_dir())),
        Coverage(), ContextWaste(),
    ]
    checks = [lambda: check_model(qa_model, config, key="qa.model")]
    metadata: dict[str, Any] = {"qa_model": describe_model(qa_model, config), "judge_model": None}
    primary = choose_primary(config)
    judge_model = config.judge.model
    if judge_model is not None:
        from evaluations.evaluators.llm_judges import llm_judge
        from evaluations.judging.correctness.llm import describe_judge, judge_check

        evaluators.append(llm_judge(judge_model, config))  # embedded: llm_judges.EmbeddedLLMJudge
        checks.append(judge_check(judge_model, config))
        metadata["judge_model"] = describe_judge(judge_model, config)
    price = config.prices.get(f"{qa_model.provider}:{qa_model.name}")
    if price is None and runs_locally(qa_model, config):
        price = Price()  # a model on the user's hardware: no per-token charge unless the config prices it
    return QAPlan(agent=agent, evaluators=evaluators, report_evaluators=[JudgeAgreement()], metadata=metadata,
                  primary_judge=primary.name, primary_validation=primary.validation,
                  primary_chosen_by=primary.chosen_by, price=(price.input, price.output) if price else None,
                  checks=checks,
                  max_concurrency=1 if qa_model.provider == "embedded" else None,
                  max_context_chars=config.qa.context_chars())
