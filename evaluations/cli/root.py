"""The ``evaluations`` command line.

Every user-facing failure is an EvaluationsError: printed as one message (what, where, fix),
exit code 2, no traceback. An interruption, Ctrl-C (SIGINT) or SIGTERM (``kill``, ``timeout``, a CI job
cancelled) alike, stops the command the same way: a run keeps its finished cases and says how to finish it,
then "aborted", exit code 130.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import click
from rich.markup import escape

from evaluations.cli.options import common_options, parse_ks
from evaluations.core.console import make_console
from evaluations.core.errors import EvaluationsError
from evaluations.core.exits import EXIT_ABORTED, EXIT_BAD_INPUT, EXIT_CASES_FAILED, parse_max_failures


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evaluations")
def cli() -> None:
    """Evaluate RAG retrieval and answers on pydantic-evals."""


def run_dataset(dataset: str, source: str | None, params: dict) -> None:
    """One run of ``dataset`` with the ``common_options`` in ``params``; exit 3 when more cases did not complete
    than ``--max-failures`` allows."""
    from evaluations.datasets import get_spec
    from evaluations.core.config import load_config, parse_model_ref
    from evaluations.reports.console import show
    from evaluations.experiments.after import after_run, check_after_run
    from evaluations.pipeline.runner import RunOptions, run

    overrides: dict = {}
    if params.get("no_cache"):
        overrides["cache.enabled"] = False
    if params.get("reference_free") is not None:
        from evaluations.core.config import REFERENCE_FREE_JUDGES

        overrides["judge.reference_free"] = list(REFERENCE_FREE_JUDGES) if params["reference_free"] else []
    if params.get("executor"):
        from evaluations.pipeline.executors import parse_executor

        parse_executor(params["executor"], where="--executor")  # a bad value fails here, naming the flag
        overrides["executor"] = params["executor"].strip()
    if params["search_mode"]:
        overrides["search.mode"] = params["search_mode"]
    for param, flag, section in (("embedder", "--embedder", "embeddings.model"), ("qa_model", "--qa-model", "qa.model"),
                                 ("judge_model", "--judge", "judge.model")):
        if params[param]:
            ref = parse_model_ref(params[param], flag=flag)
            overrides[f"{section}.provider"] = ref["provider"]
            if "name" in ref:
                overrides[f"{section}.name"] = ref["name"]
                if section == "embeddings.model":
                    overrides[f"{section}.vector_dim"] = None  # another model: its own dimension
    if params["concurrency"]:  # also the most questions a served judge has in flight (served_checker.parallel)
        overrides["evaluation.concurrency"] = params["concurrency"]
    config = load_config(params["config_path"], overrides)
    check_after_run()  # the OTel export's extra, when an endpoint is configured
    spec = get_spec(dataset)
    ks = parse_ks(params["ks"]) if params["ks"] else sorted(set(config.evaluation.k))
    options = RunOptions(
        source=Path(source) if source else None, limit=params["limit"], split=params["split"], name=params["name"],
        ks=ks, db=params["db"], skip_db=params["skip_db"], skip_retrieval=params["skip_retrieval"],
        skip_qa=params["skip_qa"] or not spec.answers, judge_answers=not params["skip_qa"], out=params["out"],
        resume=params["resume"],
        overwrite=params["overwrite"], repeat=params["repeat"], system=params["system"],
        tags=[t.strip() for t in (params["tags"] or "").split(",") if t.strip()],
        concurrency=config.evaluation.concurrency, progress=not params["no_progress"],
    )
    if options.resume is not None and options.out is not None:
        raise EvaluationsError("--resume and --out both given", where="--out", fix="--resume DIR alone names the folder")
    parse_max_failures(params["max_failures"], 0)  # bad syntax fails before any work
    qa = None
    if not options.skip_qa:
        from evaluations.pipeline.plan import build_qa_plan

        qa = build_qa_plan(config)
    console = make_console(stderr=True)
    started = time.time()
    result = run(spec, options, config, console=console, qa=qa, after=after_run)
    show(console, result.report, result.summary)
    unknown = result.summary.unknown_ids or {}
    if unknown.get("count"):
        console.print("[bold yellow]warning: " + escape(
            f"{unknown['message']} ({unknown['cases']} of {result.summary.counts.cases} cases; e.g. "
            f"{', '.join(map(repr, unknown['examples'][:3]))}): they score as irrelevant and have no text for the "
            "answer and context judges; return the corpus's document ids") + "[/]")
    console.print(f"[green]wrote[/] {escape(str(result.out_dir))}/ ({written_files(result.out_dir, started)})")
    if params["as_json"]:
        click.echo(result.summary.dump_json())
    counts = result.summary.counts
    allowed = parse_max_failures(params["max_failures"], counts.cases)
    if counts.incomplete > allowed:
        console.print(f"exit {EXIT_CASES_FAILED}: {counts.incomplete} case(s) did not complete "
                      f"(--max-failures allows {allowed}); once their cause is fixed, the same command with "
                      f"--resume {result.out_dir} runs them again", highlight=False)
        sys.exit(EXIT_CASES_FAILED)
    if unknown.get("retrieved") and unknown["count"] == unknown["retrieved"]:
        console.print(f"exit {EXIT_CASES_FAILED}: none of the {unknown['retrieved']} retrieved ids is in the "
                      "corpus: the system's ids and the corpus's differ, so the run measured nothing of retrieval")
        sys.exit(EXIT_CASES_FAILED)


#: the files a run writes, in the order the last line lists them (others found there follow, sorted)
RUN_FILES = ("report.json", "summary.json", "cases.jsonl", "report.html", "report.md")


def written_files(folder: Path, since: float) -> str:
    """The files of ``folder`` written since ``since`` (a time.time()), as the last line of a run lists them:
    what is really there (report.html/report.md only when the reports were written; PNG charts counted; not the
    bookkeeping run.json)."""
    from evaluations.results.folder import RUN_FILE

    fresh = [p.name for p in sorted(folder.iterdir())
             if p.is_file() and p.name != RUN_FILE and p.stat().st_mtime >= since - 2.0]
    pngs = [n for n in fresh if n.endswith(".png")]
    names = [n for n in RUN_FILES if n in fresh] + [n for n in fresh if n not in RUN_FILES and n not in pngs]
    if pngs:
        names.append(f"{len(pngs)} PNG chart{'s' if len(pngs) > 1 else ''}")
    return ", ".join(names)


@cli.command("repliqa")
@click.option("--source", type=click.Path(), help="Local RepliQA export (parquet/JSONL); default: the HF Hub.")
@common_options
def repliqa_command(source: str | None, **params) -> None:
    """RepliQA repliqa_3 'News Stories': retrieval, and answers unless --skip-qa."""
    run_dataset("repliqa", source, params)


@cli.command("wix")
@click.option("--source", type=click.Path(), help="Local WixQA export (folder or question file); default: HF Hub.")
@common_options
def wix_command(source: str | None, **params) -> None:
    """WixQA expert-written questions over the Wix KB."""
    run_dataset("wix", source, params)


@cli.command("beir")
@click.argument("path", type=click.Path())
@common_options
def beir_command(path: str, **params) -> None:
    """Any BEIR-format folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv). Retrieval; a --system's own
    answers are judged without gold (faithfulness, answer relevance)."""
    run_dataset("beir", path, params)


#: command name -> the module whose ``commands`` list holds it; imported only when that command runs (or for
#: --help), so ``evaluations beir …`` does not pay for statsmodels, matplotlib or the golden-set code
LAZY_COMMANDS: dict[str, str] = {
    "judge-agreement": "evaluations.cli.judges", "calibrate-judge": "evaluations.cli.judges",
    "judge-check": "evaluations.cli.judges",
    "compare": "evaluations.cli.experiments", "gate": "evaluations.cli.experiments",
    "history": "evaluations.cli.experiments", "matrix": "evaluations.cli.matrix",
    "score": "evaluations.cli.score", "run": "evaluations.cli.golden", "golden": "evaluations.cli.golden",
    "report": "evaluations.cli.report", "synth": "evaluations.cli.synth", "review": "evaluations.cli.review",
}


#: each lazy command's one-line help, as ``--help`` lists it (without importing the command's module: the listing
#: would otherwise pay for scipy, pydantic-evals and more); tests/test_cli_commands.py checks each against the
#: command's own ``get_short_help_str``
LAZY_HELP: dict[str, str] = {
    "judge-agreement": "Agreement of answer judges with human correctness labels (classic JSONL/CSV...",
    "calibrate-judge": "Fit a judge on labelled rows and report its question-grouped CV accuracy.",
    "judge-check": "Controls: does each judge reject non-answers and accept gold answers? The...",
    "compare": "Paired statistics of runs over the same cases (each run vs the baseline).",
    "gate": "Check a run against quality rules: exit 0 all hold, 1 some broken, 2 bad input.",
    "history": "Recorded runs over time: the trend of a metric, or the headline metrics.",
    "matrix": "Run every embedder × search mode × QA model × judge cell of GRID_FILE and...",
    "score": "Score what already happened: classic labelled answers, a TREC run (+ --qrels)...",
    "run": "Your own dataset file (JSON/JSONL/YAML/CSV/TSV; schema...",
    "golden": "Golden code-span queries.",
    "report": "Write FOLDER/report.html (self-contained) and FOLDER/report.md (+...",
    "synth": "Write a labelled dataset from CORPUS (a corpus file or a folder of .txt/.md...",
    "review": "Label a sample of RUN_DIR's answers (chosen where the judge is least sure),...",
}
HELP_LIMIT = 80  # the width of a one-line help the listing asks for (what LAZY_HELP holds)


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands' listing of ``--help``: a lazy command's line from ``LAZY_HELP``, its module not imported."""
        rows = []
        for name in self.list_commands(ctx):
            command = super().get_command(ctx, name)
            if command is not None:
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit=HELP_LIMIT)))
            elif name in LAZY_HELP:
                rows.append((name, LAZY_HELP[name]))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is None and name in LAZY_COMMANDS:
            import importlib

            module = importlib.import_module(LAZY_COMMANDS[name])
            command = next((c for c in module.commands if c.name == name), None)
        return command


cli.__class__ = _LazyGroup


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM's handler: the interruption Ctrl-C is (KeyboardInterrupt in the main thread)."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> None:
    """Run the command in ``argv`` (default: the process's arguments); SIGTERM interrupts it as Ctrl-C does (the
    handler there before is put back when it returns). What earlier commands in this process learnt about served
    models' output modes (``models.ladder.known_failures``) is forgotten: a command's requests do not depend on the
    commands before it. pydantic-ai's first-run banner (an advertisement for its tracing service, printed to a
    terminal when the first agent runs) is turned off: the console is this tool's (its public switch, read when an
    agent first runs; a value the user set is kept)."""
    os.environ.setdefault("PYDANTIC_AI_NO_BANNER", "1")
    ladder = sys.modules.get("evaluations.models.ladder")  # only loaded by commands that asked a model
    if ladder is not None:
        ladder.forget_failures()
    before = None
    if threading.current_thread() is threading.main_thread():  # only the main thread may set a handler
        before = signal.signal(signal.SIGTERM, _interrupt)
    try:
        _main(argv)
    finally:
        if before is not None:
            signal.signal(signal.SIGTERM, before)


def _main(argv: list[str] | None) -> None:
    from evaluations.core.env import env_flag

    try:
        env_flag("HF_HUB_OFFLINE")  # every command may load MiniLM, whose libraries take any word here
        cli.main(args=argv, prog_name="evaluations", standalone_mode=False)
    except EvaluationsError as exc:
        # the message quotes the user's input (keys, values, paths): printed as written, never read as markup
        make_console(stderr=True).print(f"[bold red]error:[/] {escape(exc.render())}", highlight=False)
        sys.exit(EXIT_BAD_INPUT)
    except click.exceptions.Abort:
        make_console(stderr=True).print("aborted")
        sys.exit(EXIT_ABORTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
