"""The answer headline people read, in one place, from ``summary.json``'s ``answers`` alone (console,
report.html / report.md all print these sentences):

- ``answer accuracy 0.22 (primary judge: combined_correct — combined judge; validated accuracy vs human labels:
  weak systems 0.91, strong systems 0.88) · answered 18/20``;
- ``judges disagree on 3 of 18 answers``;
- ``reference-free: faithfulness 0.93 (n 18, 2 not applicable) · context_relevance 0.41 (n 20)`` (summary.json's
  ``reference_free`` section; these are not correctness verdicts).

The validated figures are the primary judge's entry of the shipped validation file as the run recorded it
(``answers.primary_validation``, see ``evaluations.judging.validation.validation``); a judge without one is "not validated".
A summary written before ``accuracy`` existed has no headline (None).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from evaluations.judging.validation.validation import JudgeValidation
from evaluations.results.rundata import AnswersSummary, RunSummary

__all__ = ["answer_headline", "disagreement_line", "judge_description", "primary_accuracy", "reference_free_line",
           "reference_free_calls_line"]


def primary_accuracy(answers: AnswersSummary | None) -> float | None:
    """The primary judge's accuracy over all cases to answer (None when the summary has none)."""
    entry = answers.judges.get(answers.primary_judge or "") if answers else None
    return float(entry.accuracy) if entry is not None and entry.accuracy is not None else None


def judge_description(name: str, validation: dict[str, Any] | None) -> str:
    """``name — label; validated accuracy vs human labels: weak systems 0.91, strong systems 0.88``, or
    ``name — not validated``."""
    if not validation:
        return f"{name} — not validated"
    try:
        entry = JudgeValidation.model_validate(validation)
    except ValidationError:
        return f"{name} — not validated (unreadable validation entry)"
    return f"{name} — " + "; ".join(part for part in (entry.label, entry.headline()) if part)


def answer_headline(answers: AnswersSummary | None) -> str | None:
    """The one-line answer headline (module docstring); None without a primary judge's accuracy."""
    accuracy = primary_accuracy(answers)
    if answers is None or accuracy is None:
        return None
    judge = judge_description(answers.primary_judge or "", answers.primary_validation)
    line = f"answer accuracy {accuracy:.2f} (primary judge: {judge})"
    if answers.to_answer is not None:
        line += f" · answered {answers.answered_non_empty}/{answers.to_answer}"
    return line


def disagreement_line(answers: AnswersSummary | None) -> str | None:
    """``judges disagree on N of M answers`` (None when no answer had two of the compared judges)."""
    if answers is None or not answers.disagreements.of:
        return None
    return f"judges disagree on {answers.disagreements.n} of {answers.disagreements.of} answers"


def reference_free_line(summary: RunSummary) -> str | None:
    """``reference-free: faithfulness 0.93 (n 18, 2 not applicable, 1 failed) · …`` (None without the section)."""
    metrics = ((summary.model_extra or {}).get("reference_free") or {}).get("metrics") or {}
    parts = []
    for name, entry in metrics.items():
        mean, n = entry.get("mean"), entry.get("n", 0)
        value = f"{mean:.2f}" if isinstance(mean, (int, float)) else "—"
        extra = [f"{entry[key]} {said}" for key, said in (("not_applicable", "not applicable"), ("failed", "failed"))
                 if entry.get(key)]
        if (first := entry.get("first_relevant")) and first.get("cases"):
            extra.append(f"a relevant chunk in {first['hit_rate']:.0%} of cases, MRR {first['mrr']:.2f}")
        if (agreed := entry.get("qrels_agreement")) and agreed.get("chunks"):
            accuracy, kappa = (_value(agreed.get(key)) for key in ("accuracy", "kappa"))
            said = f"agrees with the qrels on {agreed['chunks']} chunks: accuracy {accuracy}, κ {kappa}"
            if (per_doc := agreed.get("documents")) and per_doc.get("documents", 0) < agreed["chunks"]:
                said += (f"; on {per_doc['documents']} documents: accuracy {_value(per_doc.get('accuracy'))}, "
                         f"κ {_value(per_doc.get('kappa'))}")
            extra.append(said)
        parts.append(f"{name} {value} (n {', '.join([str(n), *extra])})")
    return "reference-free: " + " · ".join(parts) if parts else None


def reference_free_calls_line(summary: RunSummary) -> str | None:
    """``reference-free judges: N model calls`` (forward passes or served questions the judges made in this run;
    "every verdict from the cache" when they judged and made none), None without the section."""
    section = (summary.model_extra or {}).get("reference_free") or {}
    if not section:
        return None
    calls = int(section.get("model_calls") or 0)
    judged = any((entry.get("n") or 0) > 0 for entry in (section.get("metrics") or {}).values())
    said = "1 model call" if calls == 1 else f"{calls} model calls"
    return f"reference-free judges: {said}" + (" (every verdict from the cache)" if judged and not calls else "")


def _value(entry: object) -> str:
    """An agreement figure ({"value": x, …} or x) to two decimals; "—" when it is missing or not a number."""
    value = entry.get("value") if isinstance(entry, dict) else entry
    return f"{value:.2f}" if isinstance(value, (int, float)) and value == value else "—"
