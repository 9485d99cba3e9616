"""``evaluations review RUN_DIR``: a person labels a sample of a run's answers; their labels correct its figures.

Three ways, one design (``evaluations.review``):

- ``--out SHEET``: the chosen cases as a JSONL sheet (and a CSV twin) with ``label: null`` to fill in;
- ``--labels SHEET``: the filled-in sheet read back into the run folder (``human_labels.jsonl``);
- neither: a terminal session, one case at a time (y / n / s(kip) / q(uit)), each label kept as it is given, so a
  session stopped at any point goes on where it stopped.

After labels arrive, ``summary.json`` gets ``corrected.<measure>`` and report.html / report.md and the history row
are written again: no model is called.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from evaluations.core.console import make_console
from evaluations.core.errors import EvaluationsError

_MEASURES = ("accuracy", "faithfulness", "answer_relevance", "context_relevance")
_CONTEXT_CHARS = 1500


def _design(run: Any, measure: Any, seed: int | None) -> Any:
    """The measure's design in the run (made and kept on its first review)."""
    from evaluations.review.design import draw
    from evaluations.review.labels import read_designs, write_design

    design = read_designs(run.path).get(measure.name)
    if design is None:
        design = draw(measure, run, 0 if seed is None else seed)
        if not design.strata:
            raise EvaluationsError(f"no case of the run has a {measure.name} verdict to review", where=str(run.path),
                                   fix="review a measure the run judged (see summary.json)")
        write_design(run.path, design)
    elif seed is not None and seed != design.seed:
        raise EvaluationsError(f"this run's {measure.name} review was drawn with --seed {design.seed}",
                               where=str(run.path / "review_design.json"),
                               fix=f"use --seed {design.seed} (or leave it out) to go on with that sample")
    return design


def _to_label(run: Any, measure: Any, design: Any, n: int) -> list[str]:
    """The cases of the sample of n not labelled yet, in draw order (a sample already labelled: none)."""
    from evaluations.review.corrected import labels_of

    done = labels_of(run, measure.name)
    return [c for c in design.chosen(n) if c not in done]


def _row(run: Any, measure: Any, design: Any, record: Any) -> Any:
    from evaluations.review.design import STRATUM_NAMES
    from evaluations.review.labels import SheetRow

    case = record.name
    answer = (record.answer or {}).get("answer")
    return SheetRow(case_id=case, measure=measure.name, stratum=STRATUM_NAMES[design.strata[case]],
                    question=record.query, context=record.context_text or "\n\n".join(record.context),
                    answer=answer if isinstance(answer, str) else None,
                    judge_verdict=bool(measure.predict(record, run)), judge_p=round(measure.score(record, run), 4),
                    evidence=measure.evidence(record, run))


def _refresh(run_dir: Path, config_path: str | None, console: Any) -> Any:
    """summary.json with ``corrected``, the reports and the history row, from the folder (no model call)."""
    from evaluations.core.config import load_config
    from evaluations.core.fsutil import atomic_write_json
    from evaluations.results.rundata import load_run
    from evaluations.review.corrected import with_corrected

    run = with_corrected(load_run(run_dir))
    atomic_write_json(run.path / "summary.json", run.summary.to_dict())
    for label, step in (("report.html/report.md", lambda: _reports(run)),
                        ("history", lambda: _history(run, load_config(config_path)))):
        try:
            step()
        except EvaluationsError as exc:
            console.print(f"[yellow]warning: {label} not written: {escape(exc.render())}[/]")
    return run


def _reports(run: Any) -> None:
    from evaluations.reports.writer import write_run_reports

    write_run_reports(run)


def _history(run: Any, config: Any) -> None:
    from evaluations.experiments.history import record_run

    record_run(run, config)


def _show_corrected(console: Any, run: Any, as_json: bool) -> None:
    corrected = run.summary.corrected or {}
    if as_json:
        click.echo(json.dumps({"run": str(run.path), "corrected": corrected}, indent=2))
        return
    for name, entry in corrected.items():
        if "estimate" not in entry:
            console.print(f"{name}: {escape(entry.get('error', ''))}")
            continue
        judge, agree = entry["judge_only"], entry["agreement"]
        console.print(
            f"[bold]{name}[/]: corrected {entry['estimate']:.3f} [95% {entry['ci95'][0]:.3f}–{entry['ci95'][1]:.3f}]"
            f", judge alone {judge['estimate']:.3f}; a person read {entry['n_labels']} of {entry['n_cases']} "
            f"answers; judge agreed on {agree['accuracy']:.0%} (κ {_num(agree['kappa'])})", highlight=False)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _read_back(run: Any, sheet: Path, default: str, console: Any) -> tuple[int, int]:
    """The sheet's labels into ``human_labels.jsonl``: (new or changed, unchanged); each change said."""
    from evaluations.review.labels import HumanLabel, append_labels, current_labels, read_labels, read_sheet
    from evaluations.review.measures import measure as measure_named

    rows = read_sheet(sheet, default)
    known = {r.name for r in run.records}
    for case, name, _ in rows:
        measure_named(name)
        if case not in known:
            raise EvaluationsError(f"case_id {case!r} is not a case of this run", where=str(sheet),
                                   fix=f"label the sheet `evaluations review {run.path} --out` wrote for this run")
    latest = current_labels(read_labels(run.path))
    new, same = [], 0
    for case, name, label in rows:
        before = latest.get((case, name))
        if before is not None and before.label == label:
            same += 1
            continue
        if before is not None:
            console.print(f"[yellow]changed:[/] {escape(case)} {name}: {before.label} → {label} (was from "
                          f"{escape(before.source)} {before.at})", highlight=False)
        new.append(HumanLabel(case_id=case, measure=name, label=label, source=str(sheet)))
    if new:
        append_labels(run.path, new)
    return len(new), same


def _session(run: Any, measure: Any, design: Any, n: int, console: Any) -> int:
    """One case at a time; each label appended at once. Returns how many were given."""
    from evaluations.review.labels import HumanLabel, append_labels, write_design

    given, records = 0, {r.name: r for r in run.records}
    while True:
        todo = _to_label(run, measure, design, n)
        if not todo:
            return given
        row = _row(run, measure, design, records[todo[0]])
        _show_case(console, row, measure.question, n - len(todo) + 1, n)
        key = click.prompt("label", type=click.Choice(["y", "n", "s", "q"]), show_choices=True)
        if key == "q":
            return given
        if key == "s":
            design.skipped.append(row.case_id)
            write_design(run.path, design)
            continue
        append_labels(run.path, [HumanLabel(case_id=row.case_id, measure=measure.name, label=key == "y",
                                            source="session")])
        given += 1


def _show_case(console: Any, row: Any, question: str, i: int, n: int) -> None:
    from rich.panel import Panel

    context = row.context if len(row.context) <= _CONTEXT_CHARS else row.context[:_CONTEXT_CHARS] + " …"
    verdict = "yes" if row.judge_verdict else "no"
    lines = [f"[bold]question[/] {escape(row.question)}", f"[bold]answer[/] {escape(str(row.answer))}",
             f"[bold]context[/] {escape(context)}",
             f"[bold]judge[/] {verdict} (score {row.judge_p:.2f}; {escape(row.stratum)})"]
    for claim in row.evidence.get("claims", []):
        lines.append(f"  {'✓' if claim['supported'] else '✗'} {escape(claim['claim'])} (P {claim['p']:.2f})")
    for chunk in row.evidence.get("chunks", []):
        lines.append(f"  {'✓' if chunk['relevant'] else '✗'} #{chunk['rank']} {escape(chunk['id'])} "
                     f"(P {chunk['p']:.2f})")
    if row.evidence.get("gold_answers"):
        lines.append(f"[bold]gold[/] {escape(' | '.join(row.evidence['gold_answers']))}")
    console.print(Panel("\n".join(lines), title=f"{i} of {n}: {escape(row.case_id)}"))
    console.print(f"{escape(question)} y = yes, n = no, s = skip, q = stop (go on later)", highlight=False)


@click.command("review")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--measure", "measure_name", type=click.Choice(_MEASURES), default="accuracy", show_default=True,
              help="What the person judges: accuracy (under the primary judge), faithfulness, answer_relevance or "
                   "context_relevance.")
@click.option("--n", "n", type=click.IntRange(min=1), default=50, show_default=True,
              help="The sample's size: labels the measure should have (a later, larger --n extends the sample).")
@click.option("--seed", type=int, default=None, help="Seed of the sample (default 0; kept with the run).")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the chosen cases to this JSONL sheet (and a .csv twin) instead of asking here.")
@click.option("--labels", "labels", type=click.Path(dir_okay=False, path_type=Path),
              help="Read a filled-in sheet back into the run.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config (for the history path).")
@click.option("--json", "as_json", is_flag=True, help="Print the corrected figures as JSON.")
def review_command(run_dir: Path, measure_name: str, n: int, seed: int | None, out: Path | None,
                   labels: Path | None, config_path: str | None, as_json: bool) -> None:
    """Label a sample of RUN_DIR's answers (chosen where the judge is least sure), and correct the run's judged
    figures with those labels (prediction-powered inference: an unbiased figure with a valid 95% interval)."""
    from evaluations.results.rundata import load_run
    from evaluations.review.labels import write_sheet
    from evaluations.review.measures import measure as measure_named

    console = make_console(stderr=True)
    run = load_run(run_dir)
    measure = measure_named(measure_name)
    if labels is not None:
        if out is not None:
            raise EvaluationsError("--labels reads a sheet and --out writes one", where="--out",
                                   fix="give one of them")
        new, same = _read_back(run, labels, measure_name, console)
        console.print(f"read {new + same} labels from {labels}: {new} new or changed, {same} as before",
                      highlight=False)
        _show_corrected(make_console(stderr=False), _refresh(run_dir, config_path, console), as_json)
        return
    design = _design(run, measure, seed)
    if out is not None:
        records = {r.name: r for r in run.records}
        rows = [_row(run, measure, design, records[c]) for c in _to_label(run, measure, design, n)]
        if not rows:
            console.print(f"the sample of {n} is labelled: give a larger --n to extend it", highlight=False)
            return
        csv_path = write_sheet(out, rows)
        console.print(f"wrote {len(rows)} cases to {out} and {csv_path}: fill in each label (y/n), then "
                      f"`evaluations review {run_dir} --labels {out}`", highlight=False)
        return
    if not sys.stdin.isatty():
        raise EvaluationsError("no terminal to ask in", where="stdin",
                               fix=f"write a sheet with --out SHEET, label it, then --labels SHEET")
    given = _session(run, measure, design, n, make_console(stderr=False))
    console.print(f"{given} labels given", highlight=False)
    if given:
        _show_corrected(make_console(stderr=False), _refresh(run_dir, config_path, console), as_json)


commands = [review_command]
