"""Run folders: the per-case record contract, streaming writes, resume and the summary."""

from evaluations.results.folder import RunFolder, slug
from evaluations.results.records import SCHEMA, CaseRecord, is_retrieval_metric, record_from_case
from evaluations.results.summary import summarize

__all__ = ["SCHEMA", "CaseRecord", "RunFolder", "is_retrieval_metric", "record_from_case", "slug",
           "summarize"]
