"""The one place Consoles are made: text for people is never wrapped when it goes to a pipe or a file.

On a terminal, rich wraps to the terminal's width as usual. Anywhere else (a pipe, a file, CI logs,
a test's captured output) rich would wrap at 80 columns or ``$COLUMNS``, cutting paths and messages
mid-word; there ``make_console`` turns wrapping off (``soft_wrap``: one printed message = one line)
and renders tables at a fixed ``TABLE_WIDTH``, whatever ``$COLUMNS`` says — the output is the same
on every machine.
"""

from __future__ import annotations

import sys

from rich.console import Console

__all__ = ["TABLE_WIDTH", "make_console"]

TABLE_WIDTH = 120  # columns for tables written to a non-terminal


def make_console(*, stderr: bool = True, width: int = TABLE_WIDTH) -> Console:
    """A Console on stderr (or stdout): the terminal's own width on a terminal, else unwrapped text and
    tables ``width`` columns wide. Never emoji codes: "corpus.jsonl:100: not valid JSON" would print ":100:" as
    an emoji."""
    stream = sys.stderr if stderr else sys.stdout
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return Console(stderr=stderr, emoji=False)
    return Console(stderr=stderr, width=width, soft_wrap=True, emoji=False)
