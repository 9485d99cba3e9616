"""The reference-free judges on multi-hop questions: ``datasets/labels/multihop_faithfulness.jsonl``.

    python benchmarks/faithfulness_multihop.py [--labels FILE]

50 questions in HotpotQA's style about fictional entities, each with two passages (``MULTIHOP.md``): 25 bridge
questions (the first passage links the question's entity to another, the second gives the asked fact about it), 15
comparisons ("Which ..., A or B?") and 10 yes/no questions, with 4 answers each (supported short and sentence,
unsupported short and sentence; the unsupported ones are built from the passages' own names and numbers). Authored
and labelled by reading, under ``FAITHFULNESS_RUBRIC.md``; no judge was fitted on them.

For every row: the ``faithfulness`` verdict (the answer is supported when every claim is; not applicable counts
as an error) with the two passages as a list, and again with them joined into one passage (support then has to be
found inside one passage's sentence windows), and ``answer_relevance`` (the shipped judge: its rules, then the
naming screen) with the passages as context (every answer of the file addresses its question, right or wrong, so
its acceptance rate is what it measures here). Accuracy per question type, answer form and label, with Wilson 95%
intervals. Per question, also ``context_relevance`` of each of its two passages: both are needed (one step each;
the rubric's "a necessary part of the answer"), so the share judged relevant is its recall on multi-hop passages,
per question type and passage (first, second).
A single-hop control (``single_hop``): reading two passages together must not make faithfulness accept wrong
answers on ordinary questions. 40 SQuAD 2.0 questions (seeded), each with its own paragraph and two other paragraphs
of the same article in random order; the gold answer (supported) and another question's gold of a co-retrieved
paragraph, absent from the question's own (unsupported: a passage's value in another relation, the distractor a
bridge would add). Verdicts go through the user's verdict store (a re-run makes no model call). Writes
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

from evaluations.judging.validation.agreement import wilson  # noqa: E402
from evaluations.judging.grounded.context_relevance import judge_context_relevance  # noqa: E402
from evaluations.judging.correctness.embedded import VerdictCache  # noqa: E402
from evaluations.judging.grounded.faithfulness import judge_faithfulness  # noqa: E402
from evaluations.judging.basics.passages import Passage  # noqa: E402
from evaluations.judging.grounded.answer_relevance import judge_answer_relevance  # noqa: E402
from evaluations.judging.grounded.naming import Naming  # noqa: E402


def rate(hits: int, n: int) -> dict:
    return {"n": n, "accuracy": round(hits / n, 4) if n else None, "ci95": [round(x, 4) for x in wilson(hits, n)]}


def single_hop(cache: VerdictCache, n: int = 40, seed: int = 0) -> dict:
    """The single-hop control (module docstring): supported accepted and unsupported rejected, with Wilson CIs."""
    import gzip
    import random

    rows = [json.loads(line) for line in gzip.open(ROOT.parent / "shared/data/squad2_dev_cs224n/questions.jsonl.gz",
                                                   "rt", encoding="utf-8")]
    paragraphs = {r["paragraph_id"]: (r["title"], r["context"]) for r in rows}
    answered: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        if r["answers"]["text"]:
            answered[r["paragraph_id"]].append(r)
    by_title: dict[str, list[str]] = collections.defaultdict(list)
    for pid, (title, _) in paragraphs.items():
        by_title[title].append(pid)
    rng = random.Random(seed)
    pids = [p for p in paragraphs if answered[p] and len(by_title[paragraphs[p][0]]) >= 3]
    rng.shuffle(pids)
    hits, calls, items = collections.Counter(), 0, 0
    for pid in pids:
        question = rng.choice(answered[pid])
        others = [p for p in by_title[paragraphs[pid][0]] if p != pid]
        rng.shuffle(others)
        wrong = [o["answers"]["text"][0] for p in others[:2] for o in answered[p]
                 if o["answers"]["text"][0].lower() not in paragraphs[pid][1].lower()
                 and len(o["answers"]["text"][0].split()) <= 4]
        if not wrong:
            continue
        context = [pid, *others[:2]]
        rng.shuffle(context)
        passages = [Passage(id=p, text=paragraphs[p][1]) for p in context]
        for answer, label in ((question["answers"]["text"][0], True), (rng.choice(wrong), False)):
            verdict = judge_faithfulness(question["question"], answer, passages, cache=cache)
            calls += verdict.model_calls
            hits[label] += verdict.applicable and (verdict.score == 1.0) == label
        items += 1
        if items >= n:
            break
    return {"questions": items, "supported_accepted": rate(hits[True], items),
            "unsupported_rejected": rate(hits[False], items), "model_calls": calls}


def _groups(row: dict) -> tuple[str, ...]:
    """The groups a row counts in: all, its question type, type/form, type/form/label."""
    return ("all", row["type"], f"{row['type']}/{row['form']}", f"{row['type']}/{row['form']}/{row['label']}")


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
        groups = _groups(row)
        counts.update(groups)
        for name, passages in forms.items():
            verdict = judge_faithfulness(row["query"], row["generated_answer"], passages, cache=cache)
            calls += verdict.model_calls
            supported = verdict.applicable and verdict.score == 1.0
            not_applicable[name] += not verdict.applicable
            if verdict.applicable and supported == row["label"]:  # not applicable: an error
                hits[name].update(groups)
        print(f"{i}/{len(rows)} {row['id']}", file=sys.stderr)
    # answer relevance, the shipped judge (its rules, then the naming screen), every answer in one batched pass
    relevance = judge_answer_relevance([(r["query"], r["generated_answer"], "\n\n".join(r["context"]), True)
                                        for r in rows], Naming(cache=cache))
    for row, said in zip(rows, relevance):
        groups = _groups(row)
        relevant.update(g for g in groups if said.verdict)
        if not said.verdict:
            rejected.append({"id": row["id"], "answer": row["generated_answer"], "reason": said.reason})
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
        "single_hop": single_hop(cache),
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
    print("single hop", {k: v["accuracy"] for k, v in result["single_hop"].items() if isinstance(v, dict)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
