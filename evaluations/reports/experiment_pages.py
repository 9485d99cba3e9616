"""Report pages of a comparison (``compare.json``), a matrix (``matrix.json``) and a history (``history.json``).

Shapes are those written by ``evaluations compare --out``, ``evaluations matrix`` and ``evaluations history
--json`` (a list of recorded runs, or ``{"runs": [...]}``), checked against ``CompareFile``, ``MatrixFile`` and
``HistoryRow`` before a page is built: a file of another shape is one EvaluationsError naming it and the wrong keys.
Run folders named there are read when they still exist, for the headline numbers and the regressed cases.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evaluations.core.errors import EvaluationsError, field_errors
from evaluations.reports import charts
from evaluations.reports.page import Cell, Page, Section, Table, fmt
from evaluations.reports.run_page import case_card, headline_values, metric_label, primary_judge
from evaluations.results.measures import PASS_FAIL, headline, judge_change_text
from evaluations.results.retrieval_metrics import parse_metric_name
from evaluations.results.rundata import RunData, load_run

FOREST_MAX = 24
#: headline keys compared for significance through another measure (compare.json names)
_SIGNIFICANCE_OF = {"latency_p95_ms": "latency_ms"}


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvaluationsError(f"cannot read {path.name} ({exc})", where=str(path),
                               fix="re-run the command that wrote it") from None


# -- the files' shapes: what the pages read, typed; other keys are kept as they are ------------------

class _File(BaseModel):
    """A part of compare.json, matrix.json or history.json: the keys a page reads typed (strict: a number is not a
    string, nor a list an object), keys it does not read allowed."""

    model_config = ConfigDict(extra="allow", strict=True)


class ComparisonRow(_File):
    """One metric of one run against the baseline (``compare_pair``)."""

    b: str
    metric: str
    kind: str = ""
    higher_is_better: bool = True
    n: int | None = None
    mean_a: float | None = None
    mean_b: float | None = None
    diff: float | None = None
    ci95: list[float] | None = Field(default=None, min_length=2, max_length=2)
    effect_size: float | None = None
    p: dict[str, float | None] | None = None
    primary_test: str | None = None
    p_holm: float | None = None
    significant: bool | None = None
    wins: int | None = None
    ties: int | None = None
    losses: int | None = None
    mde: float | None = None

    @model_validator(mode="after")
    def _means_with_ci(self) -> ComparisonRow:
        if self.ci95 and None in (self.mean_a, self.mean_b, self.diff):
            raise ValueError("a row with ci95 needs the numbers mean_a, mean_b and diff")
        return self


class JudgeChange(_File):
    """A model-judged measure whose judge differs between the baseline (a) and another run (b)."""

    metric: str
    a: str
    b: str
    judge_a: str
    judge_b: str


class Regression(_File):
    case: str | int
    metric: str
    b: str = ""
    value_a: float | None = None
    value_b: float | None = None
    rule: str | None = None


class CaseCounts(_File):
    shared: int | None = None
    only_in: dict[str, int | None] | None = None


class CompareFile(_File):
    """compare.json as ``evaluations compare --out`` writes it (``compare.compare_runs``)."""

    runs: list[str] = Field(min_length=1)
    baseline: str
    run_dirs: dict[str, str | None] | None = None
    alpha: float = 0.05
    dataset: dict[str, Any] | None = None
    cases: CaseCounts | None = None
    comparisons: list[ComparisonRow] = Field(default_factory=list)
    regressions: list[Regression] | None = None
    segments: dict[str, Any] | None = None
    judges_differ: list[JudgeChange] = Field(default_factory=list)

    @model_validator(mode="after")
    def _baseline_is_a_run(self) -> CompareFile:
        if self.baseline not in self.runs:
            raise ValueError(f"baseline {self.baseline!r} is not one of runs {self.runs}")
        return self


class MatrixCell(_File):
    """One cell of matrix.json (``matrix.summarize_matrix``); the values the page checks itself are left open."""

    params: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    quality: Any = None
    latency_ms: Any = None
    tokens: Any = None
    cost_per_query: float | None = None
    pareto: dict[str, bool | None] | None = None
    run_dir: str | None = None


class MatrixFile(_File):
    """matrix.json as ``evaluations matrix`` writes it."""

    cells: list[MatrixCell] = Field(default_factory=list)
    quality: str | None = None
    comparisons: list[ComparisonRow] | None = None


class HistoryRow(_File):
    """A row of ``evaluations history --json``: a recorded run (``metrics``) or a trend row (``metric``, ``value``)."""

    id: int | None = None
    recorded_at: str | None = None
    run_dir: str | None = None
    name: str | None = None
    dataset: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None
    metrics: dict[str, float | None] | None = None
    metric: str | None = None
    value: float | None = None

    @model_validator(mode="after")
    def _has_values(self) -> HistoryRow:
        if self.metrics is None and self.metric is None:
            raise ValueError("a row needs 'metrics' (a recorded run) or 'metric' and 'value' (a trend row)")
        return self


class HistoryFile(_File):
    runs: list[HistoryRow] = Field(default_factory=list)


def _json_kind(data: Any) -> str:
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(data), "a number")


def _problems(exc: ValidationError) -> str:
    """The first problems of ``exc`` in the file's keys (``comparisons.0.b: ...``), without model class names."""
    found = [(f"'{key}': " if key else "") + re.sub(r"^Value error, | or instance of \w+", "", msg)
             for key, msg, _ in field_errors(exc.errors())]
    return "; ".join(found[:5]) + (f" (and {len(found) - 5} more)" if len(found) > 5 else "")


def _checked(path: Path, model: type[_File], what: str, fix: str) -> dict[str, Any]:
    """``path``'s JSON object, checked against ``model``; EvaluationsError naming the file and the wrong keys."""
    data = _load(path)
    if not isinstance(data, dict):
        raise EvaluationsError(f"holds {_json_kind(data)}, not {what} (a JSON object)", where=str(path), fix=fix)
    try:
        model.model_validate(data)
    except ValidationError as exc:
        raise EvaluationsError(f"not {what}: {_problems(exc)}", where=str(path), fix=fix) from None
    return data


def _history_rows(path: Path) -> list[dict[str, Any]]:
    """history.json's rows (a list, or ``{"runs": [...]}``), each checked against ``HistoryRow``."""
    fix = "write it again with `evaluations history --json > history.json` (or `--metric M --json` for a trend)"
    data = _load(path)
    if isinstance(data, dict):
        data = _checked(path, HistoryFile, "a history", fix).get("runs", [])
    if not isinstance(data, list):
        raise EvaluationsError(f"holds {_json_kind(data)}, not a list of recorded runs", where=str(path), fix=fix)
    for number, row in enumerate(data, 1):
        if not isinstance(row, dict):
            raise EvaluationsError(f"row {number} is {_json_kind(row)}, not a recorded run (a JSON object)",
                                   where=str(path), fix=fix)
        try:
            HistoryRow.model_validate(row)
        except ValidationError as exc:
            raise EvaluationsError(f"row {number} is not a recorded run: {_problems(exc)}",
                                   where=str(path), fix=fix) from None
    return data


def _run_folder(base: Path, folder: str | None) -> RunData | None:
    """The run folder named in compare.json / matrix.json: absolute as written since compare stores it so; an older
    file's relative path is tried from the file's folder, then from the working directory (where it was given)."""
    if not folder:
        return None
    path = Path(folder)
    for candidate in ([path] if path.is_absolute() else [base / path, path]):
        try:
            return load_run(candidate)
        except EvaluationsError:
            continue
    return None


# -- comparison ----------------------------------------------------------------------------------

def _change_css(row: dict | None) -> str:
    if not row or not row.get("significant"):
        return ""
    better = (row.get("diff") or 0) > 0 if row.get("higher_is_better", True) else (row.get("diff") or 0) < 0
    return "better" if better else "worse"


def _comparison_headline(compare: dict, runs: dict[str, RunData | None]) -> Table:
    base_label = compare["baseline"]
    others = [r for r in compare["runs"] if r != base_label]
    by_metric = {(c["b"], c["metric"]): c for c in compare.get("comparisons", [])}
    base = runs.get(base_label)
    columns = ["metric", f"{base_label} (baseline)"]
    for other in others:
        columns += [other, "change"]
    rows, keys = [], []
    base_rows = headline_values(base.summary) if base else []
    other_rows = {o: {k: v for k, _, v, _ in headline_values(runs[o].summary)} if runs.get(o) else {} for o in others}
    for key, label, value, digits in base_rows:
        if value is None and all(other_rows[o].get(key) is None for o in others):
            continue  # measured in none of the runs
        row = [Cell(label), Cell.number(value, digits)]
        for other in others:
            mine = other_rows[other].get(key)
            comparison = by_metric.get((other, _SIGNIFICANCE_OF.get(key, key)))
            change = None if mine is None or value is None else mine - value
            css = _change_css(comparison)
            text = "—" if change is None else f"{change:+.{digits}f}" + (" *" if css else "")
            row += [Cell.number(mine, digits), Cell(text, change, css,
                                                    title=f"p (Holm) = {fmt(comparison.get('p_holm'), 4)}"
                                                    if comparison else "not compared")]
        rows.append(row)
        keys.append(key)
    return Table("headline", columns, rows, row_keys=keys, sortable=False,
                 caption="Values from each run's summary.json; change = run − baseline, coloured (and starred) only "
                         "where the comparison found it significant (Holm-corrected p < "
                         f"{compare.get('alpha', 0.05)}); "
                         "green = better, red = worse.")


def _forest_rows(rows: list[dict]) -> list[dict]:
    chosen = [r for r in rows if (parse_metric_name(r["metric"]) or (None, None, 10))[2] == 10 or r.get("significant")]
    return chosen[:FOREST_MAX]


def _forest_charts(compare: dict) -> list:
    out = []
    base = compare["baseline"]
    for other in [r for r in compare["runs"] if r != base]:
        rows = [c for c in compare.get("comparisons", []) if c["b"] == other and c.get("ci95")]
        rows = _forest_rows(rows)
        unit = [r for r in rows if 0 <= min(r["mean_a"], r["mean_b"]) and max(r["mean_a"], r["mean_b"]) <= 1
                and not r["metric"].startswith(("latency", "tokens", "cost"))]
        rest = [r for r in rows if r not in unit and r["mean_a"]]
        panels = [(unit, "difference (run − baseline), 95% bootstrap CI", 1.0, "rates"),
                  (rest, "relative difference (run − baseline) / baseline, 95% CI", None, "other")]
        for picked, xlabel, _, suffix in panels:
            if not picked:
                continue
            scale = (lambda r: 1.0) if suffix == "rates" else (lambda r: 1.0 / abs(r["mean_a"]))
            data = [{"label": metric_label(r["metric"]), "diff": r["diff"] * scale(r),
                     "ci": [r["ci95"][0] * scale(r), r["ci95"][1] * scale(r)], "significant": r.get("significant"),
                     "better": _change_css(r) == "better"} for r in picked]
            title = f"{other} vs {base}"
            fig = charts.forest(data, xlabel=xlabel, title=title)
            chart_id = f"forest-{len(out) + 1}"
            alt = f"Forest plot, {title}: " + "; ".join(
                f"{d['label']} {d['diff']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]"
                + (" significant" if d["significant"] else "") for d in data)
            out.append(charts.render(fig, chart_id, f"Differences with 95% CIs: {title}", alt))
    return out


def _statistics_table(compare: dict) -> Table:
    rows, keys = [], []
    for c in compare.get("comparisons", []):
        p = c.get("p") or {}
        primary = c.get("primary_test") or next(iter(p), None)
        rows.append([Cell(c["b"]), Cell(metric_label(c["metric"])), Cell(c.get("kind", "")),
                     Cell.number(c.get("mean_a")), Cell.number(c.get("mean_b")),
                     Cell.number(c.get("diff"), css=_change_css(c)),
                     Cell("—" if not c.get("ci95") else f"[{c['ci95'][0]:+.4f}, {c['ci95'][1]:+.4f}]"),
                     Cell.number(c.get("effect_size"), 3),
                     Cell(f"{fmt(p.get(primary) if primary else None)} ({primary or '—'})",
                          p.get(primary) if primary else None),
                     Cell.number(c.get("p_holm")),
                     Cell("yes" if c.get("significant") else "no", css="pass" if c.get("significant") else "muted"),
                     Cell(f"{c.get('wins', '—')}/{c.get('ties', '—')}/{c.get('losses', '—')}"),
                     Cell.number(c.get("mde"))])
        keys.append(f"{c['b']}:{c['metric']}")
    return Table("statistics", ["run", "metric", "kind", "baseline mean", "run mean", "diff", "95% CI", "effect (d_z)",
                                "p (test)", "p (Holm)", "significant", "win/tie/loss", "MDE"], rows, row_keys=keys,
                 caption="diff = run − baseline over the shared cases; MDE = the smallest difference these cases "
                         "can detect (α 0.05, power 0.8).")


def build_comparison_page(folder: Path) -> Page:
    compare = _checked(folder / "compare.json", CompareFile, "a comparison",
                       "write it again with `evaluations compare RUN_DIR RUN_DIR ... --out FOLDER`")
    runs = {label: _run_folder(folder, path) for label, path in (compare.get("run_dirs") or {}).items()}
    base = compare["baseline"]
    sections = []
    head = Section("headline", "Headline")
    if runs.get(base):
        head.tables.append(_comparison_headline(compare, runs))
    else:
        head.notes.append("The baseline run folder is not available, so the headline values cannot be shown; "
                          "the statistics below come from compare.json.")
    head.lead += [judge_change_text(change) + "." for change in compare.get("judges_differ") or []]
    sections.append(head)
    forest = Section("differences", "Differences with confidence intervals", charts=_forest_charts(compare))
    forest.notes.append(f"Forest plots show the metrics at cut-off 10, every non-retrieval metric and every "
                        f"significant one (at most {FOREST_MAX}); green/red = significantly better/worse, "
                        "grey = not significant.")
    sections.append(forest)
    sections.append(Section("statistics", "All statistics", tables=[_statistics_table(compare)]))
    regressions = compare.get("regressions") or []
    reg = Section("regressions", "Regressed cases")
    if regressions:
        reg.tables.append(Table("regressions", ["case", "metric", "run", "baseline value", "run value"],
                                [[Cell(r["case"]), Cell(metric_label(r["metric"])), Cell(r.get("b", "")),
                                  Cell.number(r.get("value_a")),
                                  Cell(f"none: {r['now']}") if r.get("now") else Cell.number(r.get("value_b"))]
                                 for r in regressions],
                                caption="Cases that pass a metric in the baseline and fail it in the run, by "
                                        "the metric's pass/fail rule (a reference-free score that no longer "
                                        "applies, \"none: refusal\", counts too): "
                                        + "; ".join(f"{metric_label(m)}: {rule}" for m, rule in dict.fromkeys(
                                            (r["metric"], r.get("rule", PASS_FAIL.rule))
                                            for r in regressions)) + "."))
        cards = []
        for name in dict.fromkeys(r["case"] for r in regressions):
            other = runs.get(next(r.get("b") for r in regressions if r["case"] == name))
            record = next((c for c in other.records if c.name == str(name)), None) if other else None
            if record is not None and len(cards) < 15:
                card = case_card(record, primary_judge(other.summary))
                card.why = "regressed: " + ", ".join(metric_label(r["metric"]) for r in regressions
                                                     if r["case"] == name)
                cards.append(card)
        reg.cases = cards
    else:
        reg.notes.append("No case regressed.")
    sections.append(reg)
    segments = compare.get("segments") or {}
    if segments:
        sections.append(_segments_section(segments))
    cases = compare.get("cases") or {}
    facts = [("runs", ", ".join(compare["runs"])), ("baseline", base),
             ("dataset", str((compare.get("dataset") or {}).get("name", "—"))),
             ("shared cases", fmt(cases.get("shared"))),
             ("only in one run", ", ".join(f"{k} {v}" for k, v in (cases.get("only_in") or {}).items()) or "—")]
    data = {"kind": "comparison", "baseline": base, "runs": compare["runs"],
            "significant": [f"{c['b']}:{c['metric']}" for c in compare.get("comparisons", []) if c.get("significant")]}
    return Page("comparison", f"Comparison: {' vs '.join(compare['runs'])}", facts, sections, data)


def _segments_section(segments: dict) -> Section:
    """compare.json ``segments``: {tag: {...}} rendered as one row per (tag, metric) with what it holds."""
    section = Section("segments", "Segments")
    rows = []
    for tag, value in segments.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                rows.append([Cell(tag)] + [Cell(metric_label(str(item.get("metric", "")))),
                                           Cell.number(item.get("mean_a")), Cell.number(item.get("mean_b")),
                                           Cell.number(item.get("diff"), css=_change_css(item)),
                                           Cell.number(item.get("n"))])
    if rows:
        section.tables.append(Table("segments", ["segment", "metric", "baseline", "run", "diff", "cases"], rows))
    else:
        section.notes.append(json.dumps(segments)[:2000])
    return section


# -- matrix --------------------------------------------------------------------------------------

def _cell_value(cell: dict, key: str) -> float | None:
    value = (cell.get("metrics") or {}).get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _latency_p95(cell: dict) -> float | None:
    latency = cell.get("latency_ms") or {}
    value = latency.get("p95") if isinstance(latency, dict) else None
    return value if isinstance(value, (int, float)) else _cell_value(cell, "latency_p95_ms")


def _quality_metric(cells: list[dict]) -> str:
    """The quality axis when matrix.json names none: the primary judge when every cell has it, else nDCG@10."""
    for key in ("llm_judge", "offline_correct", "ndcg@10"):
        if all(_cell_value(c, key) is not None for c in cells):
            return key
    return next(iter(cells[0].get("metrics") or {"ndcg@10": None}))


def build_matrix_page(folder: Path) -> Page:
    matrix = _checked(folder / "matrix.json", MatrixFile, "a matrix", "write it again with `evaluations matrix`")
    cells = matrix.get("cells") or []
    if not cells:
        raise EvaluationsError("matrix.json has no cells", where=str(folder / "matrix.json"),
                               fix="run the matrix first")
    quality = matrix["quality"] if isinstance(matrix.get("quality"), str) else _quality_metric(cells)
    params = list(dict.fromkeys(k for c in cells for k in (c.get("params") or {})))
    labels = [" · ".join(str((c.get("params") or {}).get(p, "—")) for p in params) for c in cells]
    ys = [c["quality"] if isinstance(c.get("quality"), (int, float)) else _cell_value(c, quality) for c in cells]
    panels, fronts = [], {}
    for axis, xlabel, getter in (("cost", "cost per query (USD)", lambda c: c.get("cost_per_query")),
                                 ("latency", "latency p95 (ms per case)", _latency_p95)):
        xs = [getter(c) for c in cells]
        if any(x is None for x in xs) or any(y is None for y in ys):
            continue
        flags = [(c.get("pareto") or {}).get(axis) for c in cells]  # the matrix's own verdict when it gives one
        front = ([i for i, f in enumerate(flags) if f] if all(f is not None for f in flags)
                 else charts.pareto_front(xs, ys))
        fronts[axis] = sorted(front, key=lambda i: xs[i])
        panels.append({"x": xs, "y": ys, "labels": labels, "front": fronts[axis], "xlabel": xlabel,
                       "ylabel": metric_label(quality), "title": f"{axis.capitalize()} vs quality"})
    extra = list(dict.fromkeys([quality, "ndcg@10", "recall@10"]))
    rows, keys = [], []
    for i, cell in enumerate(cells):
        marks = ", ".join(axis for axis, front in fronts.items() if i in front) or "—"
        tokens = cell.get("tokens") if isinstance(cell.get("tokens"), dict) else {}
        rows.append([Cell.number(i + 1)] + [Cell(str((cell.get("params") or {}).get(p, "—"))) for p in params]
                    + [Cell.number(ys[i])] + [Cell.number(_cell_value(cell, m)) for m in extra[1:]]
                    + [Cell.number(_latency_p95(cell), 1),
                       Cell.number(tokens.get("per_query"), 1), Cell.number(cell.get("cost_per_query"), 6),
                       Cell(marks, css="frontier" if marks != "—" else "muted")])
        keys.append(labels[i])
    table = Table("matrix", ["#", *params, f"{metric_label(quality)} (quality)", *map(metric_label, extra[1:]),
                             "latency p95 (ms)", "tokens/query", "cost/query (USD)", "Pareto frontier"], rows,
                  row_keys=keys, caption="One row per cell (a normal run, its folder in matrix.json); the number "
                                         "labels the cell's point in the charts.")
    section = Section("matrix", "Matrix", tables=[table])
    if panels:
        fig = charts.pareto_scatter(panels)
        section.charts.append(charts.render(fig, "pareto", " and ".join(p["title"] for p in panels)
                                            + " with the Pareto frontier",
                                            "Scatter of the cells, numbered as in the table; frontier cells: "
                                            + "; ".join(f"{p['title']}: " + ", ".join(str(i + 1) for i in p["front"])
                                                        for p in panels)))
        section.notes.append("A cell is on a Pareto frontier when no other cell is at least as good on both axes and "
                             "better on one (lower cost or latency, higher quality).")
    else:
        section.notes.append("No Pareto frontier: the cells lack cost or latency values.")
    sections = [section]
    if matrix.get("comparisons"):
        sections.append(Section("statistics", "Each cell against the best cell",
                                tables=[_statistics_table({"comparisons": matrix["comparisons"]})]))
    facts = [("cells", str(len(cells))), ("axes", ", ".join(params)), ("quality", metric_label(quality))]
    if isinstance(matrix.get("best"), dict):
        facts.append(("best cell", ", ".join(f"{k}={v}" for k, v in matrix["best"].items())))
    if isinstance(matrix.get("seconds"), (int, float)):
        facts.append(("took", f"{matrix['seconds']:.0f} s"))
    data = {"kind": "matrix", "quality": quality, "cells": len(cells)}
    return Page("matrix", f"Matrix: {len(cells)} cells", facts, sections, data)


# -- history -------------------------------------------------------------------------------------

def _time(text: str | None):
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None


def _history_row(row: dict) -> dict:
    """A row of history.json with its values in ``metrics``: a recorded run as it is, a trend row
    (``history --metric M --json``: ``metric`` and ``value``) with ``{M: value}``."""
    if isinstance(row.get("metrics"), dict):
        return row
    return {**row, "metrics": {row["metric"]: row.get("value")} if row.get("metric") else {}}


def _history_columns(rows: list[dict]) -> list[str]:
    """The metrics a history page shows: a trend's metric, else the headline values (``measures.headline``) the
    rows have (as ``evaluations history`` prints them)."""
    trended = list(dict.fromkeys(r["metric"] for r in rows if r.get("metric")))
    return trended or headline(r["metrics"] for r in rows)


def build_history_page(folder: Path) -> Page:
    rows = [_history_row(r) for r in _history_rows(folder / "history.json")]
    if not rows:
        raise EvaluationsError("history.json has no runs", where=str(folder / "history.json"),
                               fix="write it with `evaluations history --json > history.json` after some runs")
    chosen = _history_columns(rows)
    table_rows, keys = [], []
    for r in rows:
        table_rows.append([Cell.number(r.get("id")), Cell(str(r.get("recorded_at", ""))), Cell(str(r.get("dataset"))),
                           Cell(str(r.get("git_commit") or "—")[:10] + (" (dirty)" if r.get("git_dirty") else ""))]
                          + [Cell.number(r["metrics"].get(m)) for m in chosen]
                          + [Cell(str(r.get("run_dir", "")))])
        keys.append(str(r.get("id")))
    section = Section("history", "History", tables=[Table("history", ["id", "time", "dataset", "commit",
                                                                      *map(metric_label, chosen), "run"],
                                                          table_rows, row_keys=keys)])
    # one axis: the scores and rates in [0, 1] together (latency, tokens and cost are in the table), else the one
    # trended metric on its own scale
    drawn = [m for m in chosen if all(0 <= v <= 1 for r in rows if (v := r["metrics"].get(m)) is not None)]
    drawn = drawn or chosen[:1]
    if drawn:
        labels = []
        for r in rows:
            when = _time(r.get("recorded_at"))
            labels.append(f"#{r.get('id')}" + (f"\n{when:%m-%d %H:%M}" if when else ""))
        fig = charts.trends(labels, {metric_label(m): [r["metrics"].get(m) for r in rows] for m in drawn},
                            title="Metrics over recorded runs")
        section.charts.append(charts.render(fig, "trend", "Metrics over recorded runs",
                                            "Trend of " + ", ".join(map(metric_label, drawn)) + " over runs"))
        if len(drawn) < len(chosen):
            section.notes.append("The chart draws the values in [0, 1]; the table also has "
                                 + ", ".join(metric_label(m) for m in chosen if m not in drawn) + ".")
    # a trend (``history --metric M``) says where another model judged the metric: that step is not the system's
    changed = [f"#{r.get('id')} ({r.get('judge')})" for r in rows if r.get("judge_changed") is True]
    if changed:
        section.lead.append(f"The judge of {metric_label(str(rows[0].get('metric')))} changed at run "
                            + ", ".join(changed) + ": a step there is the judges' as much as the systems'.")
    facts = [("runs", str(len(rows))), ("datasets", ", ".join(sorted({str(r.get("dataset")) for r in rows})))]
    return Page("history", "History of runs", facts, [section], {"kind": "history", "runs": len(rows)})
