"""The pydantic-evals task: retrieve for one question, optionally answer it, record latency by stage.

Latency stages (ms) land on the returned ``CaseOutput.latency_ms`` and as pydantic-evals case
metrics (``<stage>_ms``): ``embed`` (query embedding, the query's share of the batch),
``retrieve`` (vector + BM25 + fusion), ``rerank`` (0: no reranker), ``llm`` (QA agent call),
``total``. Token usage of the QA call lands in ``usage`` and as ``input_tokens``/``output_tokens``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic_evals.dataset import increment_eval_metric

from .index.search import Retriever
from .types import CaseOutput, RetrievalInputs

STAGES = ("embed", "retrieve", "rerank", "llm", "total")


@dataclass
class RagTask:
    retriever: Retriever
    agent: Any | None = None  # a pydantic-ai Agent[None, Answer]; None skips QA
    max_context_chars: int | None = None

    async def __call__(self, inputs: RetrievalInputs) -> CaseOutput:
        started = time.perf_counter()
        retrieval = await anyio.to_thread.run_sync(self.retriever.retrieve, inputs.query)
        latency = {
            "embed": retrieval.latency_ms.get("embed", 0.0),
            "retrieve": retrieval.latency_ms.get("retrieve", 0.0),
            "rerank": 0.0,
            "llm": 0.0,
        }
        output = CaseOutput(documents=retrieval.documents, scores=retrieval.scores, chunks=retrieval.chunks)
        if self.agent is not None:
            from .qa.agent import answer_question

            t0 = time.perf_counter()
            answer, usage = await answer_question(self.agent, inputs.query, retrieval.chunks,
                                                  max_chars=self.max_context_chars)
            latency["llm"] = (time.perf_counter() - t0) * 1000
            output.answer = answer
            output.usage = usage
            for key in ("input_tokens", "output_tokens"):
                increment_eval_metric(key, usage.get(key, 0))
        # embed is amortised from the batch, so total = this case's own work + its share of the batch
        latency["total"] = (time.perf_counter() - started) * 1000 + latency["embed"] + \
            retrieval.latency_ms.get("vector", 0.0)
        output.latency_ms = latency
        for stage, value in latency.items():
            increment_eval_metric(f"{stage}_ms", value)
        return output
