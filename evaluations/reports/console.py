"""Tidy console output: the pydantic-evals table (or its averages), metrics by k, latency."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from pydantic_evals.reporting import EvaluationReport, ReportCaseAggregate
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evaluations.reports.corrected import CorrectedView, corrected_views
from evaluations.results.headline import (answer_headline, disagreement_line, reference_free_calls_line,
                                          reference_free_line)
from evaluations.results.records import is_cost_label
from evaluations.results.retrieval_metrics import is_retrieval_metric, parse_metric_name
from evaluations.results.rundata import AnswersSummary, JudgingSummary, LatencySummary, RunSummary

MAX_CASE_ROWS = 20
_METRIC_ORDER = ("ndcg", "mrr", "map", "recall", "p", "hit")


def metrics_table(metrics: dict[str, float]) -> Table | None:
    grid: dict[str, dict[int, float]] = {}
    for key, value in metrics.items():
        if parsed := parse_metric_name(key):
            grid.setdefault(parsed[1], {})[parsed[2]] = value
    if not grid:
        return None
    ks = sorted({k for row in grid.values() for k in row})
    table = Table(title="Retrieval metrics", title_justify="left")
    table.add_column("metric")
    for k in ks:
        table.add_column(f"@{k}", justify="right")
    for name in sorted(grid, key=lambda n: _METRIC_ORDER.index(n) if n in _METRIC_ORDER else 99):
        table.add_row(name, *(f"{grid[name][k]:.4f}" if k in grid[name] else "" for k in ks))
    return table


def latency_table(latency: LatencySummary, failed: int = 0, judging: JudgingSummary | None = None) -> Table:
    """Milliseconds per completed case by stage; a stage no case recorded, or that took 0 ms in every case (did
    not run), is left out, as in the report; ``failed`` cases are not timed, and the caption says so. Then a row
    per judge that measured itself (``judging``: ``judge <name>``, its milliseconds and model calls per case
    judged), and the caption sets judging's seconds beside answering's."""
    notes = [f"over completed cases; {failed} failed case{'s' * (failed > 1)} not timed"] if failed else []
    notes += [judging_sentence(judging)] if judging else []
    table = Table(title="Latency per case (ms)", title_justify="left", caption="\n".join(notes) or None,
                  caption_justify="left")
    for column in ("stage", "mean", "p50", "p95", "p99", "model calls"):
        table.add_column(column, justify="right" if column != "stage" else "left")
    for stage, dist in latency.by_stage.items():
        if dist.n and dist.max:
            table.add_row(stage, *(f"{getattr(dist, c):.1f}" for c in ("mean", "p50", "p95", "p99")), "")
    for judge, cost in (judging.judges if judging else {}).items():
        ms = (f"{1000 * getattr(cost.seconds, c):.1f}" for c in ("mean", "p50", "p95", "p99"))
        table.add_row(f"judge {judge}", *ms, f"{cost.calls.mean:.1f}")
    return table


def judging_sentence(judging: JudgingSummary) -> str:
    """Judging's seconds in all beside answering's (the ``llm`` stage), as the latency table's caption says it."""
    answering = (f" vs answering {judging.answering_seconds:.1f} s" if judging.answering_seconds is not None
                 else " (no answer stage timed)")
    return f"judging {judging.seconds:.1f} s in all, {judging.calls} model calls{answering}"


def answers_table(answers: AnswersSummary) -> Table:
    """One row per judge: accuracy over all cases to answer (verdicts), and the mean over the judged cases."""
    table = Table(title="Answers", title_justify="left",
                  caption="accuracy: failed, empty and unjudged answers count as incorrect; mean: over judged answers",
                  caption_justify="left")
    table.add_column("judge / metric")
    for column in ("accuracy", "correct / cases", "mean (judged)", "n judged"):
        table.add_column(column, justify="right")
    primary = answers.primary_judge
    for name, value in answers.judges.items():
        table.add_row(f"[bold]{name}[/] (primary)" if name == primary else name,
                      "" if value.accuracy is None else f"{value.accuracy:.4f}",
                      f"{value.correct} / {value.n_cases}" if value.n_cases is not None else "",
                      f"{value.mean:.4f}", str(value.n))
    for name, count in answers.judge_errors.items():
        table.add_row(f"[red]{name} errors[/]", "", "", "", str(count))
    return table


def corrected_table(view: CorrectedView) -> Table:
    """One measure's figures corrected by a person's labels: short labels, so that at any width the figures and
    "50 of 300 answers" keep a line each and only the agreement and the method (the caption) wrap."""
    table = Table(title=f"{view.measure}, corrected by a person's labels", title_justify="left",
                  caption=f"method: {view.method}" if view.method else None, caption_justify="left")
    table.add_column("")
    table.add_column("figure (95% CI)")
    for label, text in (("judge alone", view.judge), ("corrected", view.corrected), ("a person read", view.read),
                        ("agreement", view.agreement)):
        table.add_row(label, escape(text))
    return table


def show_corrected(console: Console, summary: RunSummary) -> None:
    """The judged figures corrected by a person's labels (``summary.corrected``), nothing for a run nobody
    labelled; a measure that could not be corrected says why on a line of its own."""
    for view in corrected_views(summary.corrected):
        if view.error:
            console.print(view.sentence, markup=False, highlight=False)
        else:
            console.print(corrected_table(view))


def answer_lines(answers: AnswersSummary | None) -> list[str]:
    """The answer headline and the judges' disagreement, as printed under the answers table."""
    return [line for line in (answer_headline(answers), disagreement_line(answers)) if line]


def _model_config(value: Any) -> bool:
    return isinstance(value, dict) and "provider" in value and "name" in value


def metadata_text(value: Any) -> str:
    """A metadata value as a person reads it: a model config as ``provider:name`` (and its server), a mapping as
    ``key value; ...`` (a nested one in parentheses) without its empty entries, a list comma-separated
    (``report.json`` keeps the structure)."""
    if _model_config(value):
        server = f" at {value['base_url']}" if value.get("base_url") else ""
        return f"{value['provider']}:{value['name']}{server}"
    if isinstance(value, dict):
        return "; ".join(f"{k} ({metadata_text(v)})" if isinstance(v, dict) and not _model_config(v)
                         else f"{k} {metadata_text(v)}" for k, v in value.items() if v not in (None, "", [], {}))
    if isinstance(value, (list, tuple)):
        return ", ".join(metadata_text(v) for v in value)
    return str(value)


NO_LABEL = "(none)"  # a case's value of a label some other case has and it does not


def _repeats(cases: list[Any], names: list[str]) -> set[str]:
    """Label names that only repeat another (``answer_kind_2``: two evaluators gave the same ``answer_kind``, and
    pydantic-evals numbered the second) with the same value in every case."""
    repeats = set()
    for name in names:
        base = re.sub(r"_\d+$", "", name)
        if base != name and base in names and all(
                getattr(c.labels.get(name), "value", None) == getattr(c.labels.get(base), "value", None)
                for c in cases):
            repeats.add(name)
    return repeats


def _every_label(case: Any, names: list[str], first: dict[str, Any]) -> Any:
    """``case`` with exactly the labels ``names``, ``NO_LABEL`` for one it lacks: pydantic-evals' averages give
    a label's share among the cases that have it ("answer_kind: refusal 1.0" for the one refusal of ten)."""
    labels = {n: case.labels.get(n) or dataclasses.replace(first[n], value=NO_LABEL, reason=None) for n in names}
    return dataclasses.replace(case, labels=labels)


def readable(report: EvaluationReport) -> EvaluationReport:
    """The report as printed: its experiment metadata as text (``metadata_text``: pydantic-evals prints each value
    with ``str``, a nested mapping as a Python repr cut at the panel's edge), and every label on every case
    (``_every_label``), a repeated one once (``_repeats``), so that the averages are shares of all cases; the judges'
    cost labels (``records.is_cost_label``) are left to the latency table."""
    cases = list(report.cases)
    first = {n: r for c in reversed(cases) for n, r in c.labels.items()}
    every = list(dict.fromkeys(n for c in cases for n in c.labels))
    names = [n for n in every if n not in _repeats(cases, list(first)) and not is_cost_label(n)]
    changes: dict[str, Any] = {"cases": [_every_label(c, names, first) for c in cases]} if every else {}
    if report.experiment_metadata:
        changes["experiment_metadata"] = {k: metadata_text(v) for k, v in report.experiment_metadata.items()}
    return dataclasses.replace(report, **changes) if changes else report


def averages_table(report: Any) -> Table:
    aggregate = ReportCaseAggregate.average(list(report.cases))
    table = Table(title=f"pydantic-evals averages over {len(report.cases)} cases", title_justify="left")
    table.add_column("name")
    table.add_column("average", justify="right")
    # retrieval scores are shown in the metrics grid below; here the rest (judges, stage latencies, tokens)
    rows = {k: v for k, v in {**aggregate.scores, **aggregate.metrics}.items() if not is_retrieval_metric(k)}
    for name, value in rows.items():
        table.add_row(name, f"{value:.4f}")
    if aggregate.assertions is not None:
        table.add_row("assertions passed", f"{aggregate.assertions:.4f}")
    return table


def show(console: Console, report: Any, summary: RunSummary) -> None:
    if len(report.cases) + len(report.failures) <= MAX_CASE_ROWS:
        readable(report).print(console=console, include_durations=False, include_averages=True)
    else:
        console.print(averages_table(report))
    table = metrics_table(summary.metrics)
    if table is not None:
        console.print(table)
    if summary.answers and (summary.answers.judges or summary.answers.judge_errors):
        console.print(answers_table(summary.answers))
        for line in answer_lines(summary.answers):
            console.print(line, markup=False, highlight=False)
    elif summary.answers and summary.answers.answered:  # answers no judge read (--skip-qa): said, not an empty table
        console.print(f"answers: {summary.answers.answered} of {summary.counts.cases} cases answered, not judged "
                      "(--skip-qa skips the answer judges)", markup=False, highlight=False)
    if (line := reference_free_line(summary)) is not None:
        console.print(line, markup=False, highlight=False)
    if (line := reference_free_calls_line(summary)) is not None:
        console.print(line, markup=False, highlight=False)
    show_corrected(console, summary)
    console.print(latency_table(summary.latency_ms, summary.counts.failed, summary.judging))
    lat = summary.latency_ms
    if lat.p50 is not None:
        console.print(f"latency p50 {lat.p50:.1f} ms · p95 {lat.p95:.1f} ms · p99 {lat.p99:.1f} ms")
    console.print("counts: " + " · ".join(f"{k} {v}" for k, v in summary.counts.model_dump(exclude_unset=True).items()))
    calls = summary.model_calls
    if calls.get("chat", {}).get("calls") or calls.get("embed", {}).get("calls"):
        from evaluations.models.cache import call_stats_line

        console.print(f"{call_stats_line(calls)}, retries {calls.get('retries', {}).get('retries', 0)}")
    failure_line(console, summary)
    for line in first_errors(report):
        console.print(line, markup=False, highlight=False)


def first_errors(report: Any) -> list[str]:
    """The first error of a case that failed and of a judge that failed, whole on a line of their own (in the per-case
    table they are cut and wrapped: a server's URL split over two lines)."""
    lines = []
    if report.failures:
        failure = report.failures[0]
        lines.append(f"first failed case {failure.name}: {' '.join(str(failure.error_message).split())}")
    judged = next(((c, f) for c in report.cases for f in c.evaluator_failures), None)
    if judged is not None:
        case, failure = judged
        lines.append(f"first judge failure ({failure.name} on case {case.name}): "
                     f"{' '.join(str(failure.error_message).split())}")
    return lines


def failure_line(console: Console, summary: RunSummary) -> None:
    """One clear closing line when any case did not complete, by stage."""
    for warning in summary.warnings:
        ids = (f". Retrieved ids, e.g. {', '.join(map(repr, warning['retrieved_examples']))}; relevant ids, e.g. "
               f"{', '.join(map(repr, warning['relevant_examples']))}") if "retrieved_examples" in warning else ""
        console.print(f"[bold yellow]warning: {escape(warning['message'] + ids)}[/]")
    counts = summary.counts
    if not counts.incomplete:
        return
    parts = [f"{n} {label}" for n, label in ((counts.failed, "retrieval failed"), (counts.qa_failed, "answer failed"),
                                             (counts.judge_failed, "judge failed")) if n]
    console.print(f"[bold red]{counts.incomplete} of {counts.cases} case(s) did not complete "
                  f"({', '.join(parts)}); retrieval scores of answer/judge failures are kept, "
                  f"cases whose retrieval failed count as 0; errors and raw model text are in cases.jsonl[/]")
