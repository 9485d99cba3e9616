"""``evaluations matrix GRID.yaml``: every combination of embedders, search modes, QA models and judges, each a
normal run in its own run folder, then one table and ``matrix.json``.

Grid file (paths are relative to the grid file's folder)::

    dataset: repliqa                 # repliqa, wix, beir, or run: a file of your own (source) over corpus
    source: ../../shared/data/repliqa_samples/repliqa_sample20.jsonl.gz
    corpus: docs.jsonl               # dataset run only: the documents, as `evaluations run FILE --corpus` takes
    limit: 20                        # optional: any run option (limit, k, split, skip_qa, skip_retrieval, concurrency)
    max_failures: "0"                # optional, per cell, as the run's --max-failures (N or P%)
    config: ../haiku.rag.yaml        # optional
    out: ../runs/matrix-repliqa      # optional (default runs/matrix-<grid file stem>)
    quality: offline_correct         # optional: the metric on the Pareto fronts (default: the primary judge,
                                     # else the first of ndcg@10, faithfulness, context_relevance,
                                     # answer_relevance that a cell has)
    axes:
      embedder: [embedded:all-MiniLM-L6-v2, embedded:multilingual-e5-small]
      search_mode: [hybrid]
      qa_model: [embedded:smollm2-135m, embedded:qwen2.5-coder-0.5b]
      judge: [none]                  # "none": no LLM judge

Before the first cell runs, every cell's config is loaded and its servers are checked (``check_cells``): a bad
axis value or an unreachable server in the last cell is one error, not a failure after the others ran.

Cells share each embedder's index (the default LanceDB folder is per dataset and embedder, so the first cell
builds it and the others find it up to date). A cell whose folder holds a finished run is skipped; one that was
interrupted is resumed — the matrix resumes. A finished cell with more cases that did not complete than
``max_failures`` allows is not skipped: a re-run runs it again; the matrix exits 3 while any cell is over the
limit, and such a cell is never the best.

Pareto fronts: a cell is on the cost–quality front when no other cell has quality ≥ and cost ≤ with one of them
strict (likewise latency p95 for the latency–quality front). Each cell is compared with the best cell (highest
quality) by ``compare`` (paired tests, Holm-corrected).
"""

from __future__ import annotations

import json
import itertools
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from rich.console import Console

from evaluations.core import yamltext
from evaluations.core.config import Config, PositiveKs
from evaluations.core.errors import EvaluationsError
from evaluations.datasets.rows import read_utf8
from evaluations.results.rundata import AnswersSummary, RunSummary, load_run, read_summary

AXES = {  # axis -> config keys it sets (provider:name references are split)
    "embedder": "embeddings.model",
    "search_mode": "search.mode",
    "qa_model": "qa.model",
    "judge": "judge.model",
}


class Axes(BaseModel):
    model_config = ConfigDict(extra="forbid")

    embedder: list[str] = Field(default_factory=list)
    search_mode: list[str] = Field(default_factory=list)
    qa_model: list[str] = Field(default_factory=list)
    judge: list[str] = Field(default_factory=list)


class Grid(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str
    source: str | None = None
    corpus: str | None = None  # dataset "run": the documents of the source file (``evaluations run --corpus``)
    config: str | None = None
    out: str | None = None
    quality: str | None = None
    limit: int | None = Field(default=None, ge=1)
    k: PositiveKs | None = None
    split: str | None = None
    skip_qa: bool = False
    skip_retrieval: bool = False
    concurrency: int | None = Field(default=None, gt=0)
    max_failures: str = "0"  # per cell, as the run's --max-failures: N cases or P%
    executor: str | None = None  # local, ray or ray:ADDRESS (default: the config's executor)
    axes: Axes

    @field_validator("max_failures")
    @classmethod
    def _a_count_or_percentage(cls, value: str) -> str:
        from evaluations.core.exits import parse_max_failures

        try:
            parse_max_failures(value, 100)
        except EvaluationsError:
            raise ValueError(f"{value!r} is not a count or a percentage (e.g. 3 or 5%)") from None
        return value


def load_grid(path: Path) -> Grid:
    """The grid of a YAML file. Checked: the file is readable UTF-8 text (``read_utf8``), valid YAML, and a valid
    ``Grid`` (keys, types, k positive)."""
    try:
        data = yamltext.load(read_utf8(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise EvaluationsError(f"not valid YAML: {getattr(exc, 'problem', exc)}", where=where,
                               fix="fix the YAML at that line") from None
    try:
        return Grid.model_validate(data or {})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: "
                             f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
        raise EvaluationsError(f"invalid grid: {problems}", where=str(path),
                               fix="keys: dataset, source, corpus, config, out, quality, limit, k, split, skip_qa, "
                                   "skip_retrieval, concurrency, max_failures, executor, "
                                   "axes {embedder, search_mode, qa_model, judge}") from None


def cells(grid: Grid) -> list[dict[str, str]]:
    """Every combination of the non-empty axes, in file order."""
    axes = [(name, values) for name, values in grid.axes.model_dump().items() if values]
    if not axes:
        raise EvaluationsError("the grid has no axis values", where="axes", fix="list at least one axis value")
    return [dict(zip([a for a, _ in axes], combo)) for combo in itertools.product(*(v for _, v in axes))]


def _overrides(params: dict[str, str]) -> dict[str, Any]:
    from evaluations.core.config import parse_model_ref

    overrides: dict[str, Any] = {}
    for axis, value in params.items():
        key = AXES[axis]
        if axis == "search_mode":
            overrides[key] = value
        elif axis == "judge" and value.lower() in ("none", ""):
            overrides[key] = None
        else:
            ref = parse_model_ref(value, flag=f"axes.{axis}")
            overrides[f"{key}.provider"] = ref["provider"]
            if "name" in ref:
                overrides[f"{key}.name"] = ref["name"]
            if axis == "embedder":
                overrides[f"{key}.vector_dim"] = None
    return overrides


def cell_slug(params: dict[str, str]) -> str:
    from evaluations.results import slug

    return slug("__".join(v.replace(":", "-") for v in params.values()))


def _cell_config(grid: Grid, base: Path, params: dict[str, str], executor: str | None) -> Config:
    """The config of one cell: the grid's config file with the cell's axis values (and ``executor``) over it."""
    from evaluations.core.config import load_config

    overrides = _overrides(params) | ({"executor": executor} if executor else {})
    return load_config(str(base / grid.config) if grid.config else None, overrides)


def grid_spec(grid: Grid, base: Path, where: str = "the grid") -> Any:
    """The grid's dataset: a named one (repliqa, wix, beir), or ``run``: the ``source`` file over ``corpus``, as
    ``evaluations run SOURCE --corpus CORPUS`` reads them (questions only: the reference-free judges measure it).
    ``base``: the grid file's folder (paths are relative to it); ``where``: the grid file, for messages."""
    from evaluations.datasets import DATASETS, get_spec

    if grid.dataset != "run":
        if grid.corpus:
            raise EvaluationsError(f"corpus is for dataset run, not {grid.dataset}", where=f"{where}: corpus",
                                   fix="remove corpus, or set dataset: run with source: YOUR_FILE")
        if grid.dataset not in DATASETS:
            raise EvaluationsError(f"unknown dataset {grid.dataset!r}", where=f"{where}: dataset",
                                   fix=f"use one of {', '.join(DATASETS)}, or run (a file of your own with corpus)")
        return get_spec(grid.dataset)
    missing = [key for key in ("source", "corpus") if not getattr(grid, key)]
    if missing:
        raise EvaluationsError(f"dataset run needs {' and '.join(missing)}", where=where,
                               fix="source: your dataset file (JSONL/JSON/YAML/CSV; rows of id and query are enough), "
                                   "corpus: its documents (a JSONL/JSON/CSV file or a folder), relative to the grid")
    from evaluations.datasets.generic import spec_for

    for key in ("source", "corpus"):
        if not (base / getattr(grid, key)).exists():
            raise EvaluationsError(f"{key} not found: {base / getattr(grid, key)}", where=f"{where}: {key}",
                                   fix=f"give {key} as a path relative to the grid file's folder")
    return spec_for(base / grid.source, base / grid.corpus, name="run")  # type: ignore[operator]


def check_cells(grid: Grid, grid_file: Path, combos: list[dict[str, str]], executor: str | None) -> None:
    """Before the first cell runs: the dataset is known, and every cell's config loads and its servers answer
    (as a run checks them first; each embedder and each QA/judge model once). A bad value in the last cell's
    axis is one error naming that cell, not a failure after the other cells ran (the runs check again: a server
    can go away between cells)."""
    from evaluations.models.embedders import build_embedder
    from evaluations.pipeline.plan import build_qa_plan

    base = grid_file.resolve().parent
    spec = grid_spec(grid, base, str(grid_file))
    checked: set[str] = set()
    for params in combos:
        try:
            config = _cell_config(grid, base, params, executor)
        except EvaluationsError as exc:  # an axis value (or the grid's config file) the config refuses
            where = f"{grid_file}" + (f" (config {exc.where})" if grid.config and exc.where else "")
            raise EvaluationsError(f"cell {_label(params)}: {exc.message}", where=where, fix=exc.fix) from None
        try:
            embedder = config.embeddings.model_dump_json()
            if config.search.mode in ("vector", "hybrid") and embedder not in checked:
                build_embedder(config).check()
                checked.add(embedder)
            models = config.model_dump_json(include={"qa": {"model"}, "judge": {"model"}})
            if not (grid.skip_qa or not spec.answers) and models not in checked:
                build_qa_plan(config).check()
                checked.add(models)
        except EvaluationsError as exc:  # a server that does not answer, a model it does not serve
            raise EvaluationsError(f"cell {_label(params)}: {exc.message}",
                                   where=f"{grid_file}" + (f" ({exc.where})" if exc.where else ""),
                                   fix=exc.fix) from None


def run_cell(grid: Grid, base: Path, params: dict[str, str], out: Path, progress: bool,
             executor: str | None = None) -> tuple[Path, str]:
    """Run (or skip, or resume) one cell; returns its folder and what happened. ``executor`` overrides the
    config's (``--executor``, the grid's ``executor``)."""
    from evaluations.experiments.after import after_run
    from evaluations.pipeline.runner import RunOptions, config_identity, run

    config = _cell_config(grid, base, params, executor)
    spec = grid_spec(grid, base)
    ks = sorted(set(grid.k or config.evaluation.k))
    skip_qa = grid.skip_qa or not spec.answers
    overwrite = False
    if (out / "summary.json").is_file():
        _same_run(out, {"limit": grid.limit, "split": grid.split, "ks": ks, "skip_qa": skip_qa,
                        "skip_retrieval": grid.skip_retrieval, "config": config_identity(config)})
        if within_max_failures(grid, read_summary(out / "summary.json")):
            return out, "skipped (finished)"
        overwrite = True  # a finished cell with too many failed cases is run again, not skipped forever
    resume = out if (out / "run.json").is_file() and not overwrite else None
    options = RunOptions(
        source=(base / grid.source) if grid.source else None, limit=grid.limit, split=grid.split,
        name=cell_slug(params), ks=ks, skip_qa=skip_qa,
        skip_retrieval=grid.skip_retrieval, out=None if resume else out, resume=resume, overwrite=overwrite,
        concurrency=grid.concurrency or config.evaluation.concurrency, progress=progress)
    qa = None
    if not options.skip_qa:
        from evaluations.pipeline.plan import build_qa_plan

        qa = build_qa_plan(config)
    run(spec, options, config, qa=qa, after=after_run)
    if overwrite:
        return out, "ran again (its last run had more failed cases than max_failures allows)"
    return out, "resumed" if resume else "ran"


def _same_run(cell: Path, expected: dict[str, Any]) -> None:
    """The finished run in ``cell`` was made with ``expected`` (its run.json's limit, split, cut-offs, skips and
    config): a grid changed since (``limit: 3`` where the cell ran all cases) must not reuse it as its own."""
    try:
        stored = json.loads((cell / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvaluationsError(f"cannot read the finished cell's run.json ({exc})", where=str(cell / "run.json"),
                               fix="the cell folder is damaged: remove it and run the matrix again") from None
    expected = json.loads(json.dumps(expected, default=str))
    differs = [k for k in expected if not isinstance(stored, dict) or stored.get(k) != expected[k]]
    if differs:
        detail = "; ".join(f"{k}: cell {stored.get(k)!r}, grid {expected[k]!r}" if k != "config" else
                           "config differs" for k in differs[:4]) if isinstance(stored, dict) else "not an object"
        raise EvaluationsError(f"the finished run in this cell is not this grid's ({detail})", where=str(cell),
                               fix="give the grid another out folder, or remove the cell folder to run it again")


def within_max_failures(grid: Grid, summary: RunSummary) -> bool:
    """At most ``grid.max_failures`` of the cell's cases did not complete (the run's --max-failures rule)."""
    from evaluations.core.exits import parse_max_failures

    return summary.counts.incomplete <= parse_max_failures(grid.max_failures, summary.counts.cases)


#: the default quality after the primary judge, in order: the first one some cell has
DEFAULT_QUALITIES = ("ndcg@10", "faithfulness", "context_relevance", "answer_relevance")


def quality_name(grid: Grid, summaries: list[RunSummary]) -> str:
    """The grid's ``quality``, else the cells' primary judge (a run with gold answers), else the first of
    ``DEFAULT_QUALITIES`` some cell has (a grid over questions-only runs ranks by faithfulness)."""
    if grid.quality:
        return grid.quality
    primary = next((s.primary_judge for s in summaries if s.primary_judge), None)
    if primary:
        return primary
    return next((name for name in DEFAULT_QUALITIES if any(name in s.metrics for s in summaries)), "ndcg@10")


def quality_of(summary: RunSummary, name: str) -> float | None:
    if name in summary.metrics:
        return summary.metrics[name]
    from evaluations.results.measures import is_verdict_name

    answers = summary.answers
    judge = answers.judges.get(name) if answers else None
    if judge:
        return judge.value
    if is_verdict_name(name) and answers and answers.to_answer:
        return 0.0  # cases to answer, none with this verdict (every answer failed): accuracy counts them wrong
    return None


def pareto(points: list[tuple[float | None, float | None]]) -> list[bool]:
    """(quality: higher better, cost: lower better) -> on the front? Cells missing either value are not."""
    front = []
    for i, (q, c) in enumerate(points):
        if q is None or c is None:
            front.append(False)
            continue
        dominated = any(q2 is not None and c2 is not None and q2 >= q and c2 <= c and (q2 > q or c2 < c)
                        for j, (q2, c2) in enumerate(points) if j != i)
        front.append(not dominated)
    return front


def summarize_matrix(grid: Grid, done: list[tuple[dict[str, str], Path]]) -> dict[str, Any]:
    from evaluations.experiments.compare import compare_runs

    from evaluations.results.measures import aggregate_parts, family_of, run_value

    runs = [load_run(d) for _, d in done]
    summaries = [run.summary for run in runs]
    quality = quality_name(grid, summaries)
    # the quality's direction comes from the measure registry (context_waste, latency, cost: lower is better)
    family = next((f for run in runs if (f := family_of(aggregate_parts(quality)[0], run)) is not None), None)
    sign = -1.0 if family is not None and not family.higher_is_better else 1.0
    rows = []
    for (params, folder), run in zip(done, runs):
        summary = run.summary
        answers = summary.answers or AnswersSummary()
        value = quality_of(summary, quality)
        if value is None and family is not None:
            value = run_value(quality, run)
        rows.append({
            "params": params,
            "metrics": {**summary.metrics, **{k: v.value for k, v in answers.judges.items()}},
            "quality": value,
            "latency_ms": {k: getattr(summary.latency_ms, k) for k in ("p50", "p95", "p99", "mean")},
            "tokens": {"per_query": answers.tokens.per_query, "per_correct_answer": answers.tokens.per_correct_answer},
            "cost_per_query": answers.cost_usd.per_query,
            "counts": summary.counts.model_dump(exclude_unset=True),
            "within_max_failures": within_max_failures(grid, summary),
            "seconds": summary.run.seconds,  # the cell's own run time
            "run_dir": str(folder),
        })
    if grid.quality and rows and all(r["quality"] is None for r in rows):
        raise EvaluationsError(f"no cell has a value for the grid's quality {grid.quality!r}", where="quality",
                               fix="name a metric the cells compute, e.g. ndcg@10 or a judge such as offline_correct")
    oriented = [None if r["quality"] is None else sign * r["quality"] for r in rows]  # higher is better
    points_cost = [(q, r["cost_per_query"]) for q, r in zip(oriented, rows)]
    points_latency = [(q, r["latency_ms"]["p95"]) for q, r in zip(oriented, rows)]
    for row, on_cost, on_latency in zip(rows, pareto(points_cost), pareto(points_latency)):
        row["pareto"] = {"cost": on_cost, "latency": on_latency}
    # the best cell is chosen among cells whose cases completed (within max_failures)
    scored = [r for r in rows if r["quality"] is not None and r["within_max_failures"]]
    best = max(scored, key=lambda r: sign * r["quality"]) if scored else None
    comparisons: list[dict[str, Any]] = []
    if best is not None and len(rows) > 1:
        loaded = {row["run_dir"]: run for row, run in zip(rows, runs)}  # each cell read once, above
        others = [loaded[r["run_dir"]] for r in rows if r is not best]
        result = compare_runs([loaded[best["run_dir"]], *others], segments=False)
        comparisons = result["comparisons"]
    return {"grid": grid.model_dump(), "quality": quality, "quality_higher_is_better": sign > 0,
            "best": best["params"] if best else None,
            "cells": rows, "comparisons": comparisons}


def default_folder(grid: Grid, grid_file: Path) -> Path:
    """The grid's ``out`` (relative to the grid file's folder), else ``runs/matrix-<grid file stem>``."""
    return grid_file.resolve().parent / grid.out if grid.out else Path("runs") / f"matrix-{grid_file.stem}"


def _label(params: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _run_cells_on_ray(grid: Grid, base: Path, combos: list[dict[str, str]], folder: Path, executor: str,
                      console: Console) -> list[tuple[dict[str, str], Path]]:
    """The first cell of each embedder here, one after the other (it builds that embedder's index); then every
    other cell as a Ray task, side by side, finding its index up to date."""
    from evaluations.pipeline.executors import open_executor

    cluster = open_executor(executor, where="executor")
    leaders: list[dict[str, str]] = []
    for params in combos:
        if all(params.get("embedder") != leader.get("embedder") for leader in leaders):
            leaders.append(params)
    rest = [params for params in combos if params not in leaders]
    finished: dict[str, tuple[Path, str]] = {}
    for params in leaders:
        console.print(f"[bold]cell {combos.index(params) + 1}/{len(combos)}[/] {_label(params)} (builds its index)")
        finished[cell_slug(params)] = run_cell(grid, base, params, folder / cell_slug(params), False, executor)
    console.print(f"[bold]{len(rest)} more cell(s)[/] as Ray tasks")
    # a task's working folder is the worker's: it gets absolute paths (the grid's base already is one)
    outcomes = cluster.map_tasks(run_cell, [(grid, base, p, folder.resolve() / cell_slug(p), False, executor)
                                            for p in rest])
    finished.update({cell_slug(p): (folder / cell_slug(p), what) for p, (_, what) in zip(rest, outcomes)})
    for i, params in enumerate(combos, 1):
        cell_dir, what = finished[cell_slug(params)]
        console.print(f"cell {i}/{len(combos)} {_label(params)}: {what}: {cell_dir}")
    return [(params, finished[cell_slug(params)][0]) for params in combos]


def run_matrix(grid: Grid, grid_file: Path, folder: Path, *, progress: bool, console: Console,
               executor: str | None = None) -> dict[str, Any]:
    """Run (or skip, or resume) every cell in ``folder``, then write ``matrix.json``, report.html and report.md;
    returns matrix.json's content. Says on ``console`` which cell runs and what happened to it. With a Ray
    executor (``executor``, else the grid's, else its config's) the cells run as Ray tasks."""
    from evaluations.core.config import load_config
    from evaluations.core.fsutil import atomic_write_json
    from evaluations.experiments.after import check_after_run
    from evaluations.pipeline.executors import parse_executor
    from evaluations.reports.writer import write_reports

    check_after_run()  # the OTel export's extra, when an endpoint is configured: before any cell
    base = grid_file.resolve().parent
    combos = cells(grid)
    executor = executor or grid.executor
    chosen = executor or load_config(str(base / grid.config) if grid.config else None).executor
    started = time.perf_counter()
    check_cells(grid, grid_file, combos, executor)
    done = []
    if parse_executor(chosen, where="executor").kind == "ray":
        done = _run_cells_on_ray(grid, base, combos, folder, chosen, console)
    else:
        for i, params in enumerate(combos, 1):
            console.print(f"[bold]cell {i}/{len(combos)}[/] {_label(params)}")
            cell_dir, what = run_cell(grid, base, params, folder / cell_slug(params), progress, executor)
            console.print(f"  {what}: {cell_dir}")
            done.append((params, cell_dir))
    result = summarize_matrix(grid, done)
    result["seconds"] = time.perf_counter() - started  # this invocation (finished cells are skipped)
    result["cells_seconds"] = sum(c["seconds"] or 0.0 for c in result["cells"])
    atomic_write_json(folder / "matrix.json", result)
    write_reports(folder)
    return result
