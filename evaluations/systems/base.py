"""The system-under-test contract.

Request ``{"query": str, "k": int, "case_id": str}``; response
``{"retrieved": [{"id", "text"?, "score"?}], "answer"?: str, "usage"?: {"input_tokens", "output_tokens"},
"model"?: str, "tier"?: str, "confidence"?: float, "latency_ms"?: {"embed", "retrieve", "rerank", "llm"}}``.
Everything is optional but ``retrieved`` (or ``answer`` for answer-only evaluation). ``retrieved`` is ranked
best first; ``score`` is used for the trec_eval tie rule when given.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field


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

    input_tokens: int = 0
    output_tokens: int = 0


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
