"""The root CLI: every lazily registered command resolves to a click command of that name."""

from __future__ import annotations

import click

from evaluations.cli.root import LAZY_COMMANDS, cli


def test_every_lazy_command_resolves():
    ctx = click.Context(cli)
    for name in LAZY_COMMANDS:
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
    assert {"beir", "repliqa", "wix", *LAZY_COMMANDS} <= set(cli.list_commands(ctx))
    assert cli.get_command(ctx, "no-such-command") is None


def test_matrix_logic_does_not_import_click_or_the_cli():
    """``experiments.matrix`` is the logic only; its command lives in ``cli.matrix``. (``click`` itself may be
    loaded by a library, httpx's command line; that no module of ours below ``cli`` imports it is checked in
    test_architecture.)"""
    import json
    import subprocess
    import sys

    code = ("import json, sys; import evaluations.experiments.matrix; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('evaluations.cli'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == []
    assert LAZY_COMMANDS["matrix"] == "evaluations.cli.matrix"
