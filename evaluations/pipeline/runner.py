"""One evaluation run: adapter -> index -> cases -> system under test -> evaluators -> run folder.

Order matters for the user: every configured server is checked and the output folder opened (a non-empty
``--out`` is refused unless ``--resume``/``--overwrite``) before any work; the data is read and validated in
full before anything is indexed; the index is brought up to date (embedding only new/changed documents, and
only when a vector mode needs vectors) before the first query.

Every finished case is appended to ``cases.jsonl`` at once (``results.folder``); ``--resume DIR`` runs only the
cases the folder does not hold yet, and again those that did not complete (a stage failed, e.g. the judge's server
was down: their records are replaced), then summarises all of them, so the result equals a straight run's; its
``run.started`` is the first session's start and ``run.seconds`` the time of all sessions.

An interruption (Ctrl-C, or SIGTERM: the CLI turns it into the same KeyboardInterrupt) keeps the finished cases
and says how to finish the run, and where the run an ``--overwrite`` replaces is kept until then.
"""

from __future__ import annotations

import hashlib
import json
import time
import traceback
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import EvaluatorFailure, ReportEvaluatorContext
from pydantic_evals.lifecycle import CaseLifecycle
from pydantic_evals.reporting import EvaluationReport, EvaluationReportAdapter, ReportCaseFailure
from rich.console import Console

from evaluations.datasets import DatasetSpec, LoadOptions
from evaluations.datasets.spec import apply_limit
from evaluations.core.config import Config
from evaluations.core.errors import EvaluationsError
from evaluations.core.progress import progress_bar
from evaluations.evaluators.reference_free import (
    checker_label,
    checker_notes,
    parameter_sources,
    reference_free_evaluators,
)
from evaluations.evaluators.retrieval import retrieval_evaluators
from evaluations.results import CaseRecord, RunFolder, record_from_case, slug, summarize
from evaluations.results.rundata import RunData, RunSummary
from evaluations.pipeline.executors import WorkerSetup, open_executor, parse_executor
from evaluations.pipeline.task import RagTask
from evaluations.core.types import CaseMetadata, CaseOutput, Corpus, RetrievalInputs

if TYPE_CHECKING:
    from evaluations.index.store import IndexStats, Store
    from evaluations.pipeline.plan import QAPlan
    from evaluations.systems import System


@dataclass
class RunOptions:
    source: Path | None = None
    limit: int | None = None
    split: str | None = None
    name: str | None = None
    ks: list[int] = field(default_factory=lambda: [1, 3, 5, 10, 100])
    db: str | Path | None = None
    skip_db: bool = False
    skip_retrieval: bool = False
    skip_qa: bool = False
    #: judge the answers a user's system returns (reference-free: faithfulness, answer relevance) even where the
    #: dataset has no gold answers and so no QA plan (``beir``, rows with qrels only); False: ``--skip-qa``
    judge_answers: bool = True
    out: Path | None = None
    resume: Path | None = None
    overwrite: bool = False
    concurrency: int = 4
    progress: bool = True
    repeat: int = 1
    tags: list[str] = field(default_factory=list)
    system: str | None = None  # "module:function" or an http(s) URL: a user's system instead of the pipeline


@dataclass
class RunResult:
    out_dir: Path
    summary: RunSummary
    report: EvaluationReport
    records: list[CaseRecord] = field(default_factory=list)
    run: RunData | None = None  # the finished run as written (what the after-steps were given)


#: what runs once the run folder is written: ``after(run, config, console)`` (e.g. reports, history, OTel:
#: ``evaluations.experiments.after.after_run``, which the CLI and ``matrix`` pass)
AfterRun = Callable[[RunData, Config, Console], None]


def default_db_path(config: Config, dataset: str, embedder_id: str) -> str:
    """``lancedb.uri`` as given (a folder, ``s3://…``, ``gs://…``, ``db://…``), else a per-dataset folder."""
    if config.lancedb.uri:
        return config.lancedb.uri
    return str(config.data_dir() / "lancedb" / slug(dataset) / slug(embedder_id))


def build_cases(corpus: Corpus) -> list[Case[RetrievalInputs, CaseOutput, CaseMetadata]]:
    return [
        Case(name=q.id, inputs=RetrievalInputs(query=q.text, case_id=q.id), expected_output=None,
             metadata=CaseMetadata(query_id=q.id, relevant=q.relevant, answers=q.answers, answerable=q.answerable,
                                   tags=list(q.tags)))
        for q in corpus.queries
    ]


def build_dataset(corpus: Corpus, evaluators: list, report_evaluators: list | None = None
                  ) -> Dataset[RetrievalInputs, CaseOutput, CaseMetadata]:
    return Dataset[RetrievalInputs, CaseOutput, CaseMetadata](
        name=corpus.name, cases=build_cases(corpus), evaluators=evaluators,
        report_evaluators=report_evaluators or [])


def _index(store: Store, corpus: Corpus, config: Config, options: RunOptions, need_vectors: bool,
           console: Console) -> IndexStats:
    with progress_bar(console, options.progress) as progress:
        task = progress.add_task(f"Indexing {len(corpus.documents)} documents", total=None)
        kwargs = dict(
            need_vectors=need_vectors, progress=lambda n: progress.advance(task, n),
            on_total=lambda total: progress.update(
                task, total=total, description=f"Embedding {total} new chunks" if total else "Index up to date"))
        method = store.use_existing if options.skip_db else store.index
        return method(corpus.documents, config.processing.chunk_size, config.processing.chunk_overlap, **kwargs)


def config_identity(config: Config) -> dict[str, Any]:
    """The part of ``config`` that makes two runs the same run: run-time knobs (concurrency, cache, requests,
    history, executor, reports) are left out, changing them does not change the cases' results."""
    public = config.public_dict()
    for volatile in ("cache", "requests", "history", "executor", "reports"):
        public.pop(volatile, None)
    public.get("evaluation", {}).pop("concurrency", None)
    return public


def _identity(spec: DatasetSpec, corpus: Corpus, options: RunOptions, config: Config) -> dict[str, Any]:
    """What makes two invocations the same run (checked by --resume; ``config_identity``)."""
    public = config_identity(config)
    return {"dataset": spec.name, "corpus": corpus.name, "source": corpus.source, "limit": options.limit,
            "split": options.split, "ks": list(options.ks), "skip_retrieval": options.skip_retrieval,
            "skip_qa": options.skip_qa, "repeat": options.repeat, "tags": sorted(options.tags),
            "system": options.system, "config": public}


def dataset_fingerprint(corpus: Corpus) -> str:
    """sha256 over the queries (id, text, graded relevance) and the documents (id, sha256 of text): two runs
    with the same fingerprint were scored against the same data."""
    digest = hashlib.sha256()
    for q in sorted(corpus.queries, key=lambda q: q.id):
        digest.update(json.dumps([q.id, q.text, sorted(q.relevant.items())], ensure_ascii=False).encode())
    for d in sorted(corpus.documents, key=lambda d: d.id):
        digest.update(json.dumps([d.id, hashlib.sha256(d.text.encode()).hexdigest()]).encode())
    return digest.hexdigest()


def _select(corpus: Corpus, tags: list[str], limit: int | None) -> Corpus:
    """The queries with any of ``tags`` (all without tags), then the first ``limit`` of them (``--limit`` counts
    after the filters: ``--tags hard --limit 10`` is ten hard queries). A tag no query has is an error naming the
    tags there are."""
    if tags:
        wanted = set(tags)
        kept = [q for q in corpus.queries if wanted & set(q.tags)]
        if not kept and corpus.queries:
            present = sorted({t for q in corpus.queries for t in q.tags})
            raise EvaluationsError(
                f"no query has the tag{'s' * (len(tags) > 1)} {', '.join(map(repr, tags))}", where="--tags",
                fix=f"use tags the queries have: {', '.join(present[:20])}{' …' if len(present) > 20 else ''}"
                if present else "the queries have no tags: drop --tags")
        corpus.queries = kept
    return apply_limit(corpus, limit)


class _Recorder(CaseLifecycle[RetrievalInputs, CaseOutput, CaseMetadata]):
    """Streams each finished case into the run folder (pydantic-evals' per-case teardown hook) and advances the
    run's progress bar (on the console, stderr: pydantic-evals' own bar prints to stdout, which ``--json`` keeps
    for the JSON alone)."""

    folder: RunFolder
    advance: Callable[[], None]

    async def teardown(self, result) -> None:
        if result is not None:
            self.folder.add(result)
        self.advance()


def _system_answered_all(cases: list) -> bool:
    """Every answer of the finished ``cases`` is a user's system's own (none came from the QA agent), and there is
    one."""
    from evaluations.results.records import SYSTEM_ANSWER

    modes = {getattr(c.output, "qa_mode", None) for c in cases
             if not isinstance(c, ReportCaseFailure) and getattr(c.output, "answer", None) is not None}
    return modes == {SYSTEM_ANSWER}


def _full_report(name: str, cases: list, dataset_order: list[str], metadata: dict[str, Any],
                 report_evaluators: list, corpus_name: str) -> EvaluationReport:
    """All finished cases (earlier sessions' and this one's) as one report, in dataset order, with the report
    evaluators run over the whole of it — the same whether the run was resumed or not."""
    position = {n: i for i, n in enumerate(dataset_order)}

    def key(case):
        return (position.get(case.source_case_name or case.name, len(position)), case.name)

    finished = sorted(cases, key=key)
    report = EvaluationReport(
        name=name, cases=[c for c in finished if not isinstance(c, ReportCaseFailure)],
        failures=[c for c in finished if isinstance(c, ReportCaseFailure)], experiment_metadata=metadata,
        dataset_name=corpus_name)
    # pydantic-evals runs report evaluators only inside Dataset.evaluate (its loop, _run_report_evaluators, is
    # private), and a resumed run's report is built here from stored cases: this is that loop, recording a
    # failure the way pydantic-evals does (name, message, stack trace, spec) so the run is never lost to it
    ctx = ReportEvaluatorContext(name=name, report=report, experiment_metadata=metadata)
    for evaluator in report_evaluators:
        try:
            result = anyio.run(evaluator.evaluate_async, ctx)  # sync or async evaluators alike
        except Exception as exc:
            report.report_evaluator_failures.append(EvaluatorFailure(
                name=evaluator.get_serialization_name(), error_message=f"{type(exc).__name__}: {exc}",
                error_stacktrace=traceback.format_exc(), source=evaluator.as_spec(), error_type=type(exc).__name__))
            continue
        report.analyses.extend(result if isinstance(result, list) else [result])
    return report


def search_parameters(config: Config, k: int) -> dict[str, Any]:
    """The built-in retriever's parameters (``k``: the largest cut-off of the run); the kept rankings' key too."""
    search = config.search
    return {"mode": search.mode, "candidates": max(k, search.candidates), "rrf_k": search.rrf_k,
            "context_limit": search.limit}


def make_retriever(store: Any, config: Config, k: int) -> Any:
    """The built-in pipeline's retriever over ``store`` (``k``: the largest cut-off of the run)."""
    from evaluations.index.search import Retriever

    return Retriever(store, **search_parameters(config, k))


def _pipeline(corpus: Corpus, options: RunOptions, config: Config, spec: DatasetSpec, console: Console,
              pending_queries: list[str], system: System | None, executor: Any
              ) -> tuple[RagTask, dict[str, Any], dict[str, Any]]:
    """The built-in LanceDB pipeline (or the user's system) as a task, plus index stats and run metadata."""
    if system is not None:
        name = getattr(system, "id", options.system)
        return (RagTask(system=system, k=max(options.ks), context_limit=config.search.limit,
                        texts={d.id: d.text for d in corpus.documents}),
                {"system": name}, {"system": name})
    from evaluations.models.embedders import build_embedder
    from evaluations.index.store import Store

    embedder = build_embedder(config)
    need_vectors = config.search.mode in ("vector", "hybrid")
    db_path = options.db or default_db_path(config, spec.name if spec.name != "beir" else corpus.name, embedder.id)
    meta = {"search_mode": config.search.mode, "embedder": embedder.id}
    rankings = _rankings(str(db_path), corpus, config, options, embedder.id, executor)
    if rankings is not None and (kept := rankings.lookup(pending_queries)) is not None:
        cached, index = kept  # the index as the run that searched left it; this run wrote and embedded nothing
        index.update(chunked_documents=0, embedded_documents=0, embedded_chunks=0, deleted_documents=0,
                     fts_rebuilt=False, seconds={}, rankings_cached=True)
        if index.get("ann"):  # the ANN index and the recall measured on it, neither built nor checked again
            from evaluations.index.ann import AnnInfo, warn_low_recall

            index["ann"].update(built=False, build_seconds=0.0, recall_seconds=0.0)
            warn_low_recall(AnnInfo.model_validate(index["ann"]), config.lancedb.ann)
        return RagTask(retriever=cached), index, meta
    store = Store(str(db_path), embedder, settings=config.lancedb, embed_batches=executor.embed_batches(config))
    stats = _index(store, corpus, config, options, need_vectors, console)
    retriever = make_retriever(store, config, max(options.ks))
    with console.status("Embedding queries") if options.progress and need_vectors else nullcontext():
        retriever.prepare(pending_queries)
    index = {"path": str(db_path), **{k: v for k, v in vars(stats).items()}}
    if rankings is not None:
        retriever = rankings.record(retriever, index)
    return RagTask(retriever=retriever), index, meta


def _rankings(db_path: str, corpus: Corpus, config: Config, options: RunOptions, embedder_id: str,
              executor: Any) -> Any:
    """The rankings kept beside a local index (``index.rankings``) for this search, None where they do not apply:
    a remote index, ``--no-cache``, cases run on workers (``--executor ray``: each worker searches)."""
    from evaluations.index.store import corpus_fingerprint, is_local

    if not (config.cache.enabled and is_local(db_path) and executor.in_process):
        return None
    from evaluations.index.rankings import Rankings

    parameters = {"corpus": corpus_fingerprint(corpus.documents, config.processing.chunk_size,
                                               config.processing.chunk_overlap),
                  "embedder": embedder_id, **search_parameters(config, max(options.ks)),
                  "ann": config.lancedb.ann.model_dump()}
    return Rankings(Path(db_path.removeprefix("file://")), parameters)


def _check_judge_inputs(config: Config, options: RunOptions, qa: QAPlan | None) -> None:
    """What the run and its judges read from the environment and the judges' folder, checked before any work (a
    bad one was a failed judge in every case; ``HF_HUB_OFFLINE`` is checked by the CLI for every command, and a
    relative ``$EVALUATIONS_CACHE_PATH`` when the config is read): the parameters file of each judge the run uses (``$EVALUATIONS_JUDGES_DIR`` or the shipped one);
    ``$EVALUATIONS_JUDGE_GGUF`` a GGUF file when an embedded judge loads it; the judges' cache folder
    (``Config.judge_cache_dir``: storage.data_dir, ``$EVALUATIONS_CACHE_DIR`` or ``$XDG_DATA_HOME``) one that can
    be made and written. Judges the run does not use are not checked."""
    from evaluations.core.env import env_file
    from evaluations.evaluators.answers import OfflineJudge
    from evaluations.evaluators.llm_judges import EmbeddedLLMJudge
    from evaluations.judging.correctness.offline import load_model
    from evaluations.judging.validation.registry import JUDGES, refittable

    answers = qa is not None or (options.system is not None and options.judge_answers)
    # the reference-free judges every dataset of this run gets (with qrels, ``auto`` leaves context relevance out)
    wanted = set(config.judge.reference_free_judges(has_qrels=True))
    wanted -= {judge for judge, needed in (("faithfulness", answers), ("answer_relevance", answers),
                                           ("context_relevance", not options.skip_retrieval)) if not needed}
    served = config.judge.model is not None and config.judge.model.provider != "embedded"
    for judge in sorted(wanted & set(refittable())):
        JUDGES[judge].refit.check(served)
    embedded_llm = False
    for evaluator in qa.evaluators if qa is not None else []:
        if isinstance(evaluator, OfflineJudge):
            load_model(evaluator.params)
        elif isinstance(evaluator, EmbeddedLLMJudge):
            from evaluations.judging.correctness.embedded import combined_params_path, judge_params

            embedded_llm = True
            if evaluator.threshold is None:
                judge_params()
            if evaluator.combined and combined_params_path().is_file():
                load_model(combined_params_path())
    served = config.judge.model is not None and config.judge.model.provider != "embedded"
    # answer relevance's naming screen reads the embedded judge model whichever model judge.model names
    if embedded_llm or "answer_relevance" in wanted or (wanted & {"faithfulness", "context_relevance"} and not served):
        gguf = env_file("EVALUATIONS_JUDGE_GGUF")
        if gguf is not None:
            from evaluations.models.gguf import check_gguf_file

            check_gguf_file(gguf, variable="EVALUATIONS_JUDGE_GGUF")
    if config.cache.enabled and (qa is not None or wanted):
        from evaluations.judging.correctness.semantic import default_cache_path
        from evaluations.models.cache import open_store

        open_store(default_cache_path(config.judge_cache_dir()), what="the judges' cache",
                   origin="storage.data_dir" if config.storage.data_dir else None)


def check_backends(config: Config, options: RunOptions, qa: QAPlan | None) -> None:
    """Every configured server answers (and serves its model) before any work; before them, what the judges read
    from the environment and the judges' folder (``_check_judge_inputs``)."""
    _check_judge_inputs(config, options, qa)
    if options.system is None and config.search.mode in ("vector", "hybrid"):
        from evaluations.models.embedders import build_embedder

        build_embedder(config).check()
    if qa is not None:
        qa.check()


def run(spec: DatasetSpec, options: RunOptions, config: Config, console: Console | None = None,
        qa: QAPlan | None = None, after: AfterRun | None = None) -> RunResult:
    """Run one evaluation. ``qa`` is an optional QA plan (agent + answer evaluators), see ``pipeline.plan``; ``after``
    gets the finished run in memory once its folder is written (reports, history, OTel: ``AfterRun``)."""
    from evaluations.core.console import make_console

    console = console or make_console(stderr=True)
    started = datetime.now(timezone.utc)
    clock = time.perf_counter()

    # 1. check every configured backend (and import the user's system, join the Ray cluster) before any work
    parse_executor(config.executor)  # first: ``executor: ray`` without the ray extra installed is one error
    check_backends(config, options, qa)
    executor = open_executor(config.executor)
    system = None
    if options.system is not None:
        from evaluations.systems import build_system

        system = build_system(options.system, config)
        check = getattr(system, "check", None)  # an HTTP endpoint: is it up?
        if check is not None:
            check()

    # 2. read and validate all data; open (or resume) the run folder before indexing anything
    limit = None if options.tags else options.limit  # with --tags, the limit counts the tagged queries
    corpus = _select(spec.load(LoadOptions(source=options.source, limit=limit, split=options.split)), options.tags,
                     options.limit)
    if not corpus.queries:
        raise EvaluationsError("no queries to evaluate", where=corpus.source,
                               fix="check --limit, --tags and the data")
    dataset_label = spec.name if spec.name != "beir" else corpus.name
    if options.split not in (None, "test"):  # runs of another split are told apart by their folder's name
        dataset_label += f"-{options.split}"
    name = options.name or f"{dataset_label}-{'system' if options.system else config.search.mode}"
    folder = RunFolder.open(out=options.out, resume=options.resume, overwrite=options.overwrite, name=name,
                            identity=_identity(spec, corpus, options, config), started=started)
    try:
        if system is not None:  # called on every run; a resumed run reuses only its own replies (in the cache)
            from evaluations.systems.factory import for_run

            system = for_run(system, config, folder.run_id)
        return _run_in(folder, spec, corpus, options, config, console, qa, name, started, clock, system, after,
                       executor)
    except Exception:
        folder.discard_if_unused()  # e.g. an unreadable index, or a bug: no empty run folder is left behind
        raise
    except KeyboardInterrupt:
        if folder.fresh and not folder.done:  # nothing of the new run to keep: as a failure before the first case
            folder.discard_if_unused()
            restored = " (the run --overwrite was replacing is back in place)" if options.overwrite else ""
            console.print(f"[yellow]interrupted before any case finished: nothing was kept{restored}[/]",
                          highlight=False)
            raise
        folder.close()
        console.print(f"[yellow]interrupted: {len(folder.done)} finished case(s) are kept in {folder.path}; "
                      f"finish the run with the same command and --resume {folder.path}[/]", highlight=False)
        if (previous := folder.previous_run) is not None:
            console.print(f"[yellow]the run --overwrite replaces is kept in {previous} until this one finishes; "
                          f"to go back to it, delete the other files of {folder.path} and move its files there[/]",
                          highlight=False)
        raise
    finally:
        executor.close()
        folder.close()
        folder.end_session(time.perf_counter() - clock)


def _run_in(folder: RunFolder, spec: DatasetSpec, corpus: Corpus, options: RunOptions, config: Config,
            console: Console, qa: QAPlan | None, name: str, started: datetime, clock: float,
            system: System | None, after: AfterRun | None, executor: Any) -> RunResult:
    cases = _cases_to_run(folder, corpus, options, console)

    # 3. the system under test: index + retriever, or the user's system
    pending = [c.inputs.query for c in cases]
    task, index_info, system_meta = _pipeline(corpus, options, config, spec, console, pending, system, executor)
    evaluators, reference_free, judge_parameters = _evaluators(config, options, corpus, task, console,
                                                               answers=qa is not None or (system is not None
                                                                                          and options.judge_answers))
    if qa is not None:
        evaluators += qa.evaluators
        task.agent = qa.agent
        task.max_context_chars = qa.max_context_chars
    metadata = _metadata(spec, corpus, config, qa, system_meta, judge_parameters, options.concurrency, executor)
    metadata["repeat"] = options.repeat
    if cases:  # --executor ray: each case's system call on a worker that built the same system
        task.remote = executor.case_runner(WorkerSetup(
            config=config, k=max(options.ks), system=options.system, db=index_info.get("path"), queries=pending,
            qa=qa is not None, max_context_chars=qa.max_context_chars if qa is not None else None,
            name=folder.path.name, workers=metadata["concurrency"], run_id=folder.run_id,
            texts=dict(task.texts) if task.texts is not None and qa is not None else None))

    # 4. the cases: each streamed to the folder as it finishes. Evaluator models (MiniLM for semantic similarity)
    # load on their first cache miss, in a worker thread: a re-run of the same answers never loads them.
    from evaluations.models.cache import call_stats, reset_call_stats
    from evaluations.models.retry import RETRY_STATS

    reset_call_stats()
    RETRY_STATS.reset()
    if cases:
        with progress_bar(console, options.progress) as progress:
            bar = progress.add_task(f"Evaluating {len(cases)} cases", total=len(cases) * options.repeat)
            dataset = Dataset[RetrievalInputs, CaseOutput, CaseMetadata](
                name=corpus.name, cases=cases, evaluators=evaluators)
            dataset.evaluate_sync(task, name=name, max_concurrency=metadata["concurrency"], progress=False,
                                  metadata=metadata, repeat=options.repeat,
                                  lifecycle=_recorder(folder, lambda: progress.advance(bar)))

    # 5. the whole run, summarised from all finished cases
    if metadata.get("qa_model") and _system_answered_all(list(folder.done)):  # the QA agent never ran: unnamed
        metadata["qa_model"] = "none (the system's own answers)"
    report = _full_report(name, list(folder.done), [q.id for q in corpus.queries], metadata,
                          qa.report_evaluators if qa is not None else [], corpus.name)
    records = [record_from_case(c) for c in [*report.cases, *report.failures]]
    order = {q.id: i for i, q in enumerate(corpus.queries)}
    records.sort(key=lambda r: (order.get(r.case, len(order)), r.repeat))
    summary = summarize(
        records, name=name, ks=options.ks, scored=not options.skip_retrieval,
        primary_judge=qa.primary_judge if qa else None,
        # the built-in QA agent's price; a user's system's answers are priced by the model its replies name
        price=qa.price if qa else (0.0, 0.0),
        prices={key: (p.input, p.output) for key, p in config.prices.items()} if system is not None else None,
        primary_validation=qa.primary_validation if qa else None,
        primary_chosen_by=qa.primary_chosen_by if qa else None, calibrate=qa is not None,
        dataset_warnings=corpus.warnings,
        reference_free=[e.get_default_evaluation_name() for e in reference_free],
        analyses=[a.model_dump(mode="json") for a in report.analyses],
        extra={
            "dataset": {"name": spec.name, "source": corpus.source, "documents": len(corpus.documents),
                        "queries": len(corpus.queries), "fingerprint": dataset_fingerprint(corpus)},
            "index": index_info,
            # a resumed run: its first session's start, and the time of all its sessions
            "run": {"started": folder.started or started.isoformat(),
                    "seconds": folder.seconds(time.perf_counter() - clock),
                    "resumed": options.resume is not None, "sessions": max(1, len(folder.sessions)), **metadata},
            "config": config.public_dict(),
            "config_source": config.source,
            # this session's model calls (a resumed run counts only its own): cached replies keep their original
            # token usage, so tokens and cost are the run's, while these counts say what was actually spent
            "model_calls": {**call_stats(), "retries": RETRY_STATS.as_dict()},
        })
    from evaluations.review.corrected import with_corrected

    # a person's labels of this run (``evaluations review``): the re-run keeps their corrected figures
    summary = with_corrected(RunData(path=folder.path, summary=summary, records=records)).summary
    finished = folder.finish(report_json=EvaluationReportAdapter.dump_json(report, indent=1), summary=summary,
                             records=records)
    if after is not None:
        after(finished, config, console)
    return RunResult(out_dir=folder.path, summary=summary, report=report, records=records, run=finished)


def _cases_to_run(folder: RunFolder, corpus: Corpus, options: RunOptions, console: Console) -> list:
    """The cases this session runs. Resuming, cases already finished are neither re-run nor duplicated (with
    --repeat, a case whose repeats were not all finished is run again whole, and its finished repeats dropped);
    those that did not complete (a stage failed) are run again, their records replaced."""
    again = [] if folder.fresh else folder.retry_incomplete()
    done = {c.source_case_name or c.name for c in folder.done}
    if options.repeat > 1:
        counts: dict[str, int] = {}
        for c in folder.done:
            counts[c.source_case_name or c.name] = counts.get(c.source_case_name or c.name, 0) + 1
        done = {n for n, k in counts.items() if k >= options.repeat}
        folder.done[:] = [c for c in folder.done if (c.source_case_name or c.name) in done]
    cases = [c for c in build_cases(corpus) if c.name not in done]
    if folder.done or again:
        retried = f" ({len(again)} that did not complete run again)" if again else ""
        console.print(f"resuming {folder.path}: {len(folder.done)} finished, {len(cases)} to run{retried}",
                      highlight=False)
    return cases


def _evaluators(config: Config, options: RunOptions, corpus: Corpus, task: RagTask, console: Console, *,
                answers: bool) -> tuple[list, list, dict[str, Any]]:
    """(retrieval and reference-free evaluators, the reference-free ones, their parameter sources); prints a note
    for each reference-free judge whose parameters were fitted through another checker."""
    evaluators: list = [] if options.skip_retrieval else retrieval_evaluators(tuple(options.ks))
    reference_free = reference_free_evaluators(
        config, answers=answers, retrieval=not options.skip_retrieval,
        has_qrels=any(q.relevant for q in corpus.queries), texts=task.texts)
    judge_parameters = parameter_sources(reference_free)  # each parameters file read once
    for note in checker_notes(config, judge_parameters):
        console.print(f"note: {note}")
    return evaluators + reference_free, reference_free, judge_parameters


def _metadata(spec: DatasetSpec, corpus: Corpus, config: Config, qa: QAPlan | None, system_meta: dict[str, Any],
              judge_parameters: dict[str, Any], concurrency: int, executor: Any) -> dict[str, Any]:
    """The run's metadata (pydantic-evals' report metadata, and the summary's ``run`` section)."""
    metadata = {"dataset": spec.name, "source": corpus.source, **system_meta,
                **(qa.metadata if qa is not None else {})}
    if judge_parameters:
        metadata["judge_parameters"] = judge_parameters
        metadata["reference_free_judge"] = checker_label(config)  # the model the judges asked (not judge_model's)
    if qa is not None and qa.max_concurrency and executor.in_process:
        concurrency = min(concurrency, qa.max_concurrency)  # queueing on one in-process model is not latency
    metadata["concurrency"] = concurrency
    metadata["executor"] = executor.describe()
    return metadata


def _recorder(folder: RunFolder, advance: Callable[[], None]) -> type[_Recorder]:
    """``_Recorder`` bound to this run's folder and progress bar: pydantic-evals takes the lifecycle as a class and
    makes one per case."""

    class Recorder(_Recorder):
        pass

    Recorder.folder = folder
    Recorder.advance = staticmethod(advance)
    return Recorder
