"""The one progress display (``core.progress.progress_bar``) as rich draws it on a console that is not a terminal
(a log, a pipe): the final state once when it stops, nothing when disabled, nothing left when transient."""

from __future__ import annotations

import io

from rich.console import Console

from evaluations.core.progress import progress_bar


def _draw(**kwargs) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=100)
    with progress_bar(console, **kwargs) as progress:
        task = progress.add_task("Embedding 3 new chunks", total=3)
        for _ in range(3):
            progress.advance(task)
        assert progress.tasks[0].completed == 3  # tracked even when nothing is drawn
    return out.getvalue()


def test_final_state_is_printed_once_on_a_non_terminal():
    text = _draw()
    assert text.count("Embedding 3 new chunks") == 1 and "3/3" in text and "\x1b[" not in text


def test_disabled_prints_nothing():
    assert _draw(enabled=False) == ""


def test_transient_leaves_nothing_not_even_a_blank_line():
    assert _draw(transient=True) == ""  # rich's own transient display left "\n" in logs
