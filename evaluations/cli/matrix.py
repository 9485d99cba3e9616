"""``evaluations matrix GRID.yaml``: the command; the grid, the cells and matrix.json are
``experiments.matrix``'s."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from evaluations.core.console import make_console
from evaluations.core.exits import EXIT_CASES_FAILED


def matrix_table(result: dict[str, Any]) -> Table:
    """One row per cell: its axis values, quality, nDCG@10, latency p95, tokens and cost per query, Pareto fronts."""
    cells_ = result["cells"]
    axes = list(cells_[0]["params"]) if cells_ else []
    table = Table(title=f"Matrix ({len(cells_)} cells; quality = {result['quality']})", title_justify="left")
    for axis in axes:
        table.add_column(axis)
    for column in ("quality", "ndcg@10", "p95 ms", "tokens/q", "cost/q", "pareto"):
        table.add_column(column, justify="right")
    for cell in cells_:
        marks = ",".join(k for k, v in cell["pareto"].items() if v) or "-"
        quality, ndcg = cell["quality"], cell["metrics"].get("ndcg@10")
        tokens, cost = cell["tokens"]["per_query"], cell["cost_per_query"]
        table.add_row(*(cell["params"][a] for a in axes),
                      "–" if quality is None else f"{quality:.3f}", "–" if ndcg is None else f"{ndcg:.3f}",
                      "–" if cell["latency_ms"]["p95"] is None else f"{cell['latency_ms']['p95']:.0f}",
                      "–" if tokens is None else f"{tokens:.0f}",
                      "–" if cost is None else f"{cost:.5f}", marks)
    return table


@click.command("matrix")
@click.argument("grid_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Matrix folder (default: the grid's).")
@click.option("--json", "as_json", is_flag=True, help="Print matrix.json to stdout.")
@click.option("--no-progress", is_flag=True, help="No progress bars.")
@click.option("--executor", help="local, ray or ray:ADDRESS: with Ray the cells run as Ray tasks (default: the "
                                 "grid's executor, else its config's).")
def matrix_command(grid_file: Path, out: Path | None, as_json: bool, no_progress: bool, executor: str | None) -> None:
    """Run every embedder × search mode × QA model × judge cell of GRID_FILE and compare them."""
    from evaluations.experiments.matrix import cell_slug, default_folder, load_grid, run_matrix

    console = make_console(stderr=True)
    grid = load_grid(grid_file)
    folder = out or default_folder(grid, grid_file)
    if executor:
        from evaluations.pipeline.executors import parse_executor

        parse_executor(executor, where="--executor")
    result = run_matrix(grid, grid_file, folder, progress=not no_progress, console=console, executor=executor)
    console.print(matrix_table(result))
    console.print(f"[green]wrote[/] {folder / 'matrix.json'}, report.html, report.md")
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))
    over = [c for c in result["cells"] if not c["within_max_failures"]]
    if over:
        for cell in over:
            console.print(f"[red]cell {cell_slug(cell['params'])}: {cell['counts'].get('incomplete')} of "
                          f"{cell['counts'].get('cases')} case(s) did not complete[/] (max_failures "
                          f"{grid.max_failures!r}); a re-run runs it again")
        console.print(f"exit {EXIT_CASES_FAILED}: {len(over)} of {len(result['cells'])} cell(s) over max_failures")
        sys.exit(EXIT_CASES_FAILED)


commands = [matrix_command]
