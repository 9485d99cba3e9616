"""The one rich progress display of the commands (indexing, synth, the judge commands).

``progress_bar(console, enabled)`` is a ``rich.progress.Progress``: with ``enabled`` False it is rich's own disabled
display (``disable=True``: tasks are tracked, nothing is drawn or printed), so callers use one code path. On a
console that is not a terminal rich draws the bars once, when the display stops (no cursor movement in logs).
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

__all__ = ["progress_bar"]


def progress_bar(console: Console, enabled: bool = True, *, transient: bool = False, spinner: bool = True) -> Progress:
    """Description, bar, done/total and elapsed time (after a spinner unless ``spinner`` is False) on ``console``;
    ``transient``: cleared when it stops (else the last state stays on screen); off a terminal a transient display
    would only leave a blank line, so it draws nothing."""
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    if spinner:
        columns.insert(0, SpinnerColumn())
    return Progress(*columns, console=console, transient=transient,
                    disable=not enabled or (transient and not console.is_terminal))
