"""``evaluations run DATASET_FILE``, ``evaluations golden [validate] [FILE] --repo DIR``.

Both run the normal pipeline (``cli.root.run_dataset``) on a DatasetSpec built for the given files and registered
in ``datasets.DATASETS`` for this invocation. ``golden`` adds metrics by tag (``by_tag.json`` in the run folder).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from evaluations.cli.options import common_options
from evaluations.cli.root import run_dataset
from evaluations.core.console import make_console
from evaluations.core.errors import EvaluationsError
from evaluations.core.exits import EXIT_CHECK_FAILED
from evaluations.results.rundata import RunData

DEFAULT_GOLDEN = Path("datasets") / "golden_code_queries.json"
BY_TAG_METRICS = ("ndcg@10", "mrr@10", "recall@10", "hit@1", "hit@5")


def _register(spec) -> None:
    from evaluations.datasets import DATASETS

    DATASETS[spec.name] = spec


@click.command("run")
@click.argument("dataset_file", type=click.Path(dir_okay=False))
@click.option("--corpus", type=click.Path(exists=True), required=True,
              help="Documents: a JSONL/JSON/CSV file (id, text, title?) or a folder of .txt/.md files.")
@common_options
def run_command(dataset_file: str, corpus: str, **params) -> None:
    """Your own dataset file (JSON/JSONL/YAML/CSV/TSV; schema datasets/schemas/dataset_record.schema.json)."""
    from evaluations.datasets.generic import spec_for

    _register(spec_for(dataset_file, corpus, name="run"))
    if not params["name"]:
        params["name"] = f"{Path(dataset_file).stem}-{params['search_mode'] or 'run'}"
    run_dataset("run", dataset_file, params)


def golden_spec(golden_file: Path, repo: Path):
    """The DatasetSpec of a golden file over the code corpus of ``repo``."""
    from evaluations.datasets import DatasetSpec
    from evaluations.datasets.spec import apply_limit
    from evaluations.datasets.code import code_documents
    from evaluations.core.types import Corpus, Query
    from evaluations.datasets.golden_schema import read_golden

    def load(options) -> Corpus:
        queries = [Query(id=str(q.query_id), text=q.query, relevant=q.relevance(), answers=[q.ground_truth_answer],
                         tags=[*q.tags, f"difficulty:{q.difficulty}"]) for q in read_golden(golden_file)]
        corpus = Corpus(name=f"golden-{repo.resolve().name}", documents=code_documents(repo), queries=queries,
                        source=f"{golden_file} over {repo}")
        return apply_limit(corpus, options.limit)

    return DatasetSpec(name="golden", description="golden code-span queries over a repository", load=load, answers=True)


def by_tag(run: RunData, metrics=BY_TAG_METRICS) -> dict[str, dict]:
    """{tag: {"cases": n, metric: mean}} by the one segment rule (``results.segments``, as the summary's
    ``segments``: a case whose retrieval failed counts as 0)."""
    from evaluations.results.segments import segment_metrics

    return {tag: {"cases": seg["cases"], **{m: seg["metrics"].get(m) for m in metrics}}
            for tag, seg in segment_metrics(run).items()}


def _show_findings(findings, console: Console) -> None:
    console.print(f"[bold]{len(findings)} stale golden span(s)[/]")
    for f in findings:
        console.print(f"- {f.span.path}::{f.span.symbol} [{f.status}] (query: {f.query[:60]})", highlight=False,
                      markup=False)
        console.print(f"    fix: {f.fix()}", highlight=False, markup=False, soft_wrap=True)


def _validate(golden_file: Path, repo: Path, update: bool, as_json: bool) -> int:
    from evaluations.datasets.golden_schema import read_golden, write_golden
    from evaluations.datasets.golden_validate import apply_updates, validate

    console = make_console(stderr=True)
    queries = read_golden(golden_file)
    findings = validate(queries, repo)
    stale = [f for f in findings if f.status != "ok"]
    updated = 0
    if stale and not as_json:
        _show_findings(stale, console)
    if update and any(f.updatable for f in stale):
        for f in stale:
            if f.updatable:
                target = f"{f.new_path}::{f.new_symbol}" if f.status == "moved" else f"{f.span.path}::{f.span.symbol}"
                console.print(f"update {f.span.path}::{f.span.symbol} -> {target}: "
                              f"span_hash {f.span.span_hash[:12]}… -> {f.new_hash[:12]}…")
        updated = apply_updates(queries, findings)
        write_golden(golden_file, queries)
        console.print(f"[green]rewrote[/] {golden_file} ({updated} span(s) updated)")
    remaining = [f for f in stale if not (update and f.updatable)]
    if as_json:
        click.echo(json.dumps({"file": str(golden_file), "repo": str(repo), "spans": len(findings),
                               "stale": [f.to_dict() for f in stale], "updated": updated,
                               "remaining": len(remaining)}, indent=2))
    elif not stale:
        console.print(f"[green]ok[/]: {len(findings)} spans of {len(queries)} queries match {repo}")
    return EXIT_CHECK_FAILED if remaining else 0


@click.command("golden", context_settings={"ignore_unknown_options": False})
@click.argument("args", nargs=-1)
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=".",
              show_default=True, help="Root of the repository the spans come from.")
@click.option("--update", is_flag=True, help="(validate) rewrite hashes of spans whose symbol still exists.")
@common_options
def golden_command(args: tuple[str, ...], repo: Path, update: bool, **params) -> None:
    """Golden code-span queries. `golden validate [FILE] --repo DIR [--update]` checks the spans still match
    the code; `golden [FILE] --repo DIR` evaluates retrieval (graded by relevance_score) and answers by tag.
    FILE defaults to datasets/golden_code_queries.json under --repo."""
    import sys

    mode = "validate" if args[:1] == ("validate",) else "run"
    rest = args[1:] if mode == "validate" else args
    if len(rest) > 1:
        raise EvaluationsError(f"unexpected arguments {' '.join(rest[1:])}", where="golden", fix="give at most one FILE")
    golden_file = Path(rest[0]) if rest else repo / DEFAULT_GOLDEN
    if mode == "validate":
        sys.exit(_validate(golden_file, repo, update, params["as_json"]))
    if update:
        raise EvaluationsError("--update only applies to 'golden validate'", where="--update",
                               fix="evaluations golden validate --update")
    _check_fresh(golden_file, repo)
    _register(golden_spec(golden_file, repo))
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    name = params["name"] or f"golden-{params['search_mode'] or 'default'}"
    params["name"] = name
    params["out"] = params["out"] or params.get("resume") or Path("runs") / f"{name}-{stamp}"
    try:
        run_dataset("golden", str(golden_file), params)
    finally:  # also when the run exits 3 (too many failed cases): the finished run's segments are written
        if (Path(params["out"]) / "summary.json").is_file():
            from evaluations.results.rundata import load_run

            _write_by_tag(Path(params["out"]), by_tag(load_run(params["out"])))


def _write_by_tag(out: Path, segments: dict[str, dict]) -> None:
    from evaluations.core.fsutil import atomic_write_json

    atomic_write_json(out / "by_tag.json", segments)
    table = Table(title="Golden queries by tag")
    table.add_column("tag")
    table.add_column("cases", justify="right")
    for metric in BY_TAG_METRICS:
        table.add_column(metric, justify="right")
    for tag, row in segments.items():
        table.add_row(tag, str(row["cases"]), *("-" if row[m] is None else f"{row[m]:.3f}" for m in BY_TAG_METRICS))
    make_console(stderr=True).print(table)


def _check_fresh(golden_file: Path, repo: Path) -> None:
    """Missing spans would silently lower every metric: refuse them; changed text is only a warning."""
    from evaluations.datasets.golden_schema import read_golden
    from evaluations.datasets.golden_validate import validate

    findings = validate(read_golden(golden_file), repo)
    missing = [f for f in findings if f.status in ("missing", "moved")]
    if missing:
        shown = "; ".join(f"{f.span.path}::{f.span.symbol} ({f.fix()})" for f in missing[:5])
        raise EvaluationsError(f"{len(missing)} expected span(s) are not in {repo}: {shown}", where=str(golden_file),
                               fix=f"evaluations golden validate {golden_file} --repo {repo} [--update]")
    changed = sum(f.status == "changed" for f in findings)
    if changed:
        make_console(stderr=True).print(f"[yellow]warning:[/] {changed} span(s) changed since the golden file was written "
                                   f"(evaluations golden validate --repo {repo})")


commands: list[click.Command] = [run_command, golden_command]
