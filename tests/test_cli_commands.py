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
