"""What a report is, independent of its format: a page of sections holding notes, tables, charts and cases.

``html`` and ``markdown`` render the same ``Page``; the builders (``run_page``, ``experiment_pages``) fill it
from the JSON files of a run folder, a comparison, a matrix or a history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


def fmt(value: Any, digits: int = 4) -> str:
    """How a number is shown: ``digits`` decimals for floats, thousands separators for big values, "—" for none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.1f}"
        return f"{value:.{digits}f}"
    return str(value)


@dataclass
class Cell:
    """A table cell: the text shown, the exact value (``data-value``, for sorting and tests) and a CSS class."""

    text: str
    value: float | str | None = None
    css: str = ""  # "better" | "worse" (significant changes), "pass" | "fail", "muted"
    title: str = ""

    @classmethod
    def number(cls, value: Any, digits: int = 4, css: str = "") -> Cell:
        exact = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if exact is not None and not math.isfinite(exact):
            exact = None
        return cls(fmt(value, digits), exact, css)


@dataclass
class Table:
    id: str
    columns: list[str]
    rows: list[list[Cell]]
    caption: str = ""
    sortable: bool = True
    row_keys: list[str] = field(default_factory=list)  # data-key per row (e.g. the metric name)


@dataclass
class Chart:
    """A rendered chart: inline SVG for the page, PNG bytes for Markdown. ``alt`` describes it in words."""

    id: str
    title: str
    alt: str
    svg: str
    png: bytes

    @property
    def png_name(self) -> str:
        return f"report-{self.id}.png"


@dataclass
class CaseCard:
    """One case in the drill-down."""

    name: str
    why: str  # why it is listed: "run failed", "judge failed", "nDCG@10 = 0.000"
    query: str
    fields: list[tuple[str, str]]  # (label, text) pairs shown in order
    retrieved: list[tuple[str, bool]]  # (doc id, relevant?) in rank order
    expected: list[tuple[str, int]]  # (doc id, grade)
    judges: list[tuple[str, str, str, str]]  # (judge, verdict text, css, reason)
    errors: list[str]
    flags: list[str] = field(default_factory=list)  # marks shown beside the name and filterable: "judges disagree"


@dataclass
class Section:
    id: str
    title: str
    notes: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    lead: list[str] = field(default_factory=list)  # the section's key sentences, shown first (bold)
    charts: list[Chart] = field(default_factory=list)
    cases: list[CaseCard] = field(default_factory=list)
    absent: str = ""  # why the section has nothing to show in this report (listed once, not shown as a section)


@dataclass
class Page:
    kind: str  # "run" | "comparison" | "matrix" | "history"
    title: str
    facts: list[tuple[str, str]]  # key facts shown under the title
    sections: list[Section]
    data: dict[str, Any] = field(default_factory=dict)  # machine-readable summary embedded in the page

    @property
    def charts(self) -> list[Chart]:
        return [c for s in self.sections for c in s.charts]
