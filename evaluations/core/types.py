"""Plain data types shared by adapters, index, task, evaluators and reports.

Data flows one way: adapters -> cases -> task -> evaluators -> reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field


@dataclass(frozen=True, slots=True)
class Document:
    """One corpus document. ``id`` is the id qrels refer to."""

    id: str
    text: str
    title: str = ""


@dataclass(slots=True)
class Query:
    """One evaluation query.

    relevant: graded relevance {doc_id: grade}; grade > 0 means relevant.
    answers: gold answers (alternatives), empty when the dataset has none.
    answerable: False when the gold says the answer is not in the corpus.
    """

    id: str
    text: str
    relevant: dict[str, int] = field(default_factory=dict)
    answers: list[str] = field(default_factory=list)
    answerable: bool = True
    tags: list[str] = field(default_factory=list)  # segments: "category:x", "difficulty:y", "topic:z", …


@dataclass(slots=True)
class Corpus:
    """What an adapter yields: the documents to index and the queries to evaluate."""

    name: str
    documents: list[Document]
    queries: list[Query]
    source: str = ""  # where it was read from (path or hub id), for the report
    #: what the adapter accepted but a user should know (empty documents, judgements of absent ids): the run's
    #: summary.json ``warnings`` and its console say them
    warnings: list[str] = field(default_factory=list)


class RetrievalInputs(BaseModel):
    """Inputs of one case: the question (and the case id, passed to a user's system)."""

    query: str
    case_id: str = ""


class CaseMetadata(BaseModel):
    """Metadata of one case: the gold standard."""

    query_id: str
    relevant: dict[str, int] = Field(default_factory=dict)
    answers: list[str] = Field(default_factory=list)
    answerable: bool = True
    label: bool | None = None  # human reference-correctness label, when the data carries one
    tags: list[str] = Field(default_factory=list)


def corpus_text(text: str | None, texts: Mapping[str, str] | None, *ids: str) -> str:
    """``text`` when it is not empty or whitespace only, else the corpus text (``texts``: id -> text) of the first
    of ``ids`` it has; "" when neither has one. How an item a system (or a log) gave as an id only is read."""
    if (text and text.strip()) or not texts:
        return text or ""
    return next((texts[i] for i in ids if texts.get(i)), "")


class RetrievedChunk(BaseModel):
    chunk_id: str
    doc_id: str
    text: str
    score: float | None = None  # None: a user's system gave none

    def text_or_corpus(self, texts: Mapping[str, str] | None) -> str:
        """Its own text, else (empty or whitespace only) the corpus text of its chunk id or document id
        (``texts``: id -> text, for a system that returns ids only); "" when neither has one."""
        return corpus_text(self.text, texts, self.chunk_id, self.doc_id)


class Answer(BaseModel):
    """Structured output of the QA agent."""

    answer: str = Field(description="The answer to the question, from the context only.")
    cited_ids: list[str] = Field(default_factory=list, description="Ids of the chunks/documents used.")
    confidence: float | None = Field(default=0.5, ge=0.0, le=1.0,
                                     description="Confidence in the answer, 0 to 1 (None: the model gave none).")


QAStatus = Literal["ok", "failed", "skipped"]


class CaseOutput(BaseModel):
    """What the task returns for one case. A failure of the answer stage never touches the retrieval fields.

    documents: ranked document ids (chunks collapsed to their document at its best rank),
    scores: the score of each document in ``documents`` (same order; None: a user's system gave none).
    chunks: exactly the chunks given to the QA model as context, in order (the last one possibly cut to the
        context budget); the retrieved chunks when QA is skipped.
    retrieved_chunks: the chunks retrieved for the question, before the QA model's context budget chose among
        them (a user's system: its first ``context_limit`` items); what context relevance judges, whoever answers.
    context_text: the exact context string given to the model.
    answer: the QA answer, or None when QA is skipped or failed.
    qa_status / qa_error / raw_text / qa_mode: how the answer stage ended; ``raw_text`` is what the model
        actually said (kept on failure too), ``qa_mode`` the structured-output mode that worked.
    latency_ms: per stage: embed, retrieve, rerank, llm, total.
    usage: tokens in/out of the QA call (failed attempts included).
    tier / model: what a system under test reports about itself (model tier used, model name).
    unknown_ids: the documents of a user's system that are not in the corpus (None: the built-in pipeline).
    """

    documents: list[str] = Field(default_factory=list)
    scores: list[float | None] = Field(default_factory=list)
    chunks: list[RetrievedChunk] = Field(default_factory=list)
    retrieved_chunks: list[RetrievedChunk] = Field(default_factory=list)
    context_text: str | None = None
    answer: Answer | None = None
    qa_status: QAStatus = "skipped"
    qa_error: str | None = None
    raw_text: str | None = None
    qa_mode: str | None = None
    latency_ms: dict[str, float] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)
    tier: str | None = None
    model: str | None = None
    unknown_ids: list[str] | None = None
