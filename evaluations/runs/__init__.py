"""Run folders: the per-case record contract, streaming writes, resume and the summary."""

from .folder import RunFolder, slug
from .records import SCHEMA, CaseRecord, is_retrieval_metric, record_from_case
from .summary import markdown, summarize

__all__ = ["SCHEMA", "CaseRecord", "RunFolder", "is_retrieval_metric", "markdown", "record_from_case", "slug",
           "summarize"]
