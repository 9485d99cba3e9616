"""The report of one run, built from its folder (``summary.json`` + ``cases.jsonl``) alone.

Headline numbers are read from ``summary.json`` as written (never recomputed), so the page and the summary
agree; per-case views (segments, calibration, latency distributions, tiers, worst cases) read ``cases.jsonl``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from evaluations.results.headline import answer_headline, disagreement_line, judge_description, reference_free_line
from evaluations.results.records import REFERENCE_FREE_SCORES, STAGES
from evaluations.reports import charts
from evaluations.reports.corrected import TITLE as CORRECTED_TITLE, CorrectedView, corrected_views
from evaluations.results.calibration import BIN_RULE, run_calibration
from evaluations.results.records import CaseRecord
from evaluations.results.retrieval_metrics import parse_metric_name
from evaluations.results.rundata import RunData, RunSummary
from evaluations.reports.page import CaseCard, Cell, Page, Section, Table, fmt

WORST_CASES = 15
DISAGREEMENT_CARDS = 30  # cases where the judges disagree shown in full (verdicts and reasons); the table lists all
DISAGREE = "judges disagree"  # the drill-down mark of such a case
_PREFIX_LABEL = {"ndcg": "nDCG", "mrr": "MRR", "map": "MAP", "p": "P", "recall": "Recall", "hit": "Hit"}


def metric_label(name: str) -> str:
    """``ndcg@10`` -> ``nDCG@10``; other names unchanged."""
    parsed = parse_metric_name(name)
    return f"{_PREFIX_LABEL[parsed[1]]}@{parsed[2]}" if parsed else name


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def primary_judge(summary: RunSummary) -> str | None:
    return summary.primary_judge


def primary_answer_value(summary: RunSummary) -> float | None:
    """The primary judge's headline value: its accuracy over all cases to answer; a run folder written before
    accuracy existed gives its mean over the judged answers."""
    entry = summary.answers.judges.get(summary.primary_judge or "") if summary.answers else None
    return entry.value if entry else None


def disagreeing_cases(summary: RunSummary) -> list[str]:
    return [str(c) for c in summary.answers.disagreements.cases] if summary.answers else []


def _tokens_per_query(summary: RunSummary) -> float | None:
    if summary.answers is None:
        return None
    tokens = summary.answers.tokens
    if _number(tokens.per_query) is not None:
        return tokens.per_query
    parts = [_number(side.mean) for side in (tokens.input, tokens.output)]
    return None if None in parts else sum(parts)  # type: ignore[arg-type]


def _tokens_not_reported(summary: RunSummary) -> str | None:
    """"not reported" when the run answered but no answer's token counts are known (a user's system that returns no
    usage: ``measures.token_usage``), rather than a run that measured no tokens."""
    answers = summary.answers
    return "not reported" if answers and answers.attempted and answers.tokens.per_query is None else None


def _cost_label(summary: RunSummary) -> str:
    """"Cost per query (USD)", saying how many cases are left out of it for want of a price (``cost_usd.unpriced``)."""
    unpriced = summary.answers.cost_usd.unpriced if summary.answers else 0
    return "Cost per query (USD)" + (f", {unpriced} case{'s' * (unpriced > 1)} unpriced and left out" if unpriced
                                     else "")


def _cost_unknown(summary: RunSummary) -> str | None:
    """"unpriced" when the run answered with known tokens but no case has a price, "not reported" without tokens."""
    answers = summary.answers
    if not answers or not answers.attempted or answers.cost_usd.per_query is not None:
        return None
    return "unpriced" if answers.cost_usd.unpriced else "not reported"


def reference_free_mean(summary: RunSummary, name: str) -> float | None:
    """A reference-free score's mean over the cases it applied to (summary.json's ``reference_free.metrics``)."""
    entry = (((summary.model_extra or {}).get("reference_free") or {}).get("metrics") or {}).get(name) or {}
    return _number(entry.get("mean"))


def cutoff(names: Iterable[str]) -> int:
    """The cut-off the page reports retrieval at, from the metric names a run or case has ("ndcg@5"): 10 when it
    was scored, else the largest below 10, else the smallest (10 when there is none: the row then says not
    measured). A run with ``--k 1,3,5`` is reported at 5, not as unmeasured."""
    ks = sorted({int(k) for n in names if (k := n.partition("@")[2]).isdigit() and n.startswith("ndcg@")})
    if not ks or 10 in ks:
        return 10
    return max((k for k in ks if k < 10), default=ks[0])


@dataclass(frozen=True)
class Headline:
    """One row of the headline table: ``key`` is the measure's name in compare.json / history."""

    key: Callable[[RunSummary], str | None]
    label: Callable[[RunSummary], str]
    value: Callable[[RunSummary], float | None]
    digits: int = 4
    unknown: Callable[[RunSummary], str | None] = lambda s: None  # shown when the value is None, if not None


#: the headline table, in display order; every value is read from summary.json as written
HEADLINE: list[Headline] = [
    *(Headline(lambda s, m=m: f"{m}@{cutoff(s.metrics)}", lambda s, m=m, label=label: f"{label}@{cutoff(s.metrics)}",
               lambda s, m=m: s.metrics.get(f"{m}@{cutoff(s.metrics)}"))
      for m, label in (("ndcg", "nDCG"), ("recall", "Recall"), ("mrr", "MRR"))),
    Headline(primary_judge, lambda s: f"Answer accuracy ({primary_judge(s) or 'primary judge'})",
             primary_answer_value),
    *(Headline(lambda s, n=name: n, lambda s, n=name: n, lambda s, n=name: reference_free_mean(s, n))
      for name in REFERENCE_FREE_SCORES),
    Headline(lambda s: "latency_p95_ms", lambda s: "Latency p95 (ms per case)", lambda s: s.latency_ms.p95,
             digits=1),
    Headline(lambda s: "tokens_per_query", lambda s: "Tokens per query", _tokens_per_query, digits=1,
             unknown=_tokens_not_reported),
    Headline(lambda s: "cost_per_query", _cost_label,
             lambda s: s.answers.cost_usd.per_query if s.answers else None, digits=6, unknown=_cost_unknown),
]


def headline_values(summary: RunSummary | dict[str, Any]) -> list[tuple[str, str, float | None, int]]:
    """(key, label, value, digits) of every headline row (value None when the run did not measure it);
    ``summary``: a run's summary, or summary.json's object."""
    summary = summary if isinstance(summary, RunSummary) else RunSummary.model_validate(summary)
    rows = []
    for row in HEADLINE:
        key = row.key(summary)
        rows.append((key or row.label(summary), row.label(summary), _number(row.value(summary)), row.digits))
    return rows


# -- sections ------------------------------------------------------------------------------------

def _headline_section(summary: RunSummary) -> Section:
    rows, keys, missing = [], [], []
    for row, (key, label, value, digits) in zip(HEADLINE, headline_values(summary)):
        unknown = row.unknown(summary) if value is None else None
        if value is None and unknown is None:
            missing.append(label)
            continue
        rows.append([Cell(label), Cell.number(value, digits) if unknown is None else Cell(unknown, css="muted")])
        keys.append(key)
    table = Table("headline", ["metric", "value"], rows, row_keys=keys, sortable=False,
                  caption="Means over the cases (retrieval: over cases with relevant documents, failed cases "
                          "count as 0; answer accuracy: over every case to answer, failed and empty answers "
                          "count as incorrect)." + (f" Not measured in this run: {', '.join(missing)}."
                                                   if missing else ""))
    lead = [line for line in (answer_headline(summary.answers), disagreement_line(summary.answers),
                              reference_free_line(summary)) if line]
    return Section("headline", "Headline", lead=lead, tables=[table])


def _corrected_caption(views: list[CorrectedView]) -> str:
    """What the corrected table's figures are and, per measure, what it estimates and how (small text)."""
    how = " ".join(f"{v.measure} estimates {v.target}; method: {v.method}." for v in views)
    return ("Judge alone: the judge's own figure, its interval sampling noise only (it assumes the judge is right). "
            "Corrected: the judge's figure corrected by the cases a person labelled. Agreement: the judge's "
            "verdicts against the person's labels (κ: Cohen's kappa; sensitivity: the judge says yes where the person "
            "does; specificity: the judge says no where the person does). " + how)


def _corrected_section(summary: RunSummary) -> Section | None:
    """The judged figures corrected by a person's labels (``summary.corrected``, as written); None for a run
    nobody labelled, so that its report is as it was."""
    views = corrected_views(summary.corrected)
    if not views:
        return None
    shown = [v for v in views if not v.error]
    section = Section("corrected", CORRECTED_TITLE, lead=[v.sentence for v in shown],
                      notes=[v.sentence for v in views if v.error])
    if shown:
        rows = [[Cell(v.measure), Cell(v.judge), Cell(v.corrected), Cell(v.read), Cell(v.agreement)] for v in shown]
        section.tables.append(Table("corrected", ["measure", "judge alone (95% CI)", "corrected (95% CI)",
                                                  "a person read", "judge's agreement with the person"], rows,
                                    row_keys=[v.measure for v in shown], sortable=False,
                                    caption=_corrected_caption(shown)))
    return section


def _retrieval_section(summary: RunSummary) -> Section:
    metrics = summary.metrics
    section = Section("retrieval", "Retrieval")
    grid: dict[str, dict[int, float]] = {}
    for name, value in metrics.items():
        if parsed := parse_metric_name(name):
            grid.setdefault(parsed[1], {})[parsed[2]] = value
    if not grid:  # summary.metrics may hold only the reference-free means
        section.absent = "retrieval was not scored"
        return section
    ks = sorted({k for row in grid.values() for k in row})
    rows = [[Cell(_PREFIX_LABEL.get(m, m))] + [Cell.number(grid[m].get(k)) for k in ks] for m in grid]
    section.tables.append(Table("retrieval-metrics", ["metric", *[f"@{k}" for k in ks]], rows, row_keys=list(grid),
                                caption="Mean of each metric at each cut-off k (trec_eval definitions)."))
    if "p" in grid and "recall" in grid and len(ks) > 1:
        fig = charts.precision_recall_at_k(ks, [grid["p"].get(k) for k in ks], [grid["recall"].get(k) for k in ks])
        section.charts.append(charts.render(fig, "precision-recall", "Precision and recall at k",
                                            "Precision@k falls and Recall@k rises as k grows; "
                                            + ", ".join(f"k={k}: P {grid['p'].get(k, 0):.2f} R "
                                                        f"{grid['recall'].get(k, 0):.2f}" for k in ks)))
    return section


def _segment_section(summary: RunSummary) -> Section:
    section = Section("segments", "Metrics by segment")
    segments = summary.segments
    if not segments:
        section.absent = "the cases carry no tags (category, difficulty, topic …)"
        return section
    k = cutoff(summary.metrics)
    names = [n for n in (f"ndcg@{k}", f"recall@{k}", f"mrr@{k}", primary_judge(summary))
             if n and any(n in seg.metrics for seg in segments.values())]
    ordered = sorted(segments, key=lambda t: (-segments[t].cases, t))
    rows = [[Cell(tag), Cell.number(segments[tag].cases)]
            + [Cell.number(segments[tag].metrics.get(n)) for n in names] for tag in ordered]
    section.tables.append(Table("segments", ["segment (tag)", "cases", *map(metric_label, names)], rows,
                                row_keys=ordered, caption="Mean per tag (from summary.json; a verdict's mean is "
                                                          "its accuracy there: failed or unjudged answers count as "
                                                          "wrong); a case with several tags counts in each."))
    if names:
        shown = ordered[:25]
        fig = charts.heatmap([f"{t} ({segments[t].cases})" for t in shown], list(map(metric_label, names)),
                             [[_number(segments[t].metrics.get(n)) for n in names] for t in shown],
                             title="Metrics by segment (cases)" + (" — 25 largest" if len(ordered) > 25 else ""))
        section.charts.append(charts.render(fig, "segments", "Metrics by segment",
                                            f"Heatmap of {', '.join(map(metric_label, names))} per tag"))
    return section


def _reference_free_section(summary: RunSummary) -> Section:
    """The reference-free judges' metrics (``summary.json`` ``reference_free``, as written)."""
    section = Section("reference-free", "Reference-free judges")
    block = (summary.model_extra or {}).get("reference_free") or {}
    metrics = block.get("metrics") or {}
    if not metrics:
        section.absent = "no reference-free judge ran (judge.reference_free, --reference-free)"
        return section
    rows = []
    for name, entry in metrics.items():
        ci = entry.get("ci95")
        rows.append([Cell(name), Cell.number(_number(entry.get("mean"))), Cell.number(entry.get("n")),
                     Cell.number(entry.get("not_applicable")),
                     Cell(f"{ci[0]:.2f}–{ci[1]:.2f}" if ci else "—"),
                     Cell(", ".join(f"{k} {v}" for k, v in (entry.get("kinds") or {}).items()))])
    section.tables.append(Table("reference-free", ["metric", "mean", "n", "not applicable", "95% CI", "kinds"],
                                rows, row_keys=list(metrics),
                                caption="Means over the cases each judge applies to (faithfulness: supported claims "
                                        "/ claims; context_relevance: share of the retrieved chunks judged needed; "
                                        "answer_relevance: answers that address the question). A refusal, an "
                                        "empty answer or no retrieved context is not applicable, never a score. "
                                        "Not correctness verdicts."))
    agreed = (metrics.get("context_relevance") or {}).get("qrels_agreement")
    if agreed:
        rows = [_agreement_row("chunks", agreed["chunks"], agreed, agreed["cases"], agreed["qrels_precision"])]
        caption = "Agreement of the context-relevance verdicts with the qrels. chunks: " + agreed["rule"]
        if per_doc := agreed.get("documents"):  # runs written before the per-document figures have none
            rows.append(_agreement_row("documents", per_doc["documents"], per_doc, agreed["cases"], None))
            caption += "; documents: " + per_doc["rule"]
        section.tables.append(Table(
            "context-relevance-qrels", ["unit", "n", "cases", "accuracy", "κ", "judge says relevant",
                                        "qrels say relevant", "precision by qrels"], rows, caption=caption + "."))
    section.notes += _checker_notes(summary)
    section.notes.append(f"Judge model forward passes this run: {block.get('model_calls', 0)} (0: all cached).")
    return section


def _checker_notes(summary: RunSummary) -> list[str]:
    """Which model the reference-free judges asked (``run.reference_free_judge``) and, for each judge whose
    parameters were fitted through another one (``run.judge_parameters``), that its figures are not validated on
    this model: the same judge through two models gives different numbers."""
    extra = summary.run.model_extra or {}
    checker = extra.get("reference_free_judge")
    if not checker:
        return []  # a run written before the judge model was recorded
    notes = [f"Judge model: {checker}."]
    asked = "embedded" if str(checker).startswith("embedded") else str(checker)
    for judge, source in (extra.get("judge_parameters") or {}).items():
        fitted = (source or {}).get("fitted_through")
        if fitted and fitted != asked:
            notes.append(f"{judge}: its parameters were fitted through {fitted}, not {checker}: its figures are not "
                         f"validated on this model (evaluations calibrate-judge FILE --judges {judge} --judge "
                         f"{checker} fits them on labelled rows).")
    return notes


def _agreement_row(unit: str, n: int, agreed: dict, cases: int, precision: float | None) -> list[Cell]:
    return [Cell(unit), Cell.number(n), Cell.number(cases), Cell.number(_number(agreed["accuracy"]["value"])),
            Cell.number(_number(agreed["kappa"]["value"])), Cell.number(_number(agreed["judge_relevant_rate"])),
            Cell.number(_number(agreed["qrels_relevant_rate"])), Cell.number(_number(precision))]


def _judge_kinds(records: list[CaseRecord]) -> dict[str, str]:
    """judge -> "verdict" (true/false, or a reference-free score that is 1 or 0 per case: ``answer_relevance``,
    ``results.measures.REFERENCE_FREE``) or "score"."""
    from evaluations.results.measures import REFERENCE_FREE

    kinds: dict[str, str] = {name: "verdict" for name, kind in REFERENCE_FREE.items() if kind.binary}
    for record in records:
        for name, value in record.judges.items():
            if isinstance(value, bool):
                kinds[name] = "verdict"
            elif _number(value) is not None:
                kinds.setdefault(name, "score")
    return kinds


def _answers_section(summary: RunSummary, records: list[CaseRecord]) -> Section:
    section = Section("answers", "Answers and judges")
    answers = summary.answers
    if answers is None or not answers.judges:
        section.absent = "no answers were judged (retrieval only, or --skip-qa)"
        return section
    judges = answers.judges
    kinds = _judge_kinds(records)
    errors = answers.judge_errors
    primary = primary_judge(summary)
    rows = [[Cell(name + (" (primary)" if name == primary else "")), Cell(kinds.get(name, "score")),
             Cell.number(judge.accuracy),
             Cell(f"{judge.correct} / {judge.n_cases}" if judge.n_cases is not None else "—"),
             Cell.number(judge.mean), Cell.number(judge.n), Cell.number(errors.get(name, 0))]
            for name, judge in judges.items()]
    section.tables.append(Table("judges", ["judge", "kind", "accuracy (all cases to answer)", "correct / cases",
                                           "mean over judged (pass rate for verdicts)", "cases judged",
                                           "judge errors"], rows, row_keys=list(judges),
                                caption="Accuracy counts a failed or empty answer, a judge failure and a missing "
                                        "verdict as incorrect; the mean is over the answers the judge gave a value "
                                        "for."))
    # correctness verdicts: a reference-free verdict (answer relevance) is no accuracy (its section shows it)
    verdicts = [n for n in judges if kinds.get(n) == "verdict" and n not in REFERENCE_FREE_SCORES]
    charted = [n for n in verdicts if _number(judges[n].value) is not None]
    if charted:
        values = [judges[n].value for n in charted]
        counted = [judges[n].n_cases if judges[n].n_cases is not None else judges[n].n for n in charted]
        fig = charts.hbars(charted, values, xlabel="share of cases to answer judged correct", title="Judges' accuracy",
                           percent=True, notes=[f"(n={n})" for n in counted],
                           colours=[charts.ORANGE if n == primary else charts.BLUE for n in charted])
        section.charts.append(charts.render(fig, "judge-pass-rates", "Judges' accuracy", "Accuracy per judge: "
                                            + ", ".join(f"{n} {v:.0%}" for n, v in zip(charted, values))))
    counts = summary.counts
    answered = (f"{fmt(answers.answered_non_empty)} of {fmt(answers.to_answer)} cases to answer"
                if answers.to_answer is not None else fmt(answers.answered))
    section.notes.append(f"Answered (non-empty): {answered} · QA failed: {fmt(counts.qa_failed)} · judge "
                         f"failures: {fmt(counts.judge_failed)}")
    if primary:
        how = answers.primary_chosen_by
        section.notes.append(f"Primary judge: {judge_description(primary, answers.primary_validation)}"
                             + (f" (chosen: {how})" if how else "") + ".")
    due = answers.cases_to_answer
    if due.get("unanswerable") or due.get("no_gold"):
        left = {n: judges[n].unanswerable_left_out or 0 for n in verdicts}
        section.notes.append(
            f"Cases to answer: {fmt(due.get('gold'))} with gold answers (always counted), "
            f"{fmt(due.get('unanswerable'))} unanswerable (counted for a judge only where it gave a verdict; left "
            "out: " + (", ".join(f"{n} {v}" for n, v in left.items()) or "—") + "), "
            f"{fmt(due.get('no_gold'))} without gold answers (never counted).")
    return section


def _verdict_cell(value: Any) -> Cell:
    if not isinstance(value, bool):
        return Cell("—", css="muted")
    return Cell("correct" if value else "wrong", css="pass" if value else "fail")


def _disagreement_section(summary: RunSummary, records: list[CaseRecord]) -> Section:
    """The cases on which the compared judges disagree: every one in a table, the first ones in full."""
    section = Section("disagreements", "Judges disagree")
    names = disagreeing_cases(summary)
    if not names or summary.answers is None:
        block = summary.answers.disagreements if summary.answers else None
        section.absent = ("no answer had two of the compared judges" if not (block and block.of)
                          else f"the judges agree on all {block.of} answers")
        return section
    block = summary.answers.disagreements
    by_name = {r.name: r for r in records}
    shown = [by_name[n] for n in names if n in by_name]
    judges = [j for j in block.judges if any(isinstance(r.judges.get(j), bool) for r in shown)]
    rows = [[Cell(r.name), *(_verdict_cell(r.judges.get(j)) for j in judges),
             Cell(str((r.answer or {}).get("answer", ""))[:120])] for r in shown]
    section.tables.append(Table("disagreements", ["case", *judges, "answer"], rows,
                                row_keys=[r.name for r in shown],
                                caption="Every case where the judges present disagree (— = that judge gave no "
                                        "verdict); each judge's reason is in the case below."))
    section.notes.append((disagreement_line(summary.answers) or "").capitalize()
                         + f" (judges compared where present: {', '.join(block.judges)}). "
                         + (f"The first {DISAGREEMENT_CARDS} are shown in full." if len(shown) > DISAGREEMENT_CARDS
                            else "Each is shown in full below, with every judge's verdict and reason."))
    primary = primary_judge(summary)
    for record in shown[:DISAGREEMENT_CARDS]:
        card = case_card(record, primary)
        verdicts = record.judges
        card.why = "judges disagree: " + ", ".join(
            f"{j} {'correct' if verdicts[j] else 'wrong'}" for j in judges if isinstance(verdicts.get(j), bool))
        section.cases.append(card)
    return section


def _analysis_table(index: int, analysis: dict) -> Table:
    rows = [[Cell.number(v, 3) if _number(v) is not None else Cell(fmt(v)) for v in row] for row in analysis["rows"]]
    caption = analysis.get("title", "") + (f" — {analysis['description']}" if analysis.get("description") else "")
    return Table(f"analysis-{index}", list(analysis["columns"]), rows, caption=caption)


def _agreement_section(summary: RunSummary) -> Section:
    section = Section("agreement", "Agreement with human labels")
    analyses = summary.analyses
    for i, analysis in enumerate(analyses):
        kind = analysis.get("type")
        if kind == "table":
            section.tables.append(_analysis_table(i, analysis))
        elif kind == "confusion_matrix":
            title = analysis.get("title", "confusion matrix")
            fig = charts.confusion(analysis["matrix"], analysis["class_labels"], title=title)
            section.charts.append(charts.render(fig, f"confusion-{i}", title, f"{title}: rows = human label, "
                                                f"columns = judge verdict, counts {analysis['matrix']}"))
        elif kind == "scalar":
            section.notes.append(f"{analysis.get('title')}: {fmt(analysis.get('value'))} {analysis.get('unit') or ''}")
    if not any(a.get("type") == "confusion_matrix" for a in analyses):
        section.absent = "the cases carry no human correctness labels"
    return section


def _calibration_section(summary: RunSummary, records: list[CaseRecord]) -> tuple[Section, dict]:
    section = Section("calibration", "Calibration")
    calibrations = run_calibration(records, primary_judge(summary))
    data = {c.name: {k: v for k, v in c.to_dict().items() if k != "name"} for c in calibrations}
    usable = [c for c in calibrations if c.n]
    if not usable:
        section.absent = ("the cases carry no answer confidence and no judge probability with a truth to check "
                          "it against")
        return section, data
    rows = [[Cell(c.probability), Cell(c.truth), Cell.number(c.n), Cell.number(c.ece), Cell.number(c.mce),
             Cell.number(c.brier)] for c in usable]
    section.tables.append(Table("calibration", ["probability", "checked against", "cases", "ECE", "MCE", "Brier"],
                                rows, row_keys=[c.name for c in usable]))
    section.notes.append("ECE = Σ_b (n_b/N)·|accuracy_b − mean probability_b| over the non-empty bins b, "
                         "MCE = max_b of the same gap, Brier = mean (p − truth)²; bins: " + BIN_RULE + ".")
    fig = charts.reliability_diagrams(usable)
    section.charts.append(charts.render(fig, "reliability", "Reliability diagrams", "Accuracy per probability bin "
                                        "against the diagonal: " + "; ".join(f"{c.probability} ECE {c.ece:.3f}"
                                                                             for c in usable)))
    return section, data


def _judge_rows(summary: RunSummary) -> tuple[list[list[Cell]], list[str]]:
    """A latency row per judge that measured itself (``summary.judging``): ``judge <name>``, the cases it judged,
    its milliseconds per case and its model calls per case."""
    rows, keys = [], []
    for judge, cost in (summary.judging.judges if summary.judging else {}).items():
        ms = [Cell.number(None if getattr(cost.seconds, k) is None else 1000 * getattr(cost.seconds, k), 1)
              for k in ("mean", "p50", "p95", "p99", "max")]
        rows.append([Cell(f"judge {judge}"), Cell.number(cost.cases), *ms, Cell.number(cost.calls.mean, 1)])
        keys.append(f"judge:{judge}")
    return rows, keys


def _judging_note(summary: RunSummary) -> str | None:
    """Judging's seconds in all beside answering's (``summary.judging``), None for a run without judges' costs."""
    judging = summary.judging
    if judging is None:
        return None
    answering = ("" if judging.answering_seconds is None
                 else f", answering (the llm stage) {judging.answering_seconds:.1f} s")
    return (f"Judging took {judging.seconds:.1f} s in all ({judging.calls} model calls: forward passes, requests "
            f"sent and texts embedded; 0 when answered from a cache){answering}: the wall time of each case's "
            "judges, which run at once. A judge's seconds include waiting for a model another case or judge held.")


def _latency_section(summary: RunSummary, records: list[CaseRecord]) -> Section:
    section = Section("latency", "Latency")
    rows, keys = [], []
    for stage, dist in summary.latency_ms.by_stage.items():
        if not dist.max:
            continue  # a stage that took 0 ms in every case did not run
        rows.append([Cell(stage)] + [Cell.number(getattr(dist, k), 1) if k != "n" else Cell.number(dist.n)
                                     for k in ("n", "mean", "p50", "p95", "p99", "max")] + [Cell("")])
        keys.append(stage)
    judge_rows, judge_keys = _judge_rows(summary)
    rows, keys = rows + judge_rows, keys + judge_keys
    if rows:
        section.tables.append(Table("latency", ["stage", "cases", "mean", "p50", "p95", "p99", "max", "model calls"],
                                    rows, row_keys=keys, caption="Milliseconds per case; a judge's row: per case it "
                                    "judged, with its model calls per case."))
    if (note := _judging_note(summary)) is not None:
        section.notes.append(note)
    ok = [r for r in records if r.status != "failed"]
    stages = {}
    for stage in STAGES:  # the pipeline's stages, ending in total (results.records.STAGES)
        values = [v for v in (_number(r.latency_ms.get(stage)) for r in ok) if v is not None]
        if values and max(values) > 0:
            stages[stage] = values
    if stages:
        section.charts.append(charts.render(charts.latency_boxes(stages), "latency", "Latency per stage",
                                            "Box plot of milliseconds per case for " + ", ".join(stages)))
    if not rows and not stages:
        section.absent = "no case has a latency above 0 ms"
        return section
    skipped = [s for s in STAGES if s not in stages and s != "total"]
    if skipped:
        section.notes.append(f"Stages not run (0 ms in every case): {', '.join(skipped)}.")
    return section


def _tier_section(summary: RunSummary, records: list[CaseRecord]) -> Section:
    section = Section("tiers", "Model tiers")
    counts = summary.tiers
    if not counts:
        section.absent = "the system reported no model tier per case"
        return section
    tiers = [r.tier for r in records if r.tier]
    order = [t for t in dict.fromkeys(tiers) if t in counts] + sorted(t for t in counts if t not in tiers)
    first = order[0]  # tiers in the order the cases first report them: the system's first tier first
    total = sum(counts.values())
    escalated = total - counts[first]
    shares = [counts[t] / total for t in order]
    section.tables.append(Table("tiers", ["tier", "cases", "share"],
                                [[Cell(t), Cell.number(counts[t]), Cell.number(counts[t] / total, 3)]
                                 for t in order], row_keys=order))
    section.notes.append(f"Escalation rate: {escalated / total:.1%} ({escalated} of {total} cases went "
                         f"beyond the first tier, {first!r}; tiers in the order the cases first report them).")
    fig = charts.hbars(order, shares, xlabel="share of cases", title="Cases per model tier", percent=True,
                       notes=[f"({counts[t]})" for t in order])
    section.charts.append(charts.render(fig, "tiers", "Cases per model tier",
                                        ", ".join(f"{t} {s:.0%}" for t, s in zip(order, shares))))
    return section


# -- drill-down ----------------------------------------------------------------------------------

#: a reference-free judge's ``<name>_kind`` label when it does not apply for want of context, not for the answer
_CONTEXT_KINDS = frozenset({"no_context"})
#: a judge's kind label that says it applied (``faithfulness``: claims checked; ``answer_relevance``: accepted)
_APPLIED_KINDS = frozenset({"claims", "chunks", "relevant"})


def not_applicable(record: CaseRecord, name: str) -> str | None:
    """Why the reference-free judge ``name`` does not apply to the case (its ``<name>_kind`` label: "refusal",
    "empty", "echo", "no_context", …); None when it gave a value or did not run."""
    kind = record.judge_labels.get(f"{name}_kind")
    if kind is None or kind in _APPLIED_KINDS or _number(record.judges.get(name)) is not None:
        return None
    return kind


def _unanswered(record: CaseRecord) -> list[str]:
    """What the reference-free judges say of an answer that does not answer: answer relevance rejecting it (with its
    kind) and faithfulness not applicable because of the answer itself (a refusal, an empty answer, an echo …)."""
    why = []
    if _number(record.judges.get("answer_relevance")) == 0.0:
        kind = record.judge_labels.get("answer_relevance_kind")
        why.append("answer_relevance rejects the answer" + (f" ({kind})" if kind else ""))
    kind = not_applicable(record, "faithfulness")
    if kind is not None and kind not in _CONTEXT_KINDS:
        why.append(f"faithfulness not applicable ({kind}): the answer states nothing to check")
    return why


def _badness(record: CaseRecord, primary: str | None) -> tuple[int, float] | None:
    """Sort key of a case in the drill-down (smaller = worse); None for a case with nothing to show."""
    ndcg = _number(record.metrics.get(f"ndcg@{cutoff(record.metrics)}"))
    if record.status == "failed":
        return (0, 0.0)
    if record.qa.status == "failed":
        return (1, ndcg or 0.0)
    if record.judge_errors:
        return (2, ndcg or 0.0)
    if primary and record.judges.get(primary) is False:
        return (3, ndcg if ndcg is not None else 1.0)
    if _unanswered(record):
        return (4, ndcg if ndcg is not None else 1.0)
    if ndcg is not None and ndcg < 1.0:
        return (5, ndcg)
    faithfulness = _number(record.judges.get("faithfulness"))
    if faithfulness is not None and faithfulness < 1.0:
        return (6, faithfulness)
    if _number(record.judges.get("context_relevance")) == 0.0:
        return (7, 0.0)
    return None


_WHY = {0: "the run failed for this case", 1: "the answer stage failed", 2: "a judge failed",
        3: "the primary judge says wrong", 4: "the answer does not answer", 5: "retrieval below perfect",
        6: "claims not supported by the context", 7: "no retrieved chunk judged relevant"}


def evidence_rows(record: CaseRecord) -> list[tuple[str, str, str, str]]:
    """The reference-free judges' evidence as drill-down rows (judge, verdict, css, detail): every claim (verdict,
    P(supported), the passage that supports it, or for an unsupported claim the closest passage, which does not)
    and every chunk verdict (rank, id, P(relevant))."""
    rows = []
    for i, c in enumerate(record.claims or [], 1):
        read = f"passages {c.passage} and {c.bridge}" if c.bridge else f"passage {c.passage or '—'}"
        where = f"supported by {read}" if c.supported else f"closest {read} (does not support it)"
        rows.append((f"claim {i}", "supported" if c.supported else "not supported", "pass" if c.supported else "fail",
                     f"p {c.p:.2f} · {where} · {c.claim}" + (f" · {c.rule}" if c.rule else "")))
    for c in record.chunk_relevance or []:
        rows.append((f"chunk {c.rank}", "relevant" if c.relevant else "not relevant", "pass" if c.relevant else "fail",
                     f"p {c.p:.2f} · {c.id}" + (f" (document {c.doc})" if c.doc and c.doc != c.id else "")))
    return rows


def reference_free_rows(record: CaseRecord) -> list[tuple[str, str, str, str]]:
    """The reference-free judges' verdicts as drill-down rows (judge, verdict, css, reason): answer relevance as
    accepted or rejected with its kind, faithfulness and context relevance as scores, and a judge that does not
    apply as "not applicable (kind)" with why."""
    reasons, rows = record.judge_reasons, []
    for name in REFERENCE_FREE_SCORES:
        value = _number(record.judges.get(name))
        kind = not_applicable(record, name)
        if value is not None and name == "answer_relevance":
            label = record.judge_labels.get(f"{name}_kind")
            rows.append((name, "addresses the question" if value else "rejected" + (f": {label}" if label else ""),
                         "pass" if value else "fail", reasons.get(name, "")))
        elif value is not None:
            rows.append((name, fmt(value, 3), "", reasons.get(name, "")))
        elif kind is not None:
            why = ("no retrieved passage has text" if kind in _CONTEXT_KINDS
                   else "the answer states nothing to check against the context")
            rows.append((name, f"not applicable ({kind})", "muted", why))
    return rows


def worst_cases(records: list[CaseRecord], primary: str | None, limit: int = WORST_CASES) -> list[CaseRecord]:
    """The worst cases: failed runs, failed answers, failed judges, answers judged wrong, answers that do not answer
    (rejected by answer relevance, or a refusal, empty answer or echo faithfulness does not apply to), then lowest
    nDCG@10, unsupported claims and contexts with no relevant chunk."""
    keyed = [(key, i, r) for i, r in enumerate(records) if (key := _badness(r, primary)) is not None]
    return [r for _, _, r in sorted(keyed, key=lambda x: (x[0], x[1]))[:limit]]


def case_card(record: CaseRecord, primary: str | None) -> CaseCard:
    key = _badness(record, primary) or (len(_WHY), 1.0)  # not listed for a fault: no why
    relevant = {d: g for d, g in record.relevant.items() if g and g > 0}
    retrieved = list(record.retrieved)
    k = cutoff(record.metrics)
    ndcg = _number(record.metrics.get(f"ndcg@{k}"))
    why = ("; ".join(_unanswered(record)) if key[0] == 4 else _WHY.get(key[0], "")) + (
        f" · nDCG@{k} = {ndcg:.3f}" if ndcg is not None else "")
    fields: list[tuple[str, str]] = []
    answer = record.answer or {}
    if answer:
        fields.append(("answer", str(answer.get("answer", ""))))
        if answer.get("confidence") is not None:
            fields.append(("confidence", fmt(_number(answer.get("confidence")), 2)))
    if record.gold_answers:
        fields.append(("gold answer", " | ".join(map(str, record.gold_answers))))
    if record.label is not None:
        fields.append(("human label", "correct" if record.label else "incorrect"))
    if record.tags:
        fields.append(("tags", ", ".join(map(str, record.tags))))
    reasons = record.judge_reasons
    judges = []
    for name, value in record.judges.items():
        if name in REFERENCE_FREE_SCORES:
            continue  # reference_free_rows
        if isinstance(value, bool):
            judges.append((name, "correct" if value else "wrong", "pass" if value else "fail", reasons.get(name, "")))
        else:
            judges.append((name, fmt(_number(value), 3), "", reasons.get(name, "")))
    errors = [e for e in (record.error, record.qa.error) if e]
    errors += [f"{e.evaluator}: {e.error}" for e in record.judge_errors]
    raw = record.qa.raw_text
    if raw and record.qa.status == "failed":
        errors.append(f"model output: {raw}")
    judges += reference_free_rows(record) + evidence_rows(record)
    rank = {d: i + 1 for i, d in enumerate(retrieved)}
    expected = sorted(relevant.items(), key=lambda kv: (rank.get(kv[0], 10**9), kv[0]))
    return CaseCard(name=record.name, why=why, query=record.query, fields=fields,
                    retrieved=[(d, d in relevant) for d in retrieved[:10]],
                    expected=[(f"{d} (rank {rank[d]})" if d in rank else f"{d} (not retrieved)", g)
                              for d, g in expected],
                    judges=judges, errors=errors)


def _nothing_wrong(records: list[CaseRecord], primary: str | None) -> str:
    """What a run without a worst case passed: only the checks its cases had (a run without gold answers or qrels
    has no correct answer and no perfect retrieval to claim)."""
    checks = [what for what, present in (
        ("every answer judged correct", primary is not None and any(primary in r.judges for r in records)),
        ("perfect retrieval (nDCG = 1)", any(n.startswith("ndcg@") for r in records for n in r.metrics)),
        ("every answer addresses its question", any("answer_relevance" in r.judges for r in records)),
        ("every claim supported", any(r.claims for r in records)),
        ("a relevant chunk in every judged context", any(r.chunk_relevance for r in records))) if present]
    return "no case failed" + (", with " + "; ".join(checks) if checks else "")


def _worst_section(records: list[CaseRecord], summary: RunSummary) -> Section:
    section = Section("worst-cases", "Worst cases")
    primary = primary_judge(summary)
    worst = worst_cases(records, primary)
    if not worst:
        section.absent = _nothing_wrong(records, primary)
        return section
    section.notes.append(f"The {len(worst)} worst of {len(records)} cases: failed runs first, then failed answers, "
                         "failed judges, answers the primary judge rejects, answers that do not answer (answer "
                         "relevance rejects them, or faithfulness does not apply: a refusal, an empty answer, an "
                         f"echo …), the lowest nDCG@{cutoff(summary.metrics)}, then answers with unsupported claims "
                         "and contexts with no relevant chunk. Relevant documents among the retrieved are marked ✓.")
    counts = Counter(key[0] for r in records if (key := _badness(r, primary)) is not None)
    section.notes.append("Cases by the first reason they are listed for: "
                         + "; ".join(f"{_WHY[k]} {counts[k]}" for k in sorted(counts)) + ".")
    split = set(disagreeing_cases(summary))
    section.cases = [case_card(r, primary) for r in worst]
    for card in section.cases:
        if card.name in split:
            card.flags.append(DISAGREE)
    return section


# -- the page ------------------------------------------------------------------------------------

def _facts(summary: RunSummary) -> list[tuple[str, str]]:
    run, dataset = summary.run, summary.dataset
    extra = run.model_extra or {}
    facts = [
        ("dataset", f"{dataset.name or '?'} (" + ", ".join(
            f"{fmt(getattr(dataset, k))} {k}" for k in ("queries", "documents") if getattr(dataset, k) is not None)
         + ")"),
        ("started", str(run.started or "—")),
        ("duration", f"{fmt(_number(run.seconds), 1)} s"),
        ("search", f"{run.search_mode or '—'} · embedder {run.embedder or '—'}"),
        ("models", f"QA {extra.get('qa_model') or '—'} · judge {extra.get('judge_model') or '—'}"),
        ("cases", " · ".join(f"{k} {fmt(v)}" for k, v in summary.counts.model_dump(exclude_unset=True).items())),
    ]
    return [(k, v) for k, v in facts if v and "—" not in v and "?" not in v]


def build_run_page(run: RunData) -> Page:
    """The report Page of a run folder."""
    summary, records = run.summary, run.records
    calibration, cal_data = _calibration_section(summary, records)
    corrected = _corrected_section(summary)
    sections = [
        _headline_section(summary),
        *([corrected] if corrected else []),
        _retrieval_section(summary),
        _segment_section(summary),
        _answers_section(summary, records),
        _reference_free_section(summary),
        _disagreement_section(summary, records),
        _agreement_section(summary),
        calibration,
        _latency_section(summary, records),
        _tier_section(summary, records),
        _worst_section(records, summary),
    ]
    absent = [f"{s.title.lower()} ({s.absent})" for s in sections if s.absent]
    if absent:
        sections[0].notes.append("Not in this report: " + "; ".join(absent) + ".")
    data = {"kind": "run", "name": run.name,
            "headline": {key: value for key, _, value, _ in headline_values(summary)},
            "calibration": cal_data, **({"corrected": summary.corrected} if corrected else {})}
    return Page("run", f"Run report: {run.name}", _facts(summary), [s for s in sections if not s.absent], data)
