"""What the judge commands (``judge-agreement``, ``calibrate-judge``: ``cli.judges``; ``judge-check``:
``cli.judge_check``) share: the judge-model options and config, loading labelled answers, counting the rows a
judge model failed on (exit 3), the control table, and consoles."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import click
from rich import box
from rich.progress import Progress
from rich.table import Table

from evaluations.core.console import make_console
from evaluations.core.errors import EvaluationsError
from evaluations.core.exits import EXIT_CASES_FAILED
from evaluations.core.progress import progress_bar

if TYPE_CHECKING:
    from evaluations.core.config import Config
    from evaluations.judging.labels.rows import LabelledAnswer

__all__ = ["SERVED_HELP", "model_options", "judge_name", "stdout_console", "progress_display", "load_answers",
           "counting", "exit_if_failed", "control_table", "note_checker", "checker_name_of", "judge_config",
           "check_served_judge"]


def model_options(judge_help: str, cache_help: str):
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


def judge_name(judge: str) -> str:
    """The reference-free judge behind a name (``groundedness`` is faithfulness's other name)."""
    from evaluations.core.config import REFERENCE_FREE_ALIASES

    return REFERENCE_FREE_ALIASES.get(judge, judge)


SERVED_HELP = ("The model behind the `llm` judge: embedded[:NAME], ollama:NAME or openai:NAME; a served model is "
                "also asked by the reference-free judges (faithfulness, context_relevance).")


def stdout_console():
    return make_console(stderr=False)  # a terminal's width, or unwrapped at a fixed width for pipes and files


def progress_display() -> Progress:
    return progress_bar(make_console(stderr=True), transient=True, spinner=False)


def load_answers(files: tuple[str, ...], limit: int | None, passages: bool = False, judges: Iterable[str] = (),
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


def counting(run, failed: list[tuple[str, str]]):
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


def exit_if_failed(failed: dict[str, int], failures: dict[str, list[tuple[str, str]]], rows: int | dict[str, int],
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


def control_table(report, title: str, categories: dict | None = None) -> Table:
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


def note_checker(judges: list[str], config: Config | None) -> None:
    """On stderr, a note per reference-free judge whose parameters were fitted through another checker than the
    one these verdicts come from (``judging.validation.refit.checker_note``): its agreement is then that of borrowed weights."""
    from evaluations.judging.validation.refit import checker_note
    from evaluations.judging.validation.registry import refittable

    checker = checker_name_of(config)
    for name in dict.fromkeys(judge_name(j) for j in judges if j in refittable()):
        if note := checker_note(name, checker):
            click.echo(f"note: {note}", err=True)


def checker_name_of(config: Config | None) -> str:
    """The checker the reference-free judges ask under ``config`` (``refit.checker_name``)."""
    from evaluations.judging.validation.refit import checker_name

    return checker_name(config.judge.model if config is not None else None)


def judge_config(judge_model: str | None, config_path: str | None) -> Config:
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


def check_served_judge(judges: list[str], config: Config) -> None:
    """Before any work: when the ``llm`` judge asks a served model (ollama/openai), the server answers and serves
    it (``judging.correctness.llm.judge_check``, the check a run makes): one error naming the URL and the fix, exit 2, instead
    of every row's request failing. The reference-free judges check their checker where they are built."""
    model = config.judge.model
    if "llm" not in judges or model is None or model.provider == "embedded":
        return
    from evaluations.judging.correctness.llm import judge_check as served_judge_check

    served_judge_check(model, config)()
