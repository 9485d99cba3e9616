"""The system-under-test contract.

Request ``{"query": str, "k": int, "case_id": str}``; response
``{"retrieved": [{"id", "text"?, "score"?}], "answer"?: str, "usage"?: {"input_tokens", "output_tokens"},
"model"?: str, "tier"?: str, "confidence"?: float, "latency_ms"?: {"embed", "retrieve", "rerank", "llm"}}``.
Everything is optional but ``retrieved`` (or ``answer`` for answer-only evaluation). ``retrieved`` is ranked
best first, and its order is the ranking the metrics score: ``score``, when given, is recorded as returned (a
similarity or a distance), never used to reorder the list (a list whose scores rise is counted and warned about,
``results.summary.rising_scores``). ``usage`` also takes OpenAI's names (``prompt_tokens``,
``completion_tokens``); a ``usage`` with neither pair is an error, never 0 tokens.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator


class SystemRequest(BaseModel):
    query: str
    k: int
    case_id: str


class RetrievedItem(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    text: str = ""
    score: float | None = None


class SystemUsage(BaseModel):
    model_config = ConfigDict(extra="allow")

    input_tokens: int = Field(0, validation_alias=AliasChoices("input_tokens", "prompt_tokens"))
    output_tokens: int = Field(0, validation_alias=AliasChoices("output_tokens", "completion_tokens"))

    @model_validator(mode="before")
    @classmethod
    def _counts_given(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.keys() & {"input_tokens", "prompt_tokens", "output_tokens",
                                                         "completion_tokens"}:
            raise ValueError(f"usage has no token counts (keys: {sorted(map(str, data))[:6]}): give input_tokens "
                             "and output_tokens (or prompt_tokens and completion_tokens), or leave usage out")
        return data


class SystemResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    retrieved: list[RetrievedItem] = Field(default_factory=list)
    answer: str | None = None
    usage: SystemUsage | None = None
    model: str | None = None
    tier: str | None = None
    confidence: float | None = None
    latency_ms: dict[str, float] | None = None


class System(Protocol):
    """Anything awaitable per request. ``id`` names it in run metadata."""

    id: str

    async def __call__(self, request: SystemRequest) -> SystemResponse: ...
