"""CLI commands of the judges: ``judge-agreement`` and ``calibrate-judge``; ``judge-check`` is ``cli.judge_check``
(all three added to the root CLI through ``commands``)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich import box
from rich.table import Table

from evaluations.cli.judge_check import judge_check
from evaluations.cli.judge_common import (SERVED_HELP, check_served_judge, checker_name_of, control_table, counting,
                                          exit_if_failed, judge_config, judge_name, load_answers, model_options,
                                          note_checker, progress_display, stdout_console)
from evaluations.cli.options import MAX_RESAMPLES, parse_judges
from evaluations.core.errors import EvaluationsError
from evaluations.core.exits import EXIT_CHECK_FAILED
from evaluations.core.fsutil import atomic_write_text
from evaluations.judging.correctness.lexical import KEYWORD_THRESHOLD


_ALL_JUDGES = "keyword,f1,em,containment,semantic,offline"


@click.command("judge-agreement")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--judges", default=_ALL_JUDGES, show_default=True, help="Comma-separated judges to compare.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use at most N labelled answers per file.")
@click.option("--keyword-threshold", type=click.FloatRange(0, 1), default=KEYWORD_THRESHOLD, show_default=True)
@click.option("--resamples", type=click.IntRange(min=0, max=MAX_RESAMPLES), default=1000, show_default=True,
              help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True,
              help="LLM judge requests in flight (served models; the embedded judge runs one at a time).")
@model_options(SERVED_HELP, "Judge again instead of reusing cached LLM verdicts.")
def judge_agreement(files, judges, as_json, limit, keyword_threshold, resamples, seed, judge_model, concurrency,
                    config_path, no_cache):
    """Agreement of answer judges with human correctness labels (classic JSONL/CSV or EVOUNA files); the
    reference-free judges (faithfulness, answer_relevance, context_relevance) read rows of query, context
    (passages), generated_answer (not for context_relevance) and label, the property the judge measures
    (``judging.labels.passage_rows``)."""
    from evaluations.judging.validation.agreement import run_judges
    from evaluations.judging.validation.registry import JUDGES, batch_judge, per_passage, reads_passages

    names = parse_judges(judges)
    config = judge_config(judge_model, config_path)
    check_served_judge(names, config)
    # a reference-free judge (answer_relevance too) reads rows with passages, checked as judging.labels.passage_rows says
    nulls: dict[str, int] = {}
    examples = load_answers(files, limit, passages=reads_passages(names), judges=names, nulls=nulls)
    cache = not no_cache and config.cache.enabled
    failures: dict[str, list[tuple[str, str]]] = {}
    batch = {n: counting(batch_judge(n, keyword_threshold, cache=cache, config=config), failures.setdefault(n, []))
             for n in per_passage(names)}
    note_checker(names, config)
    llm = None
    if "llm" in names:
        from evaluations.judging.correctness.llm import batch_judge

        llm = batch_judge(config.judge.model, config, concurrency=concurrency, cache=cache,
                          errors=failures.setdefault("llm", []))
    with progress_display() as progress:
        tasks = {n: progress.add_task(f"judge {n}", total=len(examples) if n in ("llm", "combined", *per_passage(names))
                                      else None) for n in names}

        def step(name: str, k: int) -> None:
            progress.update(tasks[name], advance=k)

        results = run_judges(
            examples, names, keyword_threshold=keyword_threshold, resamples=resamples, seed=seed, progress=step,
            llm=llm, cache=cache, batch=batch, config=config,
        )
    failed = {r.judge: len(failures[r.judge]) if r.judge in failures else
              (0 if JUDGES[r.judge].not_judged else len(examples) - r.n) for r in results}
    if as_json:
        from evaluations.judging.validation.agreement import payload

        document = payload(files, examples, results, resamples=resamples, seed=seed, failed=failed)
        if nulls:
            document["rows_labelled_null"] = nulls  # read and left out: no property to agree on
        click.echo(json.dumps(document, indent=2))
        exit_if_failed(failed, failures, len(examples), config)
        return
    n_questions = len({e.group for e in examples})
    table = Table(
        title=f"Judge agreement with human labels: {len(examples)} answers, {n_questions} questions",
        caption="positive = the label's property (correct; supported; needed); under each value its 95% CI "
                "(bootstrap over questions)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for column in ("judge", "accuracy", "precision", "recall", "F1", "κ", "says ✓", "judged"):
        table.add_column(column, justify="left" if column == "judge" else "right", no_wrap=True)

    def cell(value: float, ci: tuple[float, float]) -> str:
        """A value over its CI; undefined (NaN: nothing judged, a zero denominator; an interval also when no
        resample defines it or --resamples 0) is n/a, never a number."""
        if value != value:
            return "n/a"
        return f"{value:.3f}\n[dim]{f'{ci[0]:.2f}–{ci[1]:.2f}' if ci[0] == ci[0] else 'n/a'}[/dim]"

    for r in results:
        cells = [cell(r.values[m], r.ci[m]) for m in ("accuracy", "precision", "recall", "f1", "kappa")]
        says = f"{r.judge_positive_rate:.1%}" if r.n else "n/a"
        table.add_row(r.judge, *cells, says, str(r.n))
    stdout_console().print(table)
    labelled = [r for r in results if r.n]
    if labelled:
        click.echo(f"human says positive: {labelled[0].human_positive_rate:.1%}")
    for r in results:
        if r.n + failed[r.judge] < len(examples):
            why = JUDGES[r.judge].not_judged or "the judge failed on them"
            click.echo(f"{r.judge}: {len(examples) - r.n - failed[r.judge]} of {len(examples)} rows not judged "
                       f"({why})")
    exit_if_failed(failed, failures, len(examples), config)


@click.command("calibrate-judge")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--judges", "judge", default="offline", show_default=True,
              type=click.Choice(["offline", "faithfulness", "groundedness", "context_relevance"]),
              help="The judge to fit: the offline correctness judge on labelled answers, or a reference-free judge "
                   "on labelled passage rows (those of judge-agreement) through the --judge-model checker.")
@click.option(
    "--out", type=click.Path(dir_okay=False), default=None, help="Where to write the parameters [default: "
    "$EVALUATIONS_JUDGES_DIR/<judge file>, else ./<judge file> in the working directory; the judge file is "
    "offline_judge.json, faithfulness.json or context_relevance.json (context_relevance_served.json through a "
    "served checker, which asks in the conversation form)]. Runs read <judge file> from "
    "$EVALUATIONS_JUDGES_DIR, else the shipped one; to replace the shipped file in a checkout, pass --out "
    "judges/<judge file>."
)
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Use at most N labelled answers per file.")
@click.option("--min-rate", type=click.FloatRange(0, 1), default=0.95, show_default=True,
              help="Controls (judge-check) the fitted judge must pass before its parameters are written (offline).")
@click.option("--force", is_flag=True, help="Write the parameters even when they fail the controls, or (reference-"
                                            "free) validate worse than the current ones (said loudly).")
@click.option("--control-questions", type=click.IntRange(min=1), default=500, show_default=True,
              help="Controls are built from this many questions of the files (a seeded sample; offline).")
@model_options("The checker a reference-free judge is fitted through: embedded, ollama:NAME or openai:NAME (the "
               "model your runs' judge.model names).", "Ask the checker again instead of reusing cached verdicts.")
def calibrate_judge(files, judge, out, folds, limit, min_rate, force, control_questions, judge_model, config_path,
                    no_cache):
    """Fit a judge on labelled rows and report its question-grouped CV accuracy. The offline judge refuses to
    write parameters that fail the controls (``judge-check``); a reference-free judge (faithfulness,
    context_relevance) is refitted on the signals of the checker it will run with and refuses to write parameters
    that validate worse than the current ones on the same rows, unless --force."""
    config = judge_config(judge_model, config_path)  # a bad config or --judge is an error on every path
    if out:
        _check_out(Path(out))  # before any judging: a path that cannot be written is refused first
    if judge != "offline":
        _calibrate_reference_free(files, judge, out, folds, limit, force, judge_model, config_path, no_cache)
        return
    from evaluations.judging.validation.agreement import offline_batch
    from evaluations.judging.validation.calibrate import calibrate
    from evaluations.judging.validation.controls import build_controls, run_controls
    from evaluations.judging.labels.questions import questions_of
    from evaluations.judging.basics.fitted import default_params_path
    from evaluations.judging.correctness.semantic import cache_file

    path = Path(out) if out else _default_out("offline_judge.json")  # a bad $EVALUATIONS_JUDGES_DIR fails first
    examples = load_answers(files, limit, judges=("offline",))  # the offline judge compares with the gold: rows need it
    embeddings = cache_file(not no_cache and config.cache.enabled, config.judge_cache_dir()) or False
    with progress_display() as progress:
        task = progress.add_task("embedding answers and gold", total=None)
        model = calibrate(
            examples, folds=folds, sources=[Path(f).name for f in files], cache_path=embeddings,
            progress=lambda k: progress.update(task, advance=k),
        )
    items = questions_of(examples)
    if len(items) > control_questions:
        import numpy as np

        rng = np.random.default_rng(0)
        items = [items[i] for i in sorted(rng.choice(len(items), control_questions, replace=False))]
    report = run_controls(build_controls(items), {"offline": offline_batch(model, cache_path=embeddings)},
                          min_rate=min_rate)
    model.info["controls"] = report.to_dict()["judges"]["offline"]
    failures = [c for _, c in report.failures()]
    if failures:
        stdout_console().print(control_table(report, "Controls of the fitted offline judge"))
        if not force:
            click.echo(f"error: the fitted parameters fail the controls ({', '.join(failures)}); nothing written",
                       err=True)
            click.echo("fix: add labelled non-answers to the training files, or pass --force to write them anyway",
                       err=True)
            raise SystemExit(EXIT_CHECK_FAILED)
        click.echo(f"WARNING: writing parameters that FAIL the controls: {', '.join(failures)} (--force)", err=True)
    atomic_write_text(path, json.dumps(model.to_dict(), indent=2) + "\n", fix="choose another --out")
    cv = model.info["cross_validation"]
    table = Table(title=f"Offline judge on {len(examples)} labelled answers")
    table.add_column("judge")
    table.add_column("accuracy", justify="right")
    table.add_row("offline judge (CV)", f"{cv['accuracy']:.4f}")
    for name, accuracy in cv["baselines_same_rows"].items():
        table.add_row(name, f"{accuracy:.4f}")
    table.add_row("majority class", f"{cv['majority_class']:.4f}")
    stdout_console().print(table)
    click.echo(f"cross-validation: {cv['method']}")
    _say_written(path, default_params_path())


def _default_out(name: str) -> Path:
    """Where calibrate-judge writes ``name`` without --out: ``$EVALUATIONS_JUDGES_DIR/<name>``, the folder runs read
    fitted parameters from, else ``./<name>`` in the working directory; never the shipped ``judges/<name>`` of a
    checkout, which every run reads (refitting the shipped file takes an explicit ``--out judges/<name>``)."""
    from evaluations.core.env import env_dir
    from evaluations.judging.basics.fitted import JUDGES_ENV

    folder = env_dir(JUDGES_ENV)
    return (folder if folder is not None else Path.cwd()) / name


def _say_written(path: Path, read: Path) -> None:
    """Say where the parameters were written and how a run uses them (runs read ``read``)."""
    click.echo(f"wrote {path}")
    if path.resolve() == read.resolve():
        click.echo("runs read this file")
        return
    how = (f"set EVALUATIONS_JUDGES_DIR={path.parent.resolve()}" if path.name == read.name
           else f"name it {read.name} and set EVALUATIONS_JUDGES_DIR to its folder")
    click.echo(f"runs read {read}, not this file; to use it: {how}")


def _check_out(path: Path) -> None:
    """``--out`` names a file that can be made: no file stands where a folder of its path is (a folder as --out is
    click's to refuse)."""
    existing = next((p for p in path.parents if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise EvaluationsError(f"{existing} is a file, not a folder", where=str(path),
                               fix="choose an --out path whose folders are folders")


def _calibrate_reference_free(files, judge: str, out, folds: int, limit, force: bool, judge_model: str | None,
                              config_path, no_cache: bool) -> None:
    """calibrate-judge of faithfulness / context_relevance (``judging.validation.refit``)."""
    from evaluations.judging.basics.fitted import default_params_path
    from evaluations.judging.validation.refit import RowsFailed, refit
    from evaluations.judging.checkers.served_checker import judge_tools

    name = judge_name(judge)
    config = judge_config(judge_model, config_path)
    examples = load_answers(files, limit, passages=True, judges=(name,))
    scorer, decompose = judge_tools(config, name)
    checker = f"{checker_name_of(config)} (checker id {scorer.id})"
    from evaluations.judging.correctness.embedded import verdict_cache

    cache = verdict_cache(not no_cache and config.cache.enabled, config.judge_cache_dir())
    try:
        with progress_display() as progress:
            task = progress.add_task(f"{name}: asking {checker.split(' ')[0]}", total=len(examples))
            result = refit(name, examples, scorer=scorer, decompose=decompose, cache=cache, checker=checker,
                           folds=folds, progress=lambda k: progress.update(task, advance=k))
    except RowsFailed as failed:
        m = failed.measured
        exit_if_failed({name: len(m.failed)}, {name: m.failed}, m.rows, config,
                        left=f"{len(m.y)} rows measured, {m.not_applicable} not applicable: nothing is fitted on "
                             "part of the rows, nothing written")
    m = result.measured
    table = Table(title=f"{name} on {len(m.y)} labelled rows, {len(set(m.groups.tolist()))} questions, "
                        f"through {checker}",
                  caption=f"refit: question-grouped {folds}-fold CV; current: the parameters runs read now, on "
                          "the same rows; under each value its 95% CI (bootstrap over questions)",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("parameters", "accuracy", "κ", "says ✓", "judged"):
        table.add_column(column, justify="left" if column == "parameters" else "right", no_wrap=True)
    for label, a in (("refit (held out)", result.cv), ("current", result.current)):
        cells = [f"{a.values[k]:.3f}\n[dim]{a.ci[k][0]:.2f}–{a.ci[k][1]:.2f}[/dim]" for k in ("accuracy", "kappa")]
        table.add_row(label, *cells, f"{a.judge_positive_rate:.1%}", str(a.n))
    stdout_console().print(table)
    if m.not_applicable:
        click.echo(f"{m.not_applicable} labelled row(s) left out: the judge does not apply to them")
    click.echo(f"checker calls made: {m.calls} (the rest were cached)")
    if not result.better:
        if not force:
            click.echo(f"error: the refit's held-out accuracy ({result.cv.values['accuracy']:.3f}) is below the "
                       f"current parameters' ({result.current.values['accuracy']:.3f}) on the same rows; nothing "
                       "written", err=True)
            click.echo("fix: label more rows (both kinds, more questions), or pass --force to write them anyway",
                       err=True)
            raise SystemExit(EXIT_CHECK_FAILED)
        click.echo("WARNING: writing parameters that validate WORSE than the current ones (--force)", err=True)
    path = Path(out) if out else _default_out(result.file)
    atomic_write_text(path, json.dumps(result.document(), indent=2) + "\n", fix="choose another --out")
    _say_written(path, default_params_path(result.file))


commands: list[click.Command] = [judge_agreement, calibrate_judge, judge_check]
