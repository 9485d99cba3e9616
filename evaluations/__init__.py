"""evaluations: measure how good a RAG system is, retrieval and answers, on pydantic-evals."""

__version__ = "0.1.0"
