"""The answer side of a run: the QA agent, the judges and what gets recorded about them.

``build_qa_plan(config)`` builds everything from the config (``qa.model``, ``judge.*``) without
contacting any server; ``QAPlan.check()`` verifies every configured server before the run starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import Config
from ..judges.evaluators import (
    Containment,
    ExactMatch,
    JudgeAgreement,
    KeywordOverlap,
    OfflineJudge,
    SemanticSimilarity,
    TokenF1,
)
from .agent import build_qa_agent
from .evaluators import ContextWaste, Coverage
from .models import build_model, check_model, describe_model, model_settings


@dataclass
class QAPlan:
    agent: Any
    evaluators: list
    report_evaluators: list
    metadata: dict[str, Any]
    primary_judge: str  # the verdict used for "tokens per correct answer"
    price: tuple[float, float] = (0.0, 0.0)  # USD per 1M input / output tokens of the QA model
    max_concurrency: int | None = None  # the in-process model runs one generation at a time
    max_context_chars: int | None = None
    checks: list[Callable[[], None]] = field(default_factory=list)

    def check(self) -> None:
        for check in self.checks:
            check()


def build_qa_plan(config: Config) -> QAPlan:
    qa_model = config.qa.model
    agent = build_qa_agent(build_model(qa_model, config), model_settings(qa_model))
    evaluators: list = [
        KeywordOverlap(threshold=config.judge.keyword_threshold), TokenF1(), ExactMatch(), Containment(),
        SemanticSimilarity(cache=config.cache.enabled), OfflineJudge(cache=config.cache.enabled),
        Coverage(), ContextWaste(),
    ]
    checks = [lambda: check_model(qa_model, config, key="qa.model")]
    metadata: dict[str, Any] = {"qa_model": describe_model(qa_model, config), "judge_model": None}
    primary = "offline_correct"
    judge_model = config.judge.model
    if judge_model is not None:
        from ..judges.llm import describe_judge, judge_check, llm_judge

        evaluators.append(llm_judge(judge_model, config))  # provider embedded: judges.embedded.EmbeddedLLMJudge
        checks.append(judge_check(judge_model, config))
        metadata["judge_model"] = describe_judge(judge_model, config)
        primary = "llm_judge"
    price = config.prices.get(f"{qa_model.provider}:{qa_model.name}")
    return QAPlan(agent=agent, evaluators=evaluators, report_evaluators=[JudgeAgreement()], metadata=metadata,
                  primary_judge=primary, price=(price.input, price.output) if price else (0.0, 0.0), checks=checks,
                  max_concurrency=1 if qa_model.provider == "embedded" else None,
                  max_context_chars=config.qa.context_chars())
