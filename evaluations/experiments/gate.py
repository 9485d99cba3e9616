"""``gate``: does a run meet the quality rules? Exit 0 all hold, 1 some broken, 2 bad input.

Rules file (YAML)::

    rules:
      - {metric: ndcg@10, min: 0.65}                 # absolute floor
      - {metric: latency_p95_ms, max: 2000}          # absolute ceiling
      - {metric: p@5, max_drop: 0.05}                # value >= baseline × (1 - 0.05)
      - {metric: tokens_per_query, max_rise: 0.10}   # value <= baseline × (1 + 0.10)
      - {metric: latency_p95_ms, max_rise: 0.20, only_if_significant: true}
      - {metric: corrected.accuracy.lo, min: 0.7}    # the lower end of the figure a person's labels corrected
    zero_tolerance: [hit@10, offline_correct]        # no case may go from pass (baseline) to fail
                                                     # (measures.Verdict: the metric's pass/fail rule)

Metric names are the run-level values of ``measures.py`` (retrieval metrics, judges, the reference-free scores,
latency_pNN_ms, tokens_per_query, cost_per_query, failure_rate, …), or a corrected figure (``corrected.<measure>``,
its interval's ends ``.lo`` and ``.hi``: ``review.corrected``; min/max only, and bad input without labels); an alias (``groundedness``) is read as its
measure (``faithfulness``). A metric without values is bad input (exit 2), also a reference-free score that ran but
applied to none of the cases. Absolute rules use all the run's cases; relative rules and zero tolerance use the
cases both runs have (a relative rule's two means over the shared cases that have a value in both runs: paired, as
``compare`` pairs them). ``only_if_significant``: a broken relative rule counts only when the paired difference of
its per-case measure (``latency_ms`` for latency_pNN_ms) is significant — primary test, Holm-corrected across the
rules that ask for it. A relative rule or zero tolerance on a measure a model judged (``measures.judged_by``:
faithfulness, context relevance, the LLM and combined judges) is broken when the two runs name different judges:
the change would be the judges' as much as the system's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evaluations.core import yamltext
from evaluations.core.errors import EvaluationsError
from evaluations.datasets.rows import read_utf8
from evaluations.results import measures
from evaluations.experiments.compare import compare_pair, check_comparable, regressions
from evaluations.results.rundata import RunData, label_runs
from evaluations.review.corrected import PREFIX, corrected_value

MAX_LISTED_CASES = 10


class Rule(BaseModel):
    """One rule on a run-level metric; at least one of min, max, max_drop, max_rise."""

    model_config = ConfigDict(extra="forbid")
    metric: str
    min: float | None = Field(default=None, allow_inf_nan=False)
    max: float | None = Field(default=None, allow_inf_nan=False)
    max_drop: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    max_rise: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    only_if_significant: bool = False

    @field_validator("min", "max", "max_drop", "max_rise", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        if isinstance(value, bool):  # "min: true" would be read as 1
            raise ValueError("a bound is a number, not true/false")
        return value

    @model_validator(mode="after")
    def _has_a_bound(self) -> Rule:
        if all(v is None for v in (self.min, self.max, self.max_drop, self.max_rise)):
            raise ValueError("a rule needs at least one of min, max, max_drop, max_rise")
        return self

    @field_validator("metric")
    @classmethod
    def _own_name(cls, metric: str) -> str:
        return measures.canonical(metric)

    @property
    def relative(self) -> bool:
        return self.max_drop is not None or self.max_rise is not None


class Rules(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: list[Rule] = Field(default_factory=list)
    zero_tolerance: list[str] = Field(default_factory=list)

    @field_validator("zero_tolerance")
    @classmethod
    def _own_names(cls, metrics: list[str]) -> list[str]:
        return [measures.canonical(m) for m in metrics]

    @model_validator(mode="after")
    def _checks_something(self) -> Rules:
        if not self.rules and not self.zero_tolerance:  # a gate with nothing to check would always pass
            raise ValueError("no rules and no zero_tolerance metrics: the gate would check nothing")
        return self


def parse_rules(data: Any, where: str = "rules") -> Rules:
    """Validate a rules mapping; EvaluationsError naming each unknown key or bad value."""
    if not isinstance(data, dict):
        raise EvaluationsError("the rules file must be a mapping with 'rules' and/or 'zero_tolerance'", where=where,
                               fix="see examples/gate.yaml")
    try:
        return Rules.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
            if err["type"] == "extra_forbidden":
                parent = Rule if len(err["loc"]) == 3 else Rules
                lines.append(f"unknown key {err['loc'][-1]!r} at {loc} (allowed: {', '.join(parent.model_fields)})")
            else:
                got = f" (got {err.get('input')!r})" if loc else ""
                lines.append(f"{loc or 'the file'}: {err['msg'].removeprefix('Value error, ')}{got}")
        raise EvaluationsError("invalid gate rules:\n  - " + "\n  - ".join(lines), where=where,
                               fix="see examples/gate.yaml for every kind of rule") from None


def load_rules(path: str | Path) -> Rules:
    """The rules of a YAML file. Checked: the file exists, is UTF-8 text (``read_utf8``), is valid YAML, and its
    rules are valid (``parse_rules``)."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationsError("rules file not found", where=str(path), fix="give a YAML file like examples/gate.yaml")
    try:
        data = yamltext.load(read_utf8(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise EvaluationsError(f"not valid YAML: {getattr(exc, 'problem', exc)}",
                               where=f"{path}:{mark.line + 1}" if mark else str(path), fix="fix the YAML") from None
    return parse_rules(data, where=str(path))


def _describe(rule: Rule) -> str:
    parts = []
    if rule.min is not None:
        parts.append(f">= {rule.min:g}")
    if rule.max is not None:
        parts.append(f"<= {rule.max:g}")
    if rule.max_drop is not None:
        parts.append(f"drops at most {rule.max_drop:.0%} vs baseline")
    if rule.max_rise is not None:
        parts.append(f"rises at most {rule.max_rise:.0%} vs baseline")
    return f"{rule.metric} " + ", ".join(parts) + (" (if significant)" if rule.only_if_significant else "")


def _check_rule(rule: Rule, run: RunData, base: RunData | None, shared: set[str] | None,
                significance: dict[str, dict[str, Any]]) -> dict[str, Any]:
    value = corrected_value(rule.metric, run) if rule.metric.startswith(PREFIX) else measures.run_value(rule.metric, run)
    problems = []
    if rule.min is not None and value < rule.min:
        problems.append(f"{value:.4g} < min {rule.min:g}")
    if rule.max is not None and value > rule.max:
        problems.append(f"{value:.4g} > max {rule.max:g}")
    check: dict[str, Any] = {"rule": rule.model_dump(exclude_none=True), "text": _describe(rule), "metric": rule.metric,
                             "value": value}
    if (applies := _applies(rule.metric, run)) is not None:
        check["applies"] = applies
    if rule.relative:
        # paired: the cases both runs have a value of (a case whose judge failed, or that a reference-free score
        # does not apply to, in one run would otherwise count in one mean only)
        measure = measures.aggregate_parts(rule.metric)[0]
        have = [set(shared or ()) & set(measures.per_case(measure, r)) for r in (run, base)]
        paired = have[0] & have[1]
        now, then = measures.run_value(rule.metric, run, paired), measures.run_value(rule.metric, base, paired)
        if now is None or then is None:
            check["problems"] = problems + [
                f"no case has a value in both runs (this run {len(have[0])}, the baseline {len(have[1])} of the "
                f"{len(shared or ())} shared cases): the change cannot be measured"]
            check["holds"] = False
            return check
        change = (now - then) / abs(then) if then else (0.0 if now == then else float("inf") * (now - then))
        check.update(value_shared=now, baseline=then, change=change, paired_cases=len(paired),
                     shared_cases=len(shared or ()))
        relative_problems = []
        if rule.max_drop is not None and now < then * (1 - rule.max_drop) - 1e-12:
            relative_problems.append(f"{now:.4g} vs baseline {then:.4g}: {change:+.1%}, more than -{rule.max_drop:.0%}")
        if rule.max_rise is not None and now > then * (1 + rule.max_rise) + 1e-12:
            relative_problems.append(f"{now:.4g} vs baseline {then:.4g}: {change:+.1%}, more than +{rule.max_rise:.0%}")
        if relative_problems and rule.only_if_significant:
            sig = significance.get(measures.aggregate_parts(rule.metric)[0])
            if sig is None:  # no case has a value in both runs: nothing to test, the rule applies as written
                check["note"] = "no paired per-case values to test significance: the change counts as it is"
                relative_problems = [f"{p} (significance not testable: no paired values)" for p in relative_problems]
            elif not sig["significant"]:
                check["p_holm"] = sig["p_holm"]
                check["note"] = (f"not significant (p_holm {sig['p_holm']:.3g}): ignored: "
                                 + "; ".join(relative_problems))
                relative_problems = []
            else:
                check["p_holm"] = sig["p_holm"]
                relative_problems = [f"{p} (significant: {sig['metric']} p_holm {sig['p_holm']:.3g})"
                                     for p in relative_problems]
        problems += relative_problems
    check["holds"] = not problems
    check["problems"] = problems
    return check


def _applies(metric: str, run: RunData) -> dict[str, Any] | None:
    """A reference-free score's mean is over the cases it applies to: how many of the cases it could apply to had
    a value (``n`` of ``cases``), did not apply, or failed; None for other metrics."""
    from evaluations.results.reference_free import METRICS, score_summary

    name = measures.canonical(measures.aggregate_parts(metric)[0])
    if name not in METRICS:
        return None
    section = (run.summary.model_extra or {}).get("reference_free") if run.summary is not None else None
    written = ((section or {}).get("metrics") or {}).get(name) if isinstance(section, dict) else None
    # summary.json has the counts (results.reference_free); only a summary written without them is recounted
    entry = written if isinstance(written, dict) and {"n", "not_applicable", "failed"} <= set(written) \
        else score_summary(run, name)
    return {"n": entry["n"], "cases": entry["n"] + entry["not_applicable"] + entry["failed"],
            "not_applicable": entry["not_applicable"], "failed": entry["failed"]}


def _check_zero_tolerance(metric: str, run: RunData, base: RunData, shared: set[str]) -> dict[str, Any]:
    family = measures.family_of(metric, base)
    verdict = family.verdict(metric, base) if family.higher_is_better else None
    if verdict is None:
        raise EvaluationsError(f"zero_tolerance metric {metric!r} is not a pass/fail verdict", where="zero_tolerance",
                               fix="use hit@k, a judge with a true/false verdict (e.g. offline_correct) or a "
                                   "reference-free score (faithfulness, answer_relevance, context_relevance)")
    rows = regressions(base, run, [metric], shared)
    cases = [r["case"] for r in rows]
    more = len(cases) - MAX_LISTED_CASES
    listed = ", ".join(r["case"] + (f" (now {r['now']})" if r.get("now") else "") for r in rows[:MAX_LISTED_CASES]) \
        + (f" … (+{more})" if more > 0 else "")
    return {"rule": {"zero_tolerance": metric}, "text": f"{metric}: no case passing in the baseline fails "
                                                        f"({verdict.rule})",
            "metric": metric, "holds": not cases, "regressed_cases": cases,
            "problems": [f"{len(cases)} case(s) passed in the baseline and fail now: {listed}"] if cases else []}


def run_gate(run: RunData, rules: Rules, baseline: RunData | None = None) -> dict[str, Any]:
    """Check ``rules`` on ``run`` (against ``baseline`` for relative rules and zero tolerance).

    Returns ``{"passed", "run", "baseline", "checks": [{rule, text, metric, value, holds, problems, …}],
    "broken": [text, …]}``; EvaluationsError (exit 2) for an unknown metric or a missing baseline.
    """
    needs_baseline = [r.metric for r in rules.rules if r.relative] + list(rules.zero_tolerance)
    if needs_baseline and baseline is None:
        raise EvaluationsError(f"rules on {', '.join(needs_baseline)} compare with a baseline, but none was given",
                               where="--baseline", fix="pass --baseline RUN_DIR or --baseline last")
    runs = [run] + ([baseline] if baseline is not None else [])
    label_runs(runs)
    for i, rule in enumerate(rules.rules):
        if rule.metric.startswith(PREFIX):
            if rule.relative:
                raise EvaluationsError(f"{rule.metric}: a corrected figure takes min/max only",
                                       where=f"rules[{i}]", fix="use min (or max) on corrected.<measure>.lo/.hi")
            corrected_value(rule.metric, run, where=f"rules[{i}].metric")
            continue
        measures.check_metric(rule.metric, runs if rule.relative else [run], where=f"rules[{i}].metric")
    for metric in rules.zero_tolerance:
        measures.check_metric(metric, runs, where="zero_tolerance")
    shared = None
    significance: dict[str, dict[str, Any]] = {}
    if baseline is not None:
        shared = set(run.cases) & set(baseline.cases)
        check_comparable(baseline, run, shared)
        wanted = sorted({measures.aggregate_parts(r.metric)[0] for r in rules.rules if r.only_if_significant})
        significance = {row["metric"]: row for row in compare_pair(baseline, run, wanted, shared)}
    checks = [_check_rule(rule, run, baseline, shared, significance) for rule in rules.rules]
    checks += [_check_zero_tolerance(m, run, baseline, shared) for m in rules.zero_tolerance]  # type: ignore[arg-type]
    against_baseline = [rule.relative for rule in rules.rules] + [True] * len(rules.zero_tolerance)
    for check, compared in zip(checks, against_baseline):  # a change across two judges is not the system's
        pair = measures.judges_differ(measures.aggregate_parts(check["metric"])[0], baseline, run) \
            if baseline is not None and compared else None
        if pair is not None:
            check["judges"] = {"baseline": pair[0], "run": pair[1]}
            check["problems"] = [*check["problems"], f"judged by {pair[1]} in this run but by {pair[0]} in the "
                                 "baseline: the change is the judges' as much as the system's (judge both with one "
                                 "judge, or gate on an absolute min/max)"]
            check["holds"] = False
    broken = [f"{c['text']}: {'; '.join(c['problems'])}" for c in checks if not c["holds"]]
    return {"passed": not broken, "run": str(run.path), "baseline": str(baseline.path) if baseline else None,
            "checks": checks, "broken": broken}


def render(result: dict[str, Any]) -> str:
    """The gate's verdict for people: one line per rule, ✓ held / ✗ broken."""
    head = "PASS" if result["passed"] else f"FAIL: {len(result['broken'])} of {len(result['checks'])} rules broken"
    lines = [f"gate {head}", f"  run      {result['run']}"]
    if result["baseline"]:
        lines.append(f"  baseline {result['baseline']}")
    for check in result["checks"]:
        mark = "✓" if check["holds"] else "✗"
        detail = "; ".join(check["problems"]) if check["problems"] else _held_detail(check)
        lines.append(f"  {mark} {check['text']}: {detail}{_coverage(check)}")
    return "\n".join(lines)


def _coverage(check: dict[str, Any]) -> str:
    """`` (over 6 of 9 cases: 3 not applicable)`` for a reference-free score that did not apply to every case."""
    applies = check.get("applies")
    if not applies or applies["n"] == applies["cases"]:
        return ""
    left = [f"{applies[k]} {k.replace('_', ' ')}" for k in ("not_applicable", "failed") if applies[k]]
    return f" (over {applies['n']} of {applies['cases']} cases: {', '.join(left)})"


def _held_detail(check: dict[str, Any]) -> str:
    if "regressed_cases" in check:
        return "no regression"
    text = f"{check['value']:.4g}"
    if "baseline" in check:
        over = ("shared cases" if check["paired_cases"] == check["shared_cases"] else
                f"{check['paired_cases']} of {check['shared_cases']} shared cases with a value in both")
        text += f" ({over} {check['value_shared']:.4g} vs baseline {check['baseline']:.4g}, {check['change']:+.1%})"
    if "note" in check:
        text += f"; {check['note']}"
    return text
