"""The QA agent: answer a question from retrieved chunks only, citing their ids.

``build_qa_agent(model)`` -> a pydantic-ai ``Agent`` whose output is ``evaluations.types.Answer`` (validated; a
malformed reply is sent back to the model up to ``OUTPUT_RETRIES`` times, then the run raises and the caller counts
the case as failed). ``answer_question`` runs it on one question and returns the answer and the token usage.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ..types import Answer, RetrievedChunk

OUTPUT_RETRIES = 2

INSTRUCTIONS = (
    "Answer the question using only the context below. "
    "Each context passage starts with its id in square brackets; put the ids of the passages you used in "
    "cited_ids. If the context does not contain the answer, answer \"I don't know\" with confidence 0. "
    "Keep the answer short."
)


def build_qa_agent(model: Model | str, model_settings: ModelSettings | None = None) -> Agent[None, Answer]:
    """The QA agent: output ``Answer`` (answer, cited_ids, confidence 0-1), instructions ``INSTRUCTIONS``."""
    return Agent(
        model,
        output_type=Answer,
        instructions=INSTRUCTIONS,
        model_settings=model_settings,
        retries={"output": OUTPUT_RETRIES},
        name="qa",
    )


def format_context(chunks: list[RetrievedChunk], max_chars: int | None = None) -> str:
    """The chunks as one context string, each as ``[chunk_id] text``, in rank order.

    ``max_chars`` bounds the total length: whole chunks are kept while they fit, the first chunk that does not is
    cut to the remaining room (and the rest dropped), so the best-ranked text always survives.
    """
    blocks: list[str] = []
    used = 0
    for chunk in chunks:
        block = f"[{chunk.chunk_id}] {' '.join(chunk.text.split())}"
        sep = 2 if blocks else 0  # the blank line joining blocks
        if max_chars is not None and used + sep + len(block) > max_chars:
            room = max_chars - used - sep
            if room > len(chunk.chunk_id) + 3:
                blocks.append(block[:room])
            break
        blocks.append(block)
        used += sep + len(block)
    return "\n\n".join(blocks)


def _prompt(question: str, context: str) -> str:
    return f"Context:\n{context}\n\nQuestion: {question}"


async def answer_question(
    agent: Agent[None, Answer], question: str, chunks: list[RetrievedChunk], max_chars: int | None = None
) -> tuple[Answer, dict[str, int]]:
    """Run ``agent`` on ``question`` with ``chunks`` as context.

    Returns the validated ``Answer`` and usage ``{"input_tokens", "output_tokens", "requests"}`` summed over the
    run (retries included). Raises when the model's output is still invalid after the retries.
    """
    result = await agent.run(_prompt(question, format_context(chunks, max_chars)))
    usage = result.usage
    return result.output, {
        "input_tokens": usage.input_tokens or 0,
        "output_tokens": usage.output_tokens or 0,
        "requests": usage.requests or 0,
    }
