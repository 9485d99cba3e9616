"""The judged figures corrected by a person's labels (``summary.json``'s ``corrected`` section, as written by
``review.corrected``), as text a person reads: one ``CorrectedView`` a measure, shown by the console summary
(``reports.console``) and the run report (``reports.run_page``) alike."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

TITLE = "Corrected by a person's labels"
#: the order measures are shown in; a measure not listed here follows them in the section's order
ORDER = ("accuracy", "faithfulness", "answer_relevance", "context_relevance")
#: what a person reads of a case, by measure (``review.measures``): the answer, but the retrieved passages for
#: context relevance
UNIT = {"context_relevance": "retrieved contexts"}


@dataclass(frozen=True)
class CorrectedView:
    """One measure's corrected figures as text; ``error`` alone when they could not be computed."""

    measure: str
    judge: str = ""  # the judge's own figure and its 95% interval: "0.780 (0.730–0.820)"
    corrected: str = ""  # the corrected figure and its 95% interval
    read: str = ""  # "50 of 300 answers"
    agreement: str = ""  # "accuracy 0.860 · κ 0.640 · sensitivity 0.930 · specificity 0.700"
    method: str = ""
    target: str = ""
    error: str = ""

    @property
    def sentence(self) -> str:
        """The measure's figures in one plain sentence."""
        if self.error:
            return f"{self.measure}: not corrected: {self.error}"
        return (f"{self.measure}: {self.corrected} corrected by a person's labels, {self.judge} by the judge alone "
                f"(95% intervals); a person read {self.read}.")


def number(value: Any) -> str:
    """A figure with three decimals; "—" for none (a judge that predicted nothing, an undefined κ)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "—"
    return f"{value:.3f}"


def with_interval(value: Any, ci95: Any) -> str:
    """"0.710 (0.620–0.800)": the figure and its 95% interval, or the figure alone without one."""
    if not isinstance(ci95, (list, tuple)) or len(ci95) != 2:
        return number(value)
    return f"{number(value)} ({number(ci95[0])}–{number(ci95[1])})"


def agreement_text(agreement: dict[str, Any]) -> str:
    """The judge's agreement with the person on the labelled answers."""
    parts = (("accuracy", "accuracy"), ("κ", "kappa"), ("sensitivity", "sensitivity"), ("specificity", "specificity"))
    return " · ".join(f"{label} {number(agreement.get(key))}" for label, key in parts)


def measure_view(measure: str, entry: dict[str, Any]) -> CorrectedView:
    """The text of one measure's entry in the ``corrected`` section."""
    if "error" in entry:
        return CorrectedView(measure, error=" ".join(str(entry["error"]).split()))
    judge = entry.get("judge_only") or {}
    return CorrectedView(
        measure, judge=with_interval(judge.get("estimate"), judge.get("ci95")),
        corrected=with_interval(entry.get("estimate"), entry.get("ci95")),
        read=f"{entry.get('n_labels', '—')} of {entry.get('n_cases', '—')} {UNIT.get(measure, 'answers')}",
        agreement=agreement_text(entry.get("agreement") or {}), method=str(entry.get("method") or ""),
        target=str(entry.get("target") or ""))


def corrected_views(section: dict[str, Any] | None) -> list[CorrectedView]:
    """Every measure of the section in ``ORDER``; none without the section (a run nobody labelled)."""
    entries = {name: entry for name, entry in (section or {}).items() if isinstance(entry, dict)}
    names = sorted(entries, key=lambda name: ORDER.index(name) if name in ORDER else len(ORDER))
    return [measure_view(name, entries[name]) for name in names]
