"""One evaluation run: adapter -> index -> cases -> task -> evaluators -> reports.

Order matters for the user: every configured server is checked before any work, the data is read
and validated in full before anything is indexed, and the index is brought up to date (embedding
only new/changed documents) before the first query.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic_evals import Case, Dataset
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .adapters import DatasetSpec, LoadOptions
from .config import Config
from .errors import EvaluationsError
from .index.embedders import build_embedder
from .index.search import Retriever
from .index.store import IndexStats, Store
from .reporting.outputs import case_records, summarize, write_run
from .retrieval.evaluators import retrieval_evaluators
from .task import RagTask
from .types import CaseMetadata, CaseOutput, Corpus, RetrievalInputs


@dataclass
class RunOptions:
    source: Path | None = None
    limit: int | None = None
    split: str | None = None
    name: str | None = None
    ks: list[int] = field(default_factory=lambda: [1, 3, 5, 10, 100])
    db: Path | None = None
    skip_db: bool = False
    skip_retrieval: bool = False
    skip_qa: bool = False
    out: Path | None = None
    concurrency: int = 4
    progress: bool = True


@dataclass
class RunResult:
    out_dir: Path
    summary: dict[str, Any]
    report: Any


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def default_db_path(config: Config, dataset: str, embedder_id: str) -> Path:
    if config.lancedb.uri:
        return Path(config.lancedb.uri)
    return config.data_dir() / "lancedb" / _slug(dataset) / _slug(embedder_id)


def _progress(console: Console) -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False)


def build_dataset(corpus: Corpus, evaluators: list, report_evaluators: list | None = None
                  ) -> Dataset[RetrievalInputs, CaseOutput, CaseMetadata]:
    cases = [
        Case(name=q.id, inputs=RetrievalInputs(query=q.text),
             expected_output=None,
             metadata=CaseMetadata(query_id=q.id, relevant=q.relevant, answers=q.answers, answerable=q.answerable))
        for q in corpus.queries
    ]
    return Dataset[RetrievalInputs, CaseOutput, CaseMetadata](
        name=corpus.name, cases=cases, evaluators=evaluators, report_evaluators=report_evaluators or [])


def index_corpus(store: Store, corpus: Corpus, config: Config, console: Console, show: bool):
    with _progress(console) if show else _NullProgress() as progress:
        task = progress.add_task(f"Indexing {len(corpus.documents)} documents", total=None)
        stats = store.index(
            corpus.documents, config.processing.chunk_size, config.processing.chunk_overlap,
            progress=lambda n: progress.advance(task, n),
            on_total=lambda total: progress.update(
                task, total=total, description=f"Embedding {total} new chunks" if total else "Index up to date"),
        )
    return stats


class _NullProgress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_task(self, *a, **k):
        return 0

    def advance(self, *a, **k):
        pass

    def update(self, *a, **k):
        pass


def run(spec: DatasetSpec, options: RunOptions, config: Config, console: Console | None = None,
        qa: Any | None = None) -> RunResult:
    """Run one evaluation. ``qa`` is an optional QA plan (agent + answer evaluators), see ``qa.plan``."""
    console = console or Console(stderr=True)
    started = datetime.now(timezone.utc)
    clock = time.perf_counter()

    # 1. check every configured backend before any work
    embedder = build_embedder(config)
    needs_vectors = config.search.mode in ("vector", "hybrid")
    if needs_vectors:
        embedder.check()
    if qa is not None:
        qa.check()

    # 2. read and validate all data before indexing anything
    corpus = spec.load(LoadOptions(source=options.source, limit=options.limit, split=options.split))
    if not corpus.queries:
        raise EvaluationsError("no queries to evaluate", where=corpus.source, fix="check --limit and the data")

    # 3. the index
    db_path = options.db or default_db_path(config, spec.name if spec.name != "beir" else corpus.name, embedder.id)
    store = Store(db_path, embedder)
    if options.skip_db:
        if not store.has_index():
            raise EvaluationsError("--skip-db given but there is no index yet", where=str(db_path),
                                   fix="run once without --skip-db to build it")
        store.ensure_fts()
        index_stats = IndexStats(documents=len(corpus.documents), chunks=store.table.count_rows())
    else:
        index_stats = index_corpus(store, corpus, config, console, options.progress)

    # 4. retrieval: batch dense stage, then the per-case task in pydantic-evals
    retriever = Retriever(store, config.search.mode, candidates=max(max(options.ks), config.search.candidates),
                          rrf_k=config.search.rrf_k, context_limit=config.search.limit)
    with console.status("Embedding queries") if options.progress else _NullProgress():
        retriever.prepare([q.text for q in corpus.queries])

    evaluators: list = [] if options.skip_retrieval else retrieval_evaluators(tuple(options.ks))
    report_evaluators: list = []
    agent = None
    if qa is not None:
        evaluators += qa.evaluators
        report_evaluators += qa.report_evaluators
        agent = qa.agent
    dataset = build_dataset(corpus, evaluators, report_evaluators)
    name = options.name or f"{spec.name if spec.name != 'beir' else corpus.name}-{config.search.mode}"
    metadata = {"dataset": spec.name, "source": corpus.source, "search_mode": config.search.mode,
                "embedder": embedder.id, "concurrency": None, **(qa.metadata if qa is not None else {})}
    concurrency = options.concurrency
    if qa is not None and qa.max_concurrency:
        concurrency = min(concurrency, qa.max_concurrency)  # queueing on one in-process model is not latency
    metadata["concurrency"] = concurrency
    task = RagTask(retriever, agent, max_context_chars=qa.max_context_chars if qa is not None else None)
    report = dataset.evaluate_sync(task, name=name, max_concurrency=concurrency,
                                   progress=options.progress, metadata=metadata)

    # 5. outputs
    records = case_records(report)
    stamp = started.strftime("%Y%m%d-%H%M%S")
    out_dir = options.out or Path("runs") / f"{_slug(name)}-{stamp}"
    summary = summarize(report, records, ks=options.ks, primary_judge=qa.primary_judge if qa else None,
                        price=qa.price if qa else (0.0, 0.0), extra={
        "dataset": {"name": spec.name, "source": corpus.source, "documents": len(corpus.documents),
                    "queries": len(corpus.queries)},
        "index": {"path": str(db_path), **index_stats.__dict__},
        "run": {"started": started.isoformat(), "seconds": time.perf_counter() - clock, **metadata},
        "config": config.public_dict(),
        "config_source": config.source,
    })
    write_run(out_dir, report, summary, records)
    return RunResult(out_dir=out_dir, summary=summary, report=report)
