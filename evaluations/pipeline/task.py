"""The pydantic-evals task: one case through the system under test, each stage failing on its own.

Stages and what a failure does:
- retrieval (the built-in LanceDB retriever, or a user's system call): raises -> pydantic-evals records a
  ``ReportCaseFailure`` (``status: failed``, counted in ``counts.failed``);
- answer (the QA agent): caught here -> the case keeps its ranked documents, scores and retrieval metrics,
  and records ``qa_status: failed``, the error and the raw model text (what the model actually said);
- judges: evaluator failures, recorded per case by pydantic-evals (``counts.judge_failed``).

Latency stages (ms) land on ``CaseOutput.latency_ms`` and as pydantic-evals case metrics (``<stage>_ms``):
``embed`` (query embedding, the query's share of the batch), ``retrieve`` (vector + BM25 + fusion),
``llm`` (QA agent call), ``total``; a stage that did not run is not recorded (no reranker: no ``rerank``; no QA
agent: no ``llm``), never as 0 ms. A user's system may report its own stages (``latency_ms`` in its response; a
stage it does not report is not recorded); otherwise its call's wall time is ``retrieve`` and ``total``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic_evals.dataset import increment_eval_metric

from evaluations.results.records import STAGES, SYSTEM_ANSWER
from evaluations.core.context import format_context, select_context
from evaluations.systems.base import System, SystemRequest, SystemResponse
from evaluations.core.types import Answer, CaseOutput, RetrievalInputs, RetrievedChunk



def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" (caused by {type(cause).__name__}: {cause})"
    return text[:2000]


def _from_system(response: SystemResponse, texts: Mapping[str, str] | None = None
                 ) -> tuple[list[str], list[float | None], list[RetrievedChunk]]:
    """A system's ranked items -> (documents in the list's order, a document returned twice at its first rank;
    their scores as returned, None where none was given; the chunks). The list is the ranking (``systems.base``):
    a score is recorded, never used to reorder. An item without text gets the corpus document's (``texts``, by id),
    so the QA agent reads what the system found."""
    first: dict[str, float | None] = {}
    chunks: list[RetrievedChunk] = []
    for item in response.retrieved:
        first.setdefault(item.id, item.score)
        chunk = RetrievedChunk(chunk_id=item.id, doc_id=item.id, text=item.text or "", score=item.score)
        chunks.append(chunk.model_copy(update={"text": chunk.text_or_corpus(texts)}))
    return list(first), list(first.values()), chunks


@dataclass
class RagTask:
    retriever: Any | None = None  # index.search.Retriever: the built-in pipeline
    agent: Any | None = None  # a pydantic-ai Agent[None, Answer]; None skips QA
    max_context_chars: int | None = None
    context_limit: int = 5  # chunks of a user system's results given to the QA agent
    system: System | None = None  # a user's system under test (replaces the retriever)
    texts: Mapping[str, str] | None = None  # corpus text by id, for a system's items returned without text
    k: int = 100
    ladder: Any | None = None  # the QA agent's output-mode ladder (models.ladder), made on the first answer
    # where ``run_case`` runs: None here; ``--executor ray``: a pool of Ray actors (pipeline.ray_executor)
    remote: Callable[[RetrievalInputs], Awaitable[tuple[CaseOutput, dict[str, float]]]] | None = None

    async def _retrieve(self, inputs: RetrievalInputs, output: CaseOutput, latency: dict[str, float]) -> None:
        if self.system is not None:
            t0 = time.perf_counter()
            response = await self.system(SystemRequest(query=inputs.query, k=self.k, case_id=inputs.case_id))
            wall = (time.perf_counter() - t0) * 1000
            output.documents, output.scores, chunks = _from_system(response, self.texts)
            output.chunks = output.retrieved_chunks = chunks[: self.context_limit]
            reported = response.latency_ms or {}
            for stage in STAGES[:-1]:  # every stage but the total, which is measured here: a stage the system did
                if stage in reported:  # not report is not recorded (it is unknown, not 0 ms)
                    latency[stage] = float(reported[stage])
                else:
                    latency.pop(stage, None)
            if not reported:
                latency["retrieve"] = wall
            if "total" in reported:
                latency["total"] = float(reported["total"])
            output.tier, output.model = response.tier, response.model
            if response.answer is not None:
                output.answer = Answer(answer=response.answer, confidence=response.confidence)
                output.qa_status, output.qa_mode = "ok", SYSTEM_ANSWER
                output.context_text = format_context(output.chunks)
                if response.usage is not None:
                    output.usage = {"input_tokens": response.usage.input_tokens,
                                    "output_tokens": response.usage.output_tokens, "requests": 1}
            return
        retrieval = await anyio.to_thread.run_sync(self.retriever.retrieve, inputs.query)
        latency["embed"] = retrieval.latency_ms.get("embed", 0.0)
        latency["retrieve"] = retrieval.latency_ms.get("retrieve", 0.0)
        output.documents, output.scores, output.chunks = retrieval.documents, retrieval.scores, retrieval.chunks
        output.retrieved_chunks = list(retrieval.chunks)
        # embed and the vector search are amortised from the batch: this case's share counts in its total
        latency["_batch"] = latency["embed"] + retrieval.latency_ms.get("vector", 0.0)

    async def _answer(self, inputs: RetrievalInputs, output: CaseOutput, latency: dict[str, float]) -> None:
        from evaluations.pipeline.qa_agent import QAFailed, answer_question, qa_ladder

        output.chunks = select_context(output.chunks, self.max_context_chars)
        output.context_text = format_context(output.chunks)
        t0 = time.perf_counter()
        try:
            self.ladder = self.ladder or qa_ladder(self.agent)  # one per run: it remembers the mode that worked
            result = await answer_question(self.agent, inputs.query, output.chunks, ladder=self.ladder)
        except QAFailed as exc:  # every output mode failed: keep what the model said
            output.qa_status, output.qa_error = "failed", _error_text(exc)
            output.raw_text, output.usage = exc.raw_text or None, dict(exc.usage)
        except Exception as exc:  # any other failure of the answer stage: retrieval stays, the failure is recorded
            output.qa_status, output.qa_error = "failed", _error_text(exc)
        else:
            output.answer, output.usage, output.qa_status = result.answer, dict(result.usage), "ok"
            output.qa_mode, output.raw_text = result.mode, result.raw_text or None
        latency["llm"] = (time.perf_counter() - t0) * 1000

    async def run_case(self, inputs: RetrievalInputs) -> tuple[CaseOutput, dict[str, float]]:
        """One case through the system: its output and the pydantic-evals case metrics it gives (token counts
        when the QA agent ran, ``<stage>_ms``). A Ray worker runs this; ``__call__`` records the metrics."""
        started = time.perf_counter()
        latency: dict[str, float] = {}  # the stages that ran
        output = CaseOutput()
        metrics: dict[str, float] = {}
        await self._retrieve(inputs, output, latency)
        if self.agent is not None and output.answer is None:
            await self._answer(inputs, output, latency)
            metrics.update({key: output.usage.get(key, 0) for key in ("input_tokens", "output_tokens")})
        batch = latency.pop("_batch", 0.0)
        if not latency.get("total"):
            latency["total"] = (time.perf_counter() - started) * 1000 + batch
        output.latency_ms = latency
        metrics.update({f"{stage}_ms": value for stage, value in latency.items()})
        return output, metrics

    async def __call__(self, inputs: RetrievalInputs) -> CaseOutput:
        output, metrics = await (self.remote or self.run_case)(inputs)
        if self.system is not None and self.texts is not None:  # a system whose ids are not the corpus's
            output.unknown_ids = [d for d in output.documents if d not in self.texts]
        for name, value in metrics.items():
            increment_eval_metric(name, value)
        return output
