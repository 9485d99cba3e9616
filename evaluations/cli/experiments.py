"""CLI commands of the experiments: ``compare``, ``gate``, ``history`` (added to the root CLI)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evaluations.core.console import TABLE_WIDTH, make_console
from evaluations.core.errors import EvaluationsError
from evaluations.core.exits import EXIT_CHECK_FAILED

_err = make_console(stderr=True)


def _out(width: int = 160) -> Console:
    return make_console(stderr=False, width=width)  # unwrapped on pipes and files


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) >= 1000 or (value and abs(value) < 1e-3) else f"{value:.{digits}f}"
    return str(value)


P_COLUMNS = {"t": "p t", "wilcoxon": "p W", "permutation": "p perm", "mcnemar": "p McN"}


def comparison_table(rows: list[dict[str, Any]], title: str) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left")
    columns = ["metric", "n", "a", "b", "b − a", "95% CI", "d_z", *P_COLUMNS.values(), "p_holm", "", "W/T/L", "MDE"]
    for column in columns:
        table.add_column(column, justify="left" if column == "metric" else "right")
    for row in rows:
        ci = "–" if row["ci95"] is None else f"[{_fmt(row['ci95'][0])}, {_fmt(row['ci95'][1])}]"
        table.add_row(row["metric"], str(row["n"]), _fmt(row["mean_a"]), _fmt(row["mean_b"]), _fmt(row["diff"]), ci,
                      _fmt(row["effect_size"], 3), *(_fmt(row["p"].get(k), 3) if k in row["p"] else ""
                                                     for k in P_COLUMNS),
                      _fmt(row["p_holm"], 3), "[bold green]*[/]" if row["significant"] else "",
                      f"{row['wins']}/{row['ties']}/{row['losses']}", _fmt(row["mde"]))
    return table


def _print_reports(console: Console, result: dict[str, Any]) -> None:
    """pydantic-evals' own baseline rendering, when both runs left a report.json."""
    from evaluations.reports.console import readable
    from evaluations.results.outputs import load_report

    base_dir = Path(result["run_dirs"][result["baseline"]])
    if not (base_dir / "report.json").is_file():
        return
    baseline = readable(load_report(base_dir / "report.json"))
    for label, folder in result["run_dirs"].items():
        if label != result["baseline"] and (Path(folder) / "report.json").is_file():
            readable(load_report(Path(folder) / "report.json")).print(
                baseline=baseline, console=console, include_averages=True, include_input=False, include_output=False)


REPORT_VIEW_MAX_CASES = 30


def show_compare(console: Console, result: dict[str, Any], *, reports: bool | None = None) -> None:
    """pydantic-evals' per-case baseline diff (where it fits: ``reports`` None = up to 30 shared cases),
    then one statistics table per compared run and per segment, then the regressions."""
    if reports is None:
        reports = result["cases"]["shared"] <= REPORT_VIEW_MAX_CASES
    if reports:
        try:
            _print_reports(console, result)
        except Exception as exc:  # the statistics below do not depend on it
            console.print(f"[yellow]pydantic-evals report view skipped: {exc}[/]")
    cases = result["cases"]
    only = ", ".join(f"{k} {v}" for k, v in cases["only_in"].items() if v)
    console.print(f"baseline [bold]{result['baseline']}[/]; {cases['shared']} shared cases"
                  + (f" (only in: {only})" if only else ""))
    others = [r for r in result["runs"] if r != result["baseline"]]
    for other in others:
        rows = [r for r in result["comparisons"] if r["b"] == other]
        console.print(comparison_table(rows, f"{other} vs {result['baseline']} (diff = b − a; * = significant "
                                             f"after Holm, α {result['alpha']})"))
    for tag, segment in result["segments"].items():
        console.print(comparison_table(segment["comparisons"], f"segment {tag} ({segment['cases']} cases)"))
    if result["regressions"]:
        by_metric: dict[str, list[str]] = {}
        for reg in result["regressions"]:
            by_metric.setdefault(f"{reg['metric']} ({reg['b']})", []).append(
                reg["case"] + (f" (now {reg['now']})" if reg.get("now") else ""))
        console.print("[bold]regressions[/] (pass in baseline, fail now):")
        for key, cases_ in by_metric.items():
            console.print(f"  {key}: {len(cases_)}: " + ", ".join(cases_[:15]) + (" …" if len(cases_) > 15 else ""))
    for row in result.get("corrected", []):
        lo, hi = row["ci95"]
        console.print(f"[bold]corrected {row['measure']}[/] (a person's labels: {row['labels_a']} in {row['a']}, "
                      f"{row['labels_b']} in {row['b']}): {row['b']} {row['value_b']:.3f} − {row['a']} "
                      f"{row['value_a']:.3f} = {row['difference']:+.3f} [95% {lo:+.3f}, {hi:+.3f}] over "
                      f"{row['shared_cases']} shared cases", highlight=False)
    from evaluations.results.measures import judge_change_text

    for change in result.get("judges_differ", []):
        console.print(f"[yellow]warning:[/] {escape(judge_change_text(change))}", highlight=False)


@click.command("compare")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--baseline", help="The run the others are compared with: its name, folder or 1-based index.")
@click.option("--metrics", help="Comma-separated metrics (default: retrieval, judges, latency, tokens, cost).")
@click.option("--no-segments", is_flag=True, help="Skip the per-tag comparisons.")
@click.option("--cases/--no-cases", "cases", default=None,
              help="pydantic-evals' per-case diff (report.print(baseline=…)); default: when ≤ 30 shared cases.")
@click.option("--json", "as_json", is_flag=True, help="Print compare.json to stdout.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Write compare.json here.")
def compare_command(run_dirs: tuple[Path, ...], baseline: str | None, metrics: str | None, no_segments: bool,
                    cases: bool | None, as_json: bool, out: Path | None) -> None:
    """Paired statistics of runs over the same cases (each run vs the baseline)."""
    from evaluations.experiments.compare import compare_runs, write_compare

    chosen = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    result = compare_runs(list(run_dirs), baseline=baseline, metrics=chosen, segments=not no_segments)
    if out:
        _err.print(f"[green]wrote[/] {write_compare(result, out)}")
        from evaluations.reports.writer import write_reports

        written = write_reports(out)
        _err.print(f"[green]wrote[/] {written.html} and {written.markdown}")
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        show_compare(_out(), result, reports=cases)


def _resolve_baseline(run, baseline: str | None, config_path: str | None, history: Path | None):
    from evaluations.experiments.history import history_path, last_comparable
    from evaluations.results.rundata import load_run

    if baseline is None:
        return None
    if baseline == "last":
        if history is None:
            from evaluations.core.config import load_config

            history = history_path(load_config(config_path))
        return load_run(last_comparable(run, history))
    return load_run(baseline)


@click.command("gate")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--rules", "rules_path", required=True, type=click.Path(dir_okay=False), help="Rules YAML.")
@click.option("--baseline", help="RUN_DIR, or 'last': the latest comparable run in the history.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config (for the history path).")
@click.option("--history", type=click.Path(dir_okay=False, path_type=Path), help="History store (overrides config).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def gate_command(run_dir: Path, rules_path: str, baseline: str | None, config_path: str | None,
                 history: Path | None, as_json: bool) -> None:
    """Check a run against quality rules: exit 0 all hold, 1 some broken, 2 bad input."""
    from evaluations.experiments.gate import load_rules, render, run_gate
    from evaluations.results.rundata import load_run

    rules = load_rules(rules_path)
    if config_path:  # a bad config is bad input whether or not the baseline needs its history path
        from evaluations.core.config import load_config

        load_config(config_path)
    run = load_run(run_dir)
    result = run_gate(run, rules, _resolve_baseline(run, baseline, config_path, history))
    click.echo(json.dumps(result, indent=2) if as_json else render(result))
    if not result["passed"]:
        sys.exit(EXIT_CHECK_FAILED)


@click.command("history")
@click.option("--dataset", help="Only runs of this dataset name.")
@click.option("--metric", "metric", help="Show this metric's trend (default: the headline metrics the runs have).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config (for the history path).")
@click.option("--history", type=click.Path(dir_okay=False, path_type=Path), help="History store (overrides config).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def history_command(dataset: str | None, metric: str | None, config_path: str | None, history: Path | None,
                    as_json: bool) -> None:
    """Recorded runs over time: the trend of a metric, or the headline metrics."""
    from evaluations.experiments.history import history_path, list_runs, trend
    from evaluations.results.measures import canonical, headline

    if history is None:
        from evaluations.core.config import load_config

        history = history_path(load_config(config_path))
    rows = list_runs(history, dataset=dataset)
    if metric:
        metric = canonical(metric)
        if rows and not any(metric in r["metrics"] for r in rows):
            known = sorted({m for r in rows for m in r["metrics"]})
            raise EvaluationsError(f"no recorded run has metric {metric!r}", where="--metric",
                                   fix="use one of: " + ", ".join(known))
        data: list[dict[str, Any]] = trend(rows, metric)
    else:
        data = rows
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    table = Table(title=f"history {history}" + (f" · {dataset}" if dataset else ""), box=box.SIMPLE_HEAVY,
                  title_justify="left")
    if metric:
        judged = any(row["judge"] for row in data)  # a model judged the metric: who, on each row
        for column in ("id", "time", "commit", metric, "change", *(["judge"] if judged else []), "run"):
            table.add_column(column)
        for row, run in zip(data, _run_names(data)):
            change = "judge changed" if row["judge_changed"] else _fmt(row["change"])
            table.add_row(str(row["id"]), _minute(row["recorded_at"]), _commit(row), _fmt(row["value"]), change,
                          *([row["judge"] or "—"] if judged else []), run)
    else:
        columns = headline(row["metrics"] for row in data)
        for column in ("id", "time", "dataset", "commit", *columns, "run"):
            table.add_column(column)
        for row, run in zip(data, _run_names(data)):
            table.add_row(str(row["id"]), _minute(row["recorded_at"]), str(row["dataset"]), _commit(row),
                          *(_fmt(row["metrics"].get(m)) for m in columns), run)
    _print_whole(table)


def _print_whole(table: Table) -> None:
    """Print ``table`` on stdout never cutting a column name or value ("context_releva…"): one column per recorded
    metric can need more than the fixed width, so the console is as wide as the table's widest row (on a pipe or
    a file this depends only on the data, never on $COLUMNS)."""
    from rich.measure import Measurement

    console = _out()
    if not console.is_terminal:
        needed = Measurement.get(console, console.options.update(max_width=100_000), table).maximum
        console = _out(max(TABLE_WIDTH, needed))
    console.print(table)


def _run_names(rows: list[dict[str, Any]]) -> list[str]:
    """What tells the rows' runs apart: a run's summary name, or its folder's name when another row has the same
    summary name (runs of one questions file are all ``questions-run`` unless given --name)."""
    names = [str(row["name"] or "") for row in rows]
    return [name if name and names.count(name) == 1 else Path(row["run_dir"]).name for name, row in zip(names, rows)]


def _minute(recorded_at: str) -> str:
    """``2026-01-02T03:04:05+00:00`` -> ``2026-01-02 03:04`` (UTC, as recorded; --json has the full time)."""
    return recorded_at[:16].replace("T", " ")


def _commit(row: dict[str, Any]) -> str:
    if not row["git_commit"]:
        return "–"
    return row["git_commit"][:8] + ("+dirty" if row["git_dirty"] else "")


commands = [compare_command, gate_command, history_command]
