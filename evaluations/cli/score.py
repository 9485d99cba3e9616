"""``evaluations score FILE``: score precomputed outputs (classic answers, TREC runs, production logs)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from evaluations.cli.options import MAX_RESAMPLES, parse_judges, parse_ks
from evaluations.core.console import make_console
from evaluations.core.errors import EvaluationsError
from evaluations.core.progress import progress_bar
from evaluations.judging.correctness.lexical import KEYWORD_THRESHOLD
from evaluations.scoring import FORMATS, detect_format, dumps


def _ks(text: str | None, default: list[int]) -> list[int]:
    if not text:
        return default
    return parse_ks(text)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _warn(summary: dict) -> None:
    """Each warning of ``summary`` (``warnings`` and ``warning``) once on stderr, escaped: a warning quotes ids and
    text of the user's files, which rich would otherwise read as markup (``[/x]`` is an error, ``[slug]`` is lost)."""
    err = make_console(stderr=True)
    for warning in [*summary.get("warnings", []), *filter(None, [summary.get("warning")])]:
        err.print(f"[bold yellow]warning:[/] {escape(warning)}", highlight=False)


def _show(summary: dict) -> None:
    console = make_console(stderr=False)
    table = Table(title=f"{summary['format']}: {summary['file']}", show_header=False)
    table.add_column("figure", overflow="fold")  # a long key wraps, never cut: two cut keys would read the same
    table.add_column("value", justify="right")

    def add(prefix: str, value) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                add(f"{prefix}.{key}" if prefix else key, inner)
        elif isinstance(value, float):
            table.add_row(prefix, f"{value:.4f}" if value == 0 or abs(value) >= 1e-4 else f"{value:.3g}")
        elif isinstance(value, (int, str)) and prefix not in ("format", "file"):
            table.add_row(prefix, str(value))
        elif value is None:
            table.add_row(prefix, "unknown")  # not reported, not priced, nothing to judge: never 0, never left out

    add("", {k: v for k, v in summary.items() if k not in ("per_query", "agreement", "warning", "warnings")})
    console.print(table)
    buckets = (summary.get("calibration") or {}).get("buckets") or []
    if buckets:
        calibration = Table(title="Confidence calibration (accuracy per confidence bucket)")
        for column in ("confidence bucket", "n", "mean confidence", "accuracy"):
            calibration.add_column(column, justify="right")
        for b in buckets:
            calibration.add_row(f"{b['range'][0]:.1f}–{b['range'][1]:.1f}", str(b["n"]), f"{b['confidence']:.3f}",
                                f"{b['accuracy']:.3f}")
        console.print(calibration)


@click.command("score")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Default: detected from the file.")
@click.option("--qrels", type=click.Path(dir_okay=False), help="TREC qrels for a run file.")
@click.option("--golden", type=click.Path(dir_okay=False), help="Golden set for a log (dataset file, golden code "
              "queries or qrels).")
@click.option("--k", "ks", help="Cut-offs, comma separated (default 1,3,5,10,100; logs 1,3,5,10).")
@click.option("--corpus", type=click.Path(exists=True), help="Documents the ids of a log are looked up in (logs; "
              "a JSONL/JSON/CSV file or a folder of .txt/.md files, as run --corpus).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config with prices (logs) and the data "
              "folder the model judges cache in.")
@click.option("--tiers", help="Tier order, cheapest first, e.g. small,large (logs; default: order of appearance).")
@click.option("--bins", type=click.IntRange(min=1), default=10, show_default=True, help="Calibration bins (logs).")
@click.option("--judges", default="keyword,f1,em,containment", show_default=True,
              help="Judges of the agreement block (classic, labelled).")
@click.option("--keyword-threshold", type=click.FloatRange(0, 1), default=KEYWORD_THRESHOLD, show_default=True)
@click.option("--resamples", type=click.IntRange(min=0, max=MAX_RESAMPLES), default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--per-query", is_flag=True, help="Keep per-query metrics in the JSON (trec).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--out", "out", type=click.Path(), help="Folder for the per-query evidence of a log: cases.jsonl (one "
              "case record per query: claims, chunk verdicts, judges) and summary.json (a run summary; what --json "
              "prints is under log): a run folder gate, compare and report read.")
@click.option("--overwrite", is_flag=True, help="Replace cases.jsonl and summary.json of an earlier --out.")
@click.option("--reference-free/--no-reference-free", "reference_free", default=None,
              help="Run (or not) the reference-free judges on a log: faithfulness, answer_relevance, "
                   "context_relevance (default: judge.reference_free).")
def score(file, fmt, qrels, golden, corpus, ks, config_path, tiers, bins, judges, keyword_threshold, resamples, seed,
          per_query, as_json, out, overwrite, reference_free):
    """Score what already happened: classic labelled answers, a TREC run (+ --qrels) or production logs."""
    fmt = fmt or detect_format(file)
    for option, given in (("--corpus", corpus), ("--out", out), ("--overwrite", overwrite),
                          ("--reference-free/--no-reference-free", reference_free is not None)):
        if given and fmt != "log":
            raise EvaluationsError(f"{option} is for logs, not a {fmt} file", where=option,
                                   fix=f"drop {option}, or score a log (--format log)")
    if overwrite and not out:
        raise EvaluationsError("--overwrite replaces the files of --out, and no --out is given", where="--overwrite",
                               fix="add --out DIR, or drop --overwrite")
    if fmt == "classic":
        from evaluations.core.config import load_config
        from evaluations.scoring.classic import score_classic

        summary = score_classic(file, keyword_threshold=keyword_threshold, judges=tuple(parse_judges(judges)),
                                resamples=resamples, seed=seed, config=load_config(config_path))
    elif fmt == "trec":
        from evaluations.scoring.trec import score_trec

        if not qrels:
            raise EvaluationsError("a TREC run needs qrels", where=file, fix="pass --qrels QRELS_FILE")
        summary = score_trec(file, qrels, _ks(ks, [1, 3, 5, 10, 100]))
        if not per_query:
            summary.pop("per_query")
    else:
        from evaluations.core.config import load_config
        from evaluations.evaluators.reference_free import checker_label, reference_free_tools
        from evaluations.scoring.gold import load_gold
        from evaluations.scoring import log_out
        from evaluations.scoring.logs import score_logs

        config = load_config(config_path)
        judges = config.judge.reference_free_judges(has_qrels=False)
        if reference_free is not None:
            from evaluations.core.config import REFERENCE_FREE_JUDGES

            judges = list(REFERENCE_FREE_JUDGES) if reference_free else []
        tools = reference_free_tools(config, judges)  # checked before any log row is judged
        made = log_out.open_out(out, overwrite=overwrite) if out else []  # a bad --out before any work
        try:
            texts = None
            if corpus:
                from evaluations.datasets.generic import read_documents

                texts = {d.id: d.text for d in read_documents(corpus)}
            # the judges ask a model per query: a bar on stderr (cleared when done; stdout stays the summary)
            with progress_bar(make_console(stderr=True), bool(tools), transient=True, spinner=False) as bar:
                task = bar.add_task(f"judging ({', '.join(j for j in judges if j in tools)})", total=None)
                summary, records = score_logs(
                    file, gold=load_gold(golden) if golden else None, ks=_ks(ks, [1, 3, 5, 10]),
                    prices=dict(config.prices), bins=bins,
                    tiers=[t.strip() for t in tiers.split(",") if t.strip()] if tiers else None,
                    reference_free=judges, cache=config.cache.enabled, texts=texts, tools=tools,
                    cache_dir=str(config.judge_cache_dir()), data_dir=str(config.data_dir()),
                    progress=lambda done, total: bar.update(task, completed=done, total=total))
            if tools and "reference_free" in summary:  # the model the judges asked, named as a run's metadata names it
                summary["reference_free_judge"] = checker_label(config)
            if out:
                log_out.write_out(out, records, summary)
        except BaseException:
            log_out.discard(made)
            raise
    if as_json:
        click.echo(dumps(summary))
    else:
        _show(summary)
    if out:  # on stderr: stdout stays the summary alone
        written = _plural(summary["queries"], "case record")
        make_console(stderr=True).print(f"wrote {escape(str(Path(out) / 'cases.jsonl'))} ({written}) and "
                                        f"{escape(str(Path(out) / 'summary.json'))}", highlight=False)
    _warn(summary)  # on stderr, once, after the summary (the table or --json) and the files written
    if fmt == "log":
        _exit_if_judges_failed(records)


def _exit_if_judges_failed(records: list) -> None:
    """Exit 3 (as a run whose judges failed on some cases) when a reference-free judge failed on some queries
    (a served checker's error, an input longer than the embedded model's window): counted as ``failed`` in the
    summary above, never a score; the count and the first error on stderr."""
    from evaluations.core.exits import EXIT_CASES_FAILED

    failed = [r for r in records if r.judge_errors]
    if not failed:
        return
    first = failed[0].judge_errors[0]
    click.echo(f"exit {EXIT_CASES_FAILED}: a reference-free judge failed on {len(failed)} of {len(records)} queries "
               f"(counted as failed above, never a score); first: query {failed[0].name!r}, {first.evaluator}: "
               f"{first.error[:300]}", err=True)
    raise SystemExit(EXIT_CASES_FAILED)


def _all() -> list[click.Command]:
    from evaluations.cli.golden import commands as golden_commands  # run DATASET_FILE, golden

    return [score, *golden_commands]


commands: list[click.Command] = _all()
