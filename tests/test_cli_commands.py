"""The root CLI: every lazily registered command resolves to a click command of that name."""

from __future__ import annotations

import click

from evaluations.cli.root import HELP_LIMIT, LAZY_COMMANDS, LAZY_HELP, cli


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


def test_help_lists_every_command_without_importing_the_heavy_libraries():
    """``--help`` lists each lazy command from ``LAZY_HELP`` (the same line its own help gives) and imports neither
    torch, scipy, lancedb nor pydantic-evals (issue 46: every command paid ~2 s of imports before doing anything)."""
    import json
    import subprocess
    import sys

    ctx = click.Context(cli)
    assert set(LAZY_HELP) == set(LAZY_COMMANDS)
    for name in LAZY_COMMANDS:
        assert LAZY_HELP[name] == cli.get_command(ctx, name).get_short_help_str(limit=HELP_LIMIT), name
    code = ("import json, sys\nfrom evaluations.cli.root import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\nprint(json.dumps(sorted(m for m in ('torch', 'scipy', 'lancedb', "
            "'pydantic_evals', 'sentence_transformers', 'pandas') if m in sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = proc.stdout.strip().splitlines()
    assert json.loads(lines[-1]) == []
    listing = "\n".join(lines[:-1])
    for name in ("beir", "repliqa", "review", "judge-check", "compare"):
        assert f"  {name} " in listing
