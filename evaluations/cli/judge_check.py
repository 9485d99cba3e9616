"""CLI command ``judge-check``: controls of the judges (non-answers must be rejected, gold answers accepted), the
answer judges' and the reference-free judges' own."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from evaluations.cli.judge_common import (SERVED_HELP, check_served_judge, control_table, counting, exit_if_failed,
                                          judge_config, model_options, note_checker, progress_display,
                                          stdout_console)
from evaluations.cli.options import parse_judges
from evaluations.core.errors import EvaluationsError
from evaluations.core.exits import EXIT_CHECK_FAILED
from evaluations.judging.correctness.lexical import KEYWORD_THRESHOLD

if TYPE_CHECKING:
    from evaluations.core.config import Config
    from evaluations.judging.labels.questions import ControlQuestions, QAItem


def _verdict(report, every: str) -> bool:
    """Print the check's verdict under its table(s): ``every`` when every category of every judge was measured and
    passed, else the failed categories and, one line each, the categories not checked (no controls) and why.
    True when the check did not pass."""
    failures, unchecked = report.failures(), report.unchecked()
    if failures:
        click.echo("FAIL: " + ", ".join(f"{j} on {c}" for j, c in failures))
    for judge, category, why in unchecked:
        click.echo(f"NOT CHECKED: {judge} on {category}: no controls ({why})")
    if unchecked:
        click.echo("fix: give files (or a larger --limit) that yield every category; a category without controls "
                   "is no pass")
    if not failures and not unchecked:
        click.echo(every)
    return bool(failures or unchecked)


def controls_for(questions: ControlQuestions, limit: int | None, seed: int):
    """Controls built from the answerable questions of the files' ``questions`` (``labels.read.read_questions``:
    each file once, questions told apart by file and id), the first ``limit`` of each file."""
    from evaluations.judging.validation.controls import build_controls

    items = questions.first(limit)
    controls = build_controls(items, seed=seed)
    if not controls:
        raise EvaluationsError("no answerable question with a gold answer to build controls from",
                               where=", ".join(file for file, _ in questions.files),
                               fix="give files whose questions have gold answers")
    return items, controls


def _nan_failed(examples, verdicts):
    """The controls an answer judge gave no verdict on: its model failed (a served ``llm`` judge's error); the
    answer judges apply to every control, so, as judge-agreement counts them, every NaN is a failure."""
    import numpy as np

    return np.isnan(np.asarray(verdicts, dtype=float))


@click.command("judge-check")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--judges", default="offline,llm,combined", show_default=True,
              help="Comma-separated judges to check (those of judge-agreement).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N answerable questions per file.")
@click.option("--min-rate", type=click.FloatRange(0, 1), default=0.95, show_default=True,
              help="A category passes when the judge rejects (negative) or accepts (positive) this share.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@model_options(SERVED_HELP, "Judge again instead of reusing cached LLM verdicts.")
def judge_check(files, judges, limit, min_rate, seed, as_json, judge_model, config_path, no_cache):
    """Controls: does each judge reject non-answers and accept gold answers? The reference-free judges get their
    own (faithfulness: a copied passage sentence vs one with a swapped fact; context_relevance: the question's own
    passage vs another question's, drawn from every question of the files). Exit 1 when a category fails or is not
    checked: the files gave no control of it (a judge that says yes to everything passes the positive ones).

    The files are read as questions and gold (``labels.read.read_questions``): a labelled file needs no
    generated answer or label (the controls are the answers), a file given twice is an error, an id given to two
    different questions is an error. Controls the judge's model gave no verdict on (an error status, a reply
    without yes/no) are counted as FAILED apart from the rates, said on stderr with the server and the first error,
    and exit 3 as judge-agreement does (``exit_if_failed``): a check on the rest is no check of the judge."""
    from evaluations.judging.labels.read import read_questions
    from evaluations.judging.validation.controls import run_controls
    from evaluations.judging.validation.registry import batch_judge, per_passage

    names = parse_judges(judges)
    passage_judges = per_passage(names)
    names = [n for n in names if n not in passage_judges]
    config = judge_config(judge_model, config_path)
    check_served_judge(names, config)
    cache = not no_cache and config.cache.enabled
    questions = read_questions(files)
    for note in questions.notes:
        click.echo(f"note: {note}", err=True)
    failed: dict[str, int] = {}  # judge -> controls its model gave no verdict on
    failures: dict[str, list[tuple[str, str]]] = {}  # judge -> (file:line, error) of those, when known
    asked: dict[str, int] = {}  # judge -> its controls
    check_failed, answers = False, None
    if names:
        items, controls = controls_for(questions, limit, seed)
        batch = {name: batch_judge(name, KEYWORD_THRESHOLD, cache=cache, config=config) for name in names}
        model = config.judge.model  # the default embedded judge is the registry's "llm"; any other is asked here
        if "llm" in names and model is not None and (model.provider != "embedded" or model.name):
            from evaluations.judging.correctness.llm import batch_judge

            batch["llm"] = batch_judge(config.judge.model, config, cache=cache, errors=failures.setdefault("llm", []))
        with progress_display() as progress:
            tasks = {n: progress.add_task(f"judge {n}", total=len(controls)) for n in names}
            report = run_controls(controls, batch, min_rate=min_rate,
                                  progress=lambda name, k: progress.update(tasks[name], advance=k),
                                  failed={n: _nan_failed for n in names})
        for name, results in report.judges.items():
            failed[name], asked[name] = sum(r.failed for r in results), len(controls)
        check_failed = bool(report.failures() or report.unchecked())
        if as_json and not passage_judges:
            click.echo(json.dumps({"files": [file for file, _ in questions.files], "controls": len(controls),
                                   **report.to_dict()}, indent=2))
        elif not as_json:
            skipped = sum(1 for i in items if not (i.answerable and i.references))
            title = (f"Controls from {report.questions} questions ({len(controls)} answers; {skipped} unanswerable "
                     "or gold-less questions skipped)")
            stdout_console().print(control_table(report, title))
            _verdict(report, "every judge passes every category")
        answers = report.to_dict() if as_json else None
    if passage_judges:
        check_failed |= _passage_check(questions, passage_judges, limit, min_rate, seed, as_json, cache,
                                       answers=answers, config=config, failed=failed, failures=failures, asked=asked)
    exit_if_failed(failed, failures, asked, config, left="left out of the control rates above")
    if check_failed:
        raise SystemExit(EXIT_CHECK_FAILED)


def _passage_check(questions: ControlQuestions, judges: list[str], limit, min_rate: float, seed: int, as_json: bool,
                   cache: bool, *, config: Config, answers: dict | None = None, failed: dict[str, int],
                   failures: dict[str, list[tuple[str, str]]], asked: dict[str, int]) -> bool:
    """judge-check of the reference-free judges: each on its own controls (``controls.PASSAGE_CONTROLS``), built
    from the ``questions`` of the files that carry a passage, asked through ``config``'s ``judge.model`` (embedded
    or served), verdicts cached in its ``judge_cache_dir()`` when ``cache``. A control the served checker fails on
    (``core.errors.JudgeFailed``) is counted in ``failed`` / ``failures`` (``counting``, as judge-agreement
    counts a row), apart from those the judge does not apply to; ``asked``: each judge's controls. True when a
    category failed or was not checked."""
    from evaluations.judging.validation.controls import PASSAGE_CONTROLS, ControlReport, build_passage_controls, run_controls
    from evaluations.judging.validation.registry import batch_judge
    items, pool = questions.first(limit), questions.every()
    note_checker(judges, config)
    reports = {}
    for name in judges:
        controls = build_passage_controls(items, name, seed=seed, pool=pool)
        if not controls:
            raise EvaluationsError(f"no answerable question with a gold answer and a passage to build {name} "
                                   "controls from", where=", ".join(file for file, _ in questions.files),
                                   fix="give dataset files whose questions carry their passage (SQuAD, CLAPNQ, …)")
        marked: set[int] = set()
        run = counting(_marking(batch_judge(name, KEYWORD_THRESHOLD, cache=cache, config=config), marked),
                       failures.setdefault(name, []))
        with progress_display() as progress:
            task = progress.add_task(f"judge {name}", total=len(controls))
            reports[name] = (len(controls), run_controls(
                controls, {name: run}, min_rate=min_rate,
                progress=lambda _n, k: progress.update(task, advance=k), categories=PASSAGE_CONTROLS[name],
                failed={name: lambda examples, _v, _m=marked: [id(e) in _m for e in examples]}))
        failed[name], asked[name] = len(failures[name]), len(controls)
    combined = ControlReport(min_rate, 0, {n: rows for _, r in reports.values() for n, rows in r.judges.items()})
    if as_json:
        payload = {"files": [file for file, _ in questions.files],
                   "reference_free": {n: {"controls": k, **r.to_dict()} for n, (k, r) in reports.items()}}
        click.echo(json.dumps({**(answers or {}), **payload}, indent=2))
    else:
        for name, (count, report) in reports.items():
            title = f"{name} controls from {report.questions} questions ({count})"
            stdout_console().print(control_table(report, title, PASSAGE_CONTROLS[name]))
        _verdict(combined, "every reference-free judge passes every category")
    return bool(combined.failures() or combined.unchecked())


def _marking(run, marked: set[int]):
    """``run`` (a reference-free batch judge) noting in ``marked`` (by identity) the rows its served checker fails
    on (``core.errors.JudgeFailed``, re-raised for ``counting`` to count): those controls are counted as
    failed, apart from the rows the judge does not apply to (both are NaN verdicts)."""
    from evaluations.core.errors import JudgeFailed

    def each(examples, progress=None):
        try:
            return run(examples, progress)
        except JudgeFailed:
            marked.update(id(e) for e in examples)
            raise

    return each


def passage_questions(files: tuple[str, ...], limit: int | None) -> tuple[list[QAItem], list[QAItem]]:
    """(the questions the reference-free controls are built for: the first ``limit`` answerable ones of each file;
    every question of the files: the pool another passage and the swapped-in names are drawn from), read by
    ``labels.read.read_questions`` (each file once; questions told apart by file and id)."""
    from evaluations.judging.labels.read import read_questions

    questions = read_questions(files)
    return questions.first(limit), questions.every()
