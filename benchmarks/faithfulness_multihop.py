"""The reference-free judges on multi-hop questions: ``datasets/labels/multihop_faithfulness.jsonl``.

    python benchmarks/faithfulness_multihop.py [--labels FILE]

50 questions in HotpotQA's style about fictional entities, each with two passages (``MULTIHOP.md``): 25 bridge
questions (the first passage links the question's entity to another, the second gives the asked fact about it), 15
comparisons ("Which ..., A or B?") and 10 yes/no questions, with 4 answers each (supported short and sentence,
unsupported short and sentence; the unsupported ones are built from the passages' own names and numbers). Authored
and labelled by reading, under ``FAITHFULNESS_RUBRIC.md``; no judge was fitted on them.

For every row: the ``faithfulness`` verdict (the answer is supported when every claim is; not applicable counts
as an error) with the two passages as a list, and again with them joined into one passage (support then has to be
found inside one passage's sentence windows), and ``answer_relevance`` with the passages as context (every answer
of the file addresses its question, right or wrong, so its acceptance rate is what it measures here). Accuracy
per question type, answer form and label, with Wilson 95% intervals. Per question, also ``context_relevance`` of
each of its two passages: both are needed (one step each; the rubric's "a necessary part of the answer"), so the
share judged relevant is its recall on multi-hop passages, per question type and passage (first, second).
Verdicts go through the user's verdict store (a re-run makes no model call). Writes
``benchmarks/results/faithfulness_multihop.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from evaluations.judging.agreement import wilson  # noqa: E402
from evaluations.judging.context_relevance import judge_context_relevance  # noqa: E402
from evaluations.judging.embedded import VerdictCache  # noqa: E402
from evaluations.judging.faithfulness import judge_faithfulness  # noqa: E402
from evaluations.judging.passages import Passage  # noqa: E402
from evaluations.judging.relevance import answer_relevance  # noqa: E402


def rate(hits: int, n: int) -> dict:
    return {"n": n, "accuracy": round(hits / n, 4) if n else None, "ci95": [round(x, 4) for x in wilson(hits, n)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", default=str(ROOT / "datasets/labels/multihop_faithfulness.jsonl"))
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in Path(args.labels).read_text(encoding="utf-8").splitlines() if line.strip()]
    cache = VerdictCache()
    hits: dict[str, collections.Counter] = {"listed": collections.Counter(), "joined": collections.Counter()}
    counts: collections.Counter = collections.Counter()
    not_applicable = collections.Counter()
    relevant = collections.Counter()
    calls = 0
    rejected: list[dict] = []
    for i, row in enumerate(rows, 1):
        forms = {"listed": [Passage(id=f"p{j}", text=t) for j, t in enumerate(row["context"])],
                 "joined": [Passage(id="p", text=" ".join(row["context"]))]}
        groups = ("all", row["type"], f"{row['type']}/{row['form']}", f"{row['type']}/{row['form']}/{row['label']}")
        counts.update(groups)
        for name, passages in forms.items():
            verdict = judge_faithfulness(row["query"], row["generated_answer"], passages, cache=cache)
            calls += verdict.model_calls
            supported = verdict.applicable and verdict.score == 1.0
            not_applicable[name] += not verdict.applicable
            if verdict.applicable and supported == row["label"]:  # not applicable: an error
                hits[name].update(groups)
        judged = answer_relevance(row["query"], row["generated_answer"], "\n\n".join(row["context"]))
        relevant.update(g for g in groups if judged.verdict)
        if not judged.verdict:
            rejected.append({"id": row["id"], "answer": row["generated_answer"], "reason": judged.reason})
        print(f"{i}/{len(rows)} {row['id']}", file=sys.stderr)
    needed: collections.Counter = collections.Counter()
    judged: collections.Counter = collections.Counter()
    for query, row in {r["query"]: r for r in rows}.items():
        verdict = judge_context_relevance(query, [Passage(id=f"p{j}", text=t) for j, t in enumerate(row["context"])],
                                          cache=cache)
        calls += verdict.model_calls
        for chunk in verdict.chunks:
            for group in ("all", row["type"], f"{row['type']}/passage {chunk.rank}"):
                needed[group] += 1
                judged[group] += chunk.relevant
    result = {
        "labels_file": str(Path(args.labels).resolve().relative_to(ROOT)),
        "rows": len(rows),
        "faithfulness": {name: {g: rate(hits[name][g], counts[g]) for g in sorted(counts)}
                         for name in ("listed", "joined")},
        "faithfulness_not_applicable": dict(not_applicable),
        "answer_relevance_accepted": {g: rate(relevant[g], counts[g]) for g in sorted(counts)},
        "answer_relevance_rejected": rejected,
        "context_relevance_recall": {g: rate(judged[g], needed[g]) for g in sorted(needed)},
        "model_calls": calls,
        "note": "faithfulness: the answer's verdict (every claim supported) against the label; not applicable "
                "counts as an error. answer_relevance: the share of answers accepted (every answer of the file "
                "addresses its question).",
    }
    out = ROOT / "benchmarks/results/faithfulness_multihop.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("faithfulness_not_applicable", "model_calls")}, indent=2))
    for name in ("listed", "joined"):
        print(name, {g: v["accuracy"] for g, v in result["faithfulness"][name].items()})
    print("answer_relevance", {g: v["accuracy"] for g, v in result["answer_relevance_accepted"].items()})
    print("context_relevance recall", {g: v["accuracy"] for g, v in result["context_relevance_recall"].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
