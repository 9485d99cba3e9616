"""CLI commands of the judges: ``judge-agreement`` and ``calibrate-judge`` (added to the root CLI)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich import box
from rich.progress import Progress
from rich.table import Table

from evaluations.cli.options import MAX_RESAMPLES, parse_judges
from evaluations.core.console import make_console
from evaluations.core.errors import EvaluationsError
from evaluations.core.exits import EXIT_CASES_FAILED, EXIT_CHECK_FAILED
from evaluations.core.fsutil import atomic_write_text
from evaluations.core.progress import progress_bar
from evaluations.judging.correctness.lexical import KEYWORD_THRESHOLD

if TYPE_CHECKING:
    from evaluations.core.config import Config
    from evaluations.judging.labels.questions import ControlQuestions
    from evaluations.judging.labels.rows import LabelledAnswer
    from evaluations.judging.labels.questions import QAItem

_ALL_JUDGES = "keyword,f1,em,containment,semantic,offline"


def _model_options(judge_help: str, cache_help: str):
    """The options naming the judge model (``--judge``/``--judge-model``), the config and ``--no-cache``."""

    def apply(command):
        for option in reversed([
            click.option("--judge", "--judge-model", "judge_model", default=None,
                         help=judge_help + " [default: the config's judge.model, else embedded]"),
            click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
                         help="Config file (server URLs, storage.data_dir) [default: haiku.rag.yaml resolution]."),
            click.option("--no-cache", is_flag=True, help=cache_help),
        ]):
            command = option(command)
        return command

    return apply


def _judge_name(judge: str) -> str:
    """The reference-free judge behind a name (``groundedness`` is faithfulness's other name)."""
    from evaluations.core.config import REFERENCE_FREE_ALIASES

    return REFERENCE_FREE_ALIASES.get(judge, judge)


_SERVED_HELP = ("The model behind the `llm` judge: embedded[:NAME], ollama:NAME or openai:NAME; a served model is "
                "also asked by the reference-free judges (faithfulness, context_relevance).")


def _out():
    return make_console(stderr=False)  # a terminal's width, or unwrapped at a fixed width for pipes and files


def _progress() -> Progress:
    return progress_bar(make_console(stderr=True), transient=True, spinner=False)


def _load(files: tuple[str, ...], limit: int | None, passages: bool = False, judges: Iterable[str] = (),
          nulls: dict[str, int] | None = None):
    """The labelled answers of ``files`` (``judging.labels.read.read_answers``: each file given once; ``passages``:
    rows with passages for the reference-free ``judges``, rows labelled null left out and said on stderr); a row
    without a gold answer is an error when one of ``judges`` compares the answer with it
    (``agreement.check_references``). ``nulls`` gets each file's rows labelled null among those read."""
    from evaluations.judging.labels.read import read_answers
    from evaluations.judging.validation.agreement import check_references

    judges = list(judges)
    examples = read_answers(files, limit=limit, passages=passages, judges=judges, nulls=nulls,
                            note=lambda text: click.echo(text, err=True))
    check_references(examples, judges)
    _one_question_per_group(examples)
    return examples


def _one_question_per_group(examples: list[LabelledAnswer]) -> None:
    """The rows of one id in a file (a question's answers: the resampling unit) ask one question: an id given to two
    different questions would merge them into one group, silently (as judge-check refuses it too)."""
    first: dict[tuple[str, str], LabelledAnswer] = {}
    for e in examples:
        seen = first.setdefault((e.source.rpartition(":")[0], e.group), e)
        if " ".join(seen.question.split()) != " ".join(e.question.split()):
            raise EvaluationsError(
                f"id {e.group!r} is given to two different questions: {seen.question!r:.70} at {seen.source} and "
                f"{e.question!r:.70} here (they would be counted as one question)", where=e.source,
                fix="give each question its own id; the answers to one question share its id and its question")


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
@_model_options(_SERVED_HELP, "Judge again instead of reusing cached LLM verdicts.")
def judge_agreement(files, judges, as_json, limit, keyword_threshold, resamples, seed, judge_model, concurrency,
                    config_path, no_cache):
    """Agreement of answer judges with human correctness labels (classic JSONL/CSV or EVOUNA files); the
    reference-free judges (faithfulness, answer_relevance, context_relevance) read rows of query, context
    (passages), generated_answer (not for context_relevance) and label, the property the judge measures
    (``judging.labels.passage_rows``)."""
    from evaluations.judging.validation.agreement import run_judges
    from evaluations.judging.validation.registry import JUDGES, batch_judge, per_passage, reads_passages

    names = parse_judges(judges)
    config = _judge_config(judge_model, config_path)
    _check_served_judge(names, config)
    # a reference-free judge (answer_relevance too) reads rows with passages, checked as judging.labels.passage_rows says
    nulls: dict[str, int] = {}
    examples = _load(files, limit, passages=reads_passages(names), judges=names, nulls=nulls)
    cache = not no_cache and config.cache.enabled
    failures: dict[str, list[tuple[str, str]]] = {}
    batch = {n: _counting(batch_judge(n, keyword_threshold, cache=cache, config=config), failures.setdefault(n, []))
             for n in per_passage(names)}
    _note_checker(names, config)
    llm = None
    if "llm" in names:
        from evaluations.judging.correctness.llm import batch_judge

        llm = batch_judge(config.judge.model, config, concurrency=concurrency, cache=cache,
                          errors=failures.setdefault("llm", []))
    with _progress() as progress:
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
        _exit_if_failed(failed, failures, len(examples), config)
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
    _out().print(table)
    labelled = [r for r in results if r.n]
    if labelled:
        click.echo(f"human says positive: {labelled[0].human_positive_rate:.1%}")
    for r in results:
        if r.n + failed[r.judge] < len(examples):
            why = JUDGES[r.judge].not_judged or "the judge failed on them"
            click.echo(f"{r.judge}: {len(examples) - r.n - failed[r.judge]} of {len(examples)} rows not judged "
                       f"({why})")
    _exit_if_failed(failed, failures, len(examples), config)


def _counting(run, failed: list[tuple[str, str]]):
    """``run`` (a reference-free batch judge) asked one row at a time: a row its checker fails on
    (``core.errors.JudgeFailed``: a served checker's error status, a reply that is not JSON, no yes/no in any mode;
    an input longer than the embedded model's window) gets a NaN verdict (left out of the agreement) and its
    (file:line, error) is appended to ``failed``, never dropped."""
    import numpy as np

    from evaluations.core.errors import JudgeFailed

    def each(examples, progress=None):
        verdicts = []
        for e in examples:
            try:
                verdicts.append(float(np.asarray(run([e]), dtype=float)[0]))
            except JudgeFailed as exc:
                verdicts.append(float("nan"))
                failed.append((e.source, str(exc)))
            if progress is not None:
                progress(1)
        return np.array(verdicts, dtype=float)

    return each


def _exit_if_failed(failed: dict[str, int], failures: dict[str, list[tuple[str, str]]], rows: int | dict[str, int],
                    config: Config, left: str = "left out of the agreement above") -> None:
    """Exit 3 (``EXIT_CASES_FAILED``, as a run with failed cases) when a judge failed on some rows: each judge's
    count and its first error on stderr; the agreement above is that of the rows it judged. ``rows``: the rows each
    judge was asked, one number for all or per judge (judge-check's judges have controls of their own)."""
    if not any(failed.values()):
        return
    from evaluations.models.chat import describe_model

    model = config.judge.model
    url = describe_model(model, config).get("base_url") if model is not None else None
    for judge, count in failed.items():
        if not count:
            continue
        first = failures.get(judge) or []
        detail = f"; first: {first[0][0]}: {first[0][1][:300]}" if first else ""
        asked = rows[judge] if isinstance(rows, dict) else rows
        click.echo(f"{judge}: {count} of {asked} rows FAILED: the judge model gave no verdict ({left}){detail}",
                   err=True)
    total = sum(failed.values())
    cause = (f"check the model server at {url} (its log); a row longer than the judge model's window: shorten it"
             if url else "a row longer than the judge model's window (the error above says so): shorten it")
    click.echo(f"exit {EXIT_CASES_FAILED}: {total} row verdict(s) failed; fix: {cause}; then run again (the verdicts "
               "it gave are cached unless --no-cache: only the failed rows are asked again)"
               + ("; or use --judge embedded" if url else ""), err=True)
    raise SystemExit(EXIT_CASES_FAILED)


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
@_model_options("The checker a reference-free judge is fitted through: embedded, ollama:NAME or openai:NAME (the "
                "model your runs' judge.model names).", "Ask the checker again instead of reusing cached verdicts.")
def calibrate_judge(files, judge, out, folds, limit, min_rate, force, control_questions, judge_model, config_path,
                    no_cache):
    """Fit a judge on labelled rows and report its question-grouped CV accuracy. The offline judge refuses to
    write parameters that fail the controls (``judge-check``); a reference-free judge (faithfulness,
    context_relevance) is refitted on the signals of the checker it will run with and refuses to write parameters
    that validate worse than the current ones on the same rows, unless --force."""
    config = _judge_config(judge_model, config_path)  # a bad config or --judge is an error on every path
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
    examples = _load(files, limit, judges=("offline",))  # the offline judge compares with the gold: rows need it
    embeddings = cache_file(not no_cache and config.cache.enabled, config.judge_cache_dir()) or False
    with _progress() as progress:
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
        _out().print(_control_table(report, "Controls of the fitted offline judge"))
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
    _out().print(table)
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

    name = _judge_name(judge)
    config = _judge_config(judge_model, config_path)
    examples = _load(files, limit, passages=True, judges=(name,))
    scorer, decompose = judge_tools(config, name)
    checker = f"{_checker(config)} (checker id {scorer.id})"
    from evaluations.judging.correctness.embedded import verdict_cache

    cache = verdict_cache(not no_cache and config.cache.enabled, config.judge_cache_dir())
    try:
        with _progress() as progress:
            task = progress.add_task(f"{name}: asking {checker.split(' ')[0]}", total=len(examples))
            result = refit(name, examples, scorer=scorer, decompose=decompose, cache=cache, checker=checker,
                           folds=folds, progress=lambda k: progress.update(task, advance=k))
    except RowsFailed as failed:
        m = failed.measured
        _exit_if_failed({name: len(m.failed)}, {name: m.failed}, m.rows, config,
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
    _out().print(table)
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


def _control_table(report, title: str, categories: dict | None = None) -> Table:
    """The rate of each judge per category; a category some of whose controls the judge's model gave no verdict on
    says how many FAILED beside the rate of the rest (the errors and the server are said on stderr)."""
    from evaluations.judging.validation.controls import CATEGORIES

    categories = CATEGORIES if categories is None else categories
    table = Table(title=title, caption=f"rate = rejected (negative) or accepted (positive); 95% Wilson CI; "
                  f"✗ below {report.min_rate:g}", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("category", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    for judge in report.judges:
        table.add_column(judge, justify="right", no_wrap=True)
    rows = {judge: {r.category: r for r in results} for judge, results in report.judges.items()}
    for category, (kind, _, _) in categories.items():
        cells = []
        for judge in report.judges:
            r = rows[judge][category]
            lost = f" · {r.failed} FAILED" if r.failed else ""
            cells.append("not checked" if r.passed is None else f"none judged ✗{lost}" if not r.n else
                         f"{r.rate:.2f} [{r.ci[0]:.2f}–{r.ci[1]:.2f}]{'' if r.passed else ' ✗'}{lost}")
        table.add_row(category, kind, *cells)
    return table


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
@_model_options(_SERVED_HELP, "Judge again instead of reusing cached LLM verdicts.")
def judge_check(files, judges, limit, min_rate, seed, as_json, judge_model, config_path, no_cache):
    """Controls: does each judge reject non-answers and accept gold answers? The reference-free judges get their
    own (faithfulness: a copied passage sentence vs one with a swapped fact; context_relevance: the question's own
    passage vs another question's, drawn from every question of the files). Exit 1 when a category fails or is not
    checked: the files gave no control of it (a judge that says yes to everything passes the positive ones).

    The files are read as questions and gold (``labels.read.read_questions``): a labelled file needs no
    generated answer or label (the controls are the answers), a file given twice is an error, an id given to two
    different questions is an error. Controls the judge's model gave no verdict on (an error status, a reply
    without yes/no) are counted as FAILED apart from the rates, said on stderr with the server and the first error,
    and exit 3 as judge-agreement does (``_exit_if_failed``): a check on the rest is no check of the judge."""
    from evaluations.judging.labels.read import read_questions
    from evaluations.judging.validation.controls import run_controls
    from evaluations.judging.validation.registry import batch_judge, per_passage

    names = parse_judges(judges)
    passage_judges = per_passage(names)
    names = [n for n in names if n not in passage_judges]
    config = _judge_config(judge_model, config_path)
    _check_served_judge(names, config)
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
        with _progress() as progress:
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
            _out().print(_control_table(report, f"Controls from {report.questions} questions ({len(controls)} "
                                                 f"answers; {skipped} unanswerable or gold-less questions skipped)"))
            _verdict(report, "every judge passes every category")
        answers = report.to_dict() if as_json else None
    if passage_judges:
        check_failed |= _passage_check(questions, passage_judges, limit, min_rate, seed, as_json, cache,
                                       answers=answers, config=config, failed=failed, failures=failures, asked=asked)
    _exit_if_failed(failed, failures, asked, config, left="left out of the control rates above")
    if check_failed:
        raise SystemExit(EXIT_CHECK_FAILED)


def _note_checker(judges: list[str], config: Config | None) -> None:
    """On stderr, a note per reference-free judge whose parameters were fitted through another checker than the
    one these verdicts come from (``judging.validation.refit.checker_note``): its agreement is then that of borrowed weights."""
    from evaluations.judging.validation.refit import checker_note
    from evaluations.judging.validation.registry import refittable

    checker = _checker(config)
    for name in dict.fromkeys(_judge_name(j) for j in judges if j in refittable()):
        if note := checker_note(name, checker):
            click.echo(f"note: {note}", err=True)


def _checker(config: Config | None) -> str:
    """The checker the reference-free judges ask under ``config`` (``refit.checker_name``)."""
    from evaluations.judging.validation.refit import checker_name

    return checker_name(config.judge.model if config is not None else None)


def _judge_config(judge_model: str | None, config_path: str | None) -> Config:
    """The config (``--config``, else the usual resolution; loaded and validated on every path: a bad file, key or
    value is one error) with ``judge.model`` = ``--judge``; without ``--judge``, the config's own ``judge.model`` (a
    run's judge: checked as a run checks it), else the embedded one. An embedded model's name must be a known one."""
    from evaluations.core.config import load_config, parse_model_ref

    if judge_model is None:
        config = load_config(config_path)
        if (model := config.judge.model) is not None:
            _known_embedded(model.provider, model.name, where="judge.model.name")
            return config
        judge_model = "embedded"
    ref = parse_model_ref(judge_model, flag="--judge")
    _known_embedded(ref["provider"], ref.get("name"), where="--judge")
    return load_config(config_path, {"judge.model": ref})


def _known_embedded(provider: str, name: str | None, *, where: str) -> None:
    """An embedded model named by ``name`` is one of the registry's (``models.gguf.resolve``: one error naming
    ``where`` and the known names)."""
    if provider == "embedded" and name:
        from evaluations.models import gguf

        gguf.resolve(name, where=where)


def _check_served_judge(judges: list[str], config: Config) -> None:
    """Before any work: when the ``llm`` judge asks a served model (ollama/openai), the server answers and serves
    it (``judging.correctness.llm.judge_check``, the check a run makes): one error naming the URL and the fix, exit 2, instead
    of every row's request failing. The reference-free judges check their checker where they are built."""
    model = config.judge.model
    if "llm" not in judges or model is None or model.provider == "embedded":
        return
    from evaluations.judging.correctness.llm import judge_check as served_judge_check

    served_judge_check(model, config)()


def _passage_check(questions: ControlQuestions, judges: list[str], limit, min_rate: float, seed: int, as_json: bool,
                   cache: bool, *, config: Config, answers: dict | None = None, failed: dict[str, int],
                   failures: dict[str, list[tuple[str, str]]], asked: dict[str, int]) -> bool:
    """judge-check of the reference-free judges: each on its own controls (``controls.PASSAGE_CONTROLS``), built
    from the ``questions`` of the files that carry a passage, asked through ``config``'s ``judge.model`` (embedded
    or served), verdicts cached in its ``judge_cache_dir()`` when ``cache``. A control the served checker fails on
    (``core.errors.JudgeFailed``) is counted in ``failed`` / ``failures`` (``_counting``, as judge-agreement
    counts a row), apart from those the judge does not apply to; ``asked``: each judge's controls. True when a
    category failed or was not checked."""
    from evaluations.judging.validation.controls import PASSAGE_CONTROLS, ControlReport, build_passage_controls, run_controls
    from evaluations.judging.validation.registry import batch_judge
    items, pool = questions.first(limit), questions.every()
    _note_checker(judges, config)
    reports = {}
    for name in judges:
        controls = build_passage_controls(items, name, seed=seed, pool=pool)
        if not controls:
            raise EvaluationsError(f"no answerable question with a gold answer and a passage to build {name} "
                                   "controls from", where=", ".join(file for file, _ in questions.files),
                                   fix="give dataset files whose questions carry their passage (SQuAD, CLAPNQ, …)")
        marked: set[int] = set()
        run = _counting(_marking(batch_judge(name, KEYWORD_THRESHOLD, cache=cache, config=config), marked),
                        failures.setdefault(name, []))
        with _progress() as progress:
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
            _out().print(_control_table(report, f"{name} controls from {report.questions} questions ({count})",
                                        PASSAGE_CONTROLS[name]))
        _verdict(combined, "every reference-free judge passes every category")
    return bool(combined.failures() or combined.unchecked())


def _marking(run, marked: set[int]):
    """``run`` (a reference-free batch judge) noting in ``marked`` (by identity) the rows its served checker fails
    on (``core.errors.JudgeFailed``, re-raised for ``_counting`` to count): those controls are counted as
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


commands: list[click.Command] = [judge_agreement, calibrate_judge, judge_check]
