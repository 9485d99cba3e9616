"""The ``evaluations`` command line.

Every user-facing failure is an EvaluationsError: printed as one message (what, where, fix),
exit code 2, no traceback.
"""

from __future__ import annotations

import sys

import click
from rich.console import Console

from .errors import EvaluationsError

err_console = Console(stderr=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evaluations")
def cli() -> None:
    """Evaluate RAG retrieval and answers on pydantic-evals."""


def _register_commands() -> None:
    # Each package contributes its commands; imported here, not at module import of subpackages.
    from .judges.cli import commands as judge_commands

    for command in judge_commands:
        cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    try:
        _register_commands()
    except ImportError:  # pragma: no cover - during development a package may be missing
        pass
    try:
        cli.main(args=argv, prog_name="evaluations", standalone_mode=False)
    except EvaluationsError as exc:
        err_console.print(f"[bold red]error:[/] {exc.render()}", highlight=False)
        sys.exit(2)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
