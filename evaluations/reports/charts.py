"""Charts drawn with matplotlib: inline SVG for the HTML page, PNG for Markdown.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot, no global state). SVG text stays text
(``svg.fonttype = none``: small, selectable, no embedded font to fetch), and each chart's SVG ids are prefixed
with the chart id so several inline SVGs never share an id.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, PercentFormatter

from evaluations.reports.page import Chart

BLUE, ORANGE, GREEN, RED, GREY = "#1f6fb4", "#e0802b", "#2f9e44", "#c92a2a", "#868e96"
_RC = {
    "font.size": 9.5, "axes.titlesize": 10.5, "axes.titleweight": "bold", "axes.labelsize": 9.5,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.color": "#e9ecef",
    "grid.linewidth": 0.8, "axes.axisbelow": True, "legend.frameon": False, "legend.fontsize": 8.5,
    "svg.fonttype": "none", "font.family": "DejaVu Sans",
}
PNG_DPI = 110
WIDTH = 7.2  # inches; the page shows charts at most this wide (about 690 px)


def figure(height: float, width: float = WIDTH) -> Figure:
    with matplotlib.rc_context(_RC):
        return Figure(figsize=(width, height), layout="constrained")


def render(fig: Figure, chart_id: str, title: str, alt: str) -> Chart:
    """The figure as a Chart: SVG (without the XML prologue, ids salted with ``chart_id``) and PNG bytes."""
    svg_buffer, png_buffer = io.StringIO(), io.BytesIO()
    with matplotlib.rc_context({**_RC, "svg.hashsalt": chart_id}):  # stable ids: the same report twice is identical
        fig.savefig(svg_buffer, format="svg", metadata={"Date": None})
        fig.set_layout_engine("none")  # the layout the SVG drew is the PNG's: constrained layout is solved once
        fig.savefig(png_buffer, format="png", dpi=PNG_DPI, metadata={"Software": None})
    svg = svg_buffer.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    # matplotlib names groups "figure_1", "axes_1" … in every SVG: prefix every id (and each reference to it)
    # with the chart id, so the page's inline SVGs never share an id
    svg = re.sub(r'(\sid="|url\(#|href="#)([^")]+)', lambda m: f"{m.group(1)}{chart_id}-{m.group(2)}", svg)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{_attr(alt)}" ', 1)
    return Chart(id=chart_id, title=title, alt=alt, svg=svg, png=png_buffer.getvalue())


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _rc(func):
    """Draw under the report's matplotlib style."""
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(_RC):
            return func(*args, **kwargs)
    wrapper.__name__, wrapper.__doc__ = func.__name__, func.__doc__
    return wrapper


@_rc
def precision_recall_at_k(ks: Sequence[int], precision: Sequence[float | None],
                          recall: Sequence[float | None]) -> Figure:
    """Left: P@k and R@k against k; right: the precision–recall trade-off, one point per k."""
    fig = figure(3.0)
    left, right = fig.subplots(1, 2, width_ratios=[1.25, 1])
    for values, label, colour, marker in ((precision, "Precision@k", BLUE, "o"), (recall, "Recall@k", ORANGE, "s")):
        points = [(k, v) for k, v in zip(ks, values) if v is not None]
        left.plot([k for k, _ in points], [v for _, v in points], marker=marker, color=colour, label=label)
    if max(ks) / min(ks) >= 20:
        left.set_xscale("log")
    left.set_xticks(list(ks), [str(k) for k in ks])
    left.minorticks_off()
    left.set_ylim(0, 1.02)
    left.set_xlabel("cut-off k (documents retrieved)")
    left.set_ylabel("mean over queries")
    left.set_title("Precision and recall at k")
    left.legend(loc="center right")
    pairs = [(k, p, r) for k, p, r in zip(ks, precision, recall) if p is not None and r is not None]
    right.plot([r for _, _, r in pairs], [p for _, p, _ in pairs], marker="o", color=BLUE)
    for k, p, r in pairs:
        right.annotate(f"k={k}", (r, p), textcoords="offset points", xytext=(5, 4), fontsize=8, color="#495057")
    right.set_xlim(0, 1.05)
    right.set_ylim(0, max([p for _, p, _ in pairs] + [0.1]) * 1.25)
    right.set_xlabel("Recall@k")
    right.set_ylabel("Precision@k")
    right.set_title("Precision–recall trade-off")
    return fig


@_rc
def hbars(labels: Sequence[str], values: Sequence[float], *, xlabel: str, title: str, limit: float | None = 1.0,
          percent: bool = False, colours: Sequence[str] | None = None, notes: Sequence[str] | None = None) -> Figure:
    """Horizontal bars, one per label (top to bottom in the given order), each annotated with its value."""
    fig = figure(0.9 + 0.32 * len(labels))
    ax = fig.subplots()
    positions = list(range(len(labels)))[::-1]
    ax.barh(positions, values, color=list(colours) if colours else BLUE, height=0.62)
    ax.set_yticks(positions, list(labels))
    ax.grid(axis="y", visible=False)
    top = limit if limit is not None else max(list(values) + [1e-9]) * 1.18
    ax.set_xlim(0, top)
    for i, (pos, value) in enumerate(zip(positions, values)):
        text = f"{value:.0%}" if percent else f"{value:.3f}"
        if notes:
            text += f"  {notes[i]}"
        inside = value > top * 0.82
        ax.text(value - top * 0.01 if inside else value + top * 0.01, pos, text, va="center",
                ha="right" if inside else "left", fontsize=8.5, color="white" if inside else "#212529")
    if percent:
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_xlabel(xlabel)
    ax.set_title(title, loc="left")
    return fig


@_rc
def heatmap(rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float | None]], *,
            title: str) -> Figure:
    """A table of values in [0, 1] as a heatmap (rows × columns), every cell annotated; empty cells blank."""
    import numpy as np

    grid = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    fig = figure(0.9 + 0.3 * len(rows), width=min(WIDTH, 2.6 + 1.15 * len(columns)))
    ax = fig.subplots()
    ax.imshow(np.ma.masked_invalid(grid), cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    ax.grid(False)
    for i in range(len(rows)):
        for j in range(len(columns)):
            if np.isfinite(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=8.5, color="#212529")
    ax.set_xticks(range(len(columns)), list(columns))
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(rows)), list(rows))
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.tick_params(length=0)
    ax.set_title(title, loc="left")
    return fig


@_rc
def reliability_diagrams(calibrations: Sequence) -> Figure:
    """One reliability diagram per calibration: accuracy per confidence bin against the diagonal, with
    the bin sizes below."""
    n = len(calibrations)
    fig = figure(4.0, width=min(WIDTH, 3.6 * n) if n > 1 else 4.4)
    axes = fig.subplots(2, n, height_ratios=[3, 1], sharex="col", squeeze=False)
    for i, cal in enumerate(calibrations):
        top, bottom = axes[0][i], axes[1][i]
        top.plot([0, 1], [0, 1], linestyle="--", color=GREY, linewidth=1, label="perfectly calibrated")
        centres = [sum(b["range"]) / 2 for b in cal.bins]
        top.bar(centres, [b["accuracy"] for b in cal.bins], width=0.09, color=BLUE, alpha=0.85, label="accuracy")
        top.plot([b["confidence"] for b in cal.bins], [b["accuracy"] for b in cal.bins], "o", color=ORANGE,
                 markersize=4, label="bin mean")
        top.set_xlim(0, 1)
        top.set_ylim(0, 1.02)
        top.set_ylabel("fraction correct")
        ece = "n/a" if cal.ece is None else f"{cal.ece:.3f}"
        top.set_title(f"{cal.probability}\nvs {cal.truth}: ECE {ece}", fontsize=9)
        bottom.bar(centres, [b["n"] for b in cal.bins], width=0.09, color=GREY)
        bottom.set_ylabel("cases")
        bottom.set_xlabel("predicted probability (10 bins)")
        bottom.grid(axis="x", visible=False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8)
    return fig


@_rc
def confusion(matrix: Sequence[Sequence[int]], labels: Sequence[str], *, title: str,
              rows: str = "human label", columns: str = "judge verdict") -> Figure:
    """A confusion matrix as a heatmap with counts and row percentages."""
    fig = figure(2.3, width=3.1)
    ax = fig.subplots()
    ax.imshow(matrix, cmap="Blues", vmin=0)
    ax.grid(False)
    peak = max(max(r) for r in matrix) or 1
    for i, row in enumerate(matrix):
        total = sum(row) or 1
        for j, count in enumerate(row):
            ax.text(j, i, f"{count:,}\n{count / total:.0%} of row", ha="center", va="center", fontsize=8.5,
                    color="white" if count > peak * 0.6 else "#212529")
    ax.set_xticks(range(len(labels)), list(labels))
    ax.set_yticks(range(len(labels)), list(labels))
    ax.set_xlabel(columns)
    ax.set_ylabel(rows)
    ax.set_title(title, fontsize=9)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return fig


@_rc
def latency_boxes(stages: dict[str, Sequence[float]]) -> Figure:
    """The distribution of each stage's latency per case (box: quartiles, whiskers: 1.5 IQR), log scale."""
    names = list(stages)
    fig = figure(0.9 + 0.42 * len(names))
    ax = fig.subplots()
    data = [[max(v, 1e-3) for v in stages[name]] for name in names]
    ax.boxplot(data, orientation="horizontal", tick_labels=names, widths=0.55, patch_artist=True,
               boxprops={"facecolor": "#d0e4f5", "edgecolor": BLUE}, medianprops={"color": RED},
               flierprops={"markersize": 2.5, "markeredgecolor": GREY})
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("milliseconds per case (log scale)")
    ax.set_title("Latency per stage", loc="left")
    return fig


def pareto_front(xs: Sequence[float], ys: Sequence[float]) -> list[int]:
    """Indices of the points no other point beats: lower x and higher y (ties: equal is not better)."""
    front = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        dominated = any(x2 <= x and y2 >= y and (x2 < x or y2 > y) for j, (x2, y2) in enumerate(zip(xs, ys)) if j != i)
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: xs[i])


@_rc
def pareto_scatter(panels: list[dict]) -> Figure:
    """Scatter panels (cost–quality, latency–quality): points labelled, Pareto-frontier points joined.

    ``panels``: [{"x": [...], "y": [...], "labels": [...], "front": [indices], "xlabel", "ylabel", "title"}].
    """
    fig = figure(3.3)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels):
        front = panel["front"]
        others = [i for i in range(len(panel["x"])) if i not in front]
        ax.scatter([panel["x"][i] for i in others], [panel["y"][i] for i in others], color=GREY, s=28,
                   label="dominated")
        ax.plot([panel["x"][i] for i in front], [panel["y"][i] for i in front], "o-", color=RED, markersize=6,
                label="Pareto frontier")
        for i, label in enumerate(panel["labels"]):
            ax.annotate(str(i + 1), (panel["x"][i], panel["y"][i]), textcoords="offset points", xytext=(5, 4),
                        fontsize=8, color="#212529")
        ax.set_xlabel(panel["xlabel"])
        ax.set_ylabel(panel["ylabel"])
        ax.set_title(panel["title"], loc="left")
        ax.margins(0.15)
        ax.legend(loc="best")
    return fig


@_rc
def forest(rows: Sequence[dict], *, xlabel: str, title: str) -> Figure:
    """A forest plot: one row per metric, the difference (b − a) with its 95% CI; significant rows coloured."""
    fig = figure(1.0 + 0.34 * len(rows))
    ax = fig.subplots()
    positions = list(range(len(rows)))[::-1]
    for pos, row in zip(positions, rows):
        colour = (GREEN if row["better"] else RED) if row["significant"] else GREY
        lo, hi = row["ci"]
        ax.plot([lo, hi], [pos, pos], color=colour, linewidth=2)
        ax.plot([row["diff"]], [pos], "o", color=colour, markersize=6)
    ax.axvline(0, color="#495057", linewidth=1)
    ax.set_yticks(positions, [row["label"] for row in rows])
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(xlabel)
    ax.set_title(title, loc="left")
    ax.margins(x=0.12)
    return fig


@_rc
def trends(labels: Sequence[str], series: dict[str, Sequence[float | None]], *, title: str) -> Figure:
    """Metric values over recorded runs in order (x: one position per run, labelled), one line per metric."""
    fig = figure(3.0)
    ax = fig.subplots()
    colours = [BLUE, ORANGE, GREEN, "#7950f2", RED, GREY]
    for j, (name, values) in enumerate(series.items()):
        points = [(i, v) for i, v in enumerate(values) if v is not None]
        ax.plot([i for i, _ in points], [v for _, v in points], "o-", color=colours[j % len(colours)], label=name,
                markersize=4)
    step = max(1, len(labels) // 12)  # at most about 12 labels
    ax.set_xticks(range(0, len(labels), step), [labels[i] for i in range(0, len(labels), step)], fontsize=8)
    ax.set_xlabel("recorded run (id, time)")
    ax.set_ylabel("value")
    ax.set_title(title, loc="left")
    ax.margins(x=0.08)
    ax.legend(loc="best")
    return fig
