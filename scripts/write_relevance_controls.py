"""Write ``datasets/relevance/answers_{design,heldout}.jsonl.gz``: answers to HotpotQA questions that a model wrote,
for validating ``answer_relevance`` on wordings nobody here chose.

    python scripts/write_relevance_controls.py [--questions 160] [--seed 2026]
    python scripts/write_relevance_controls.py --split heldout --start 150 --questions 100 --name heldout2
    python scripts/write_relevance_controls.py --split clapnq --start 200 --questions 60 --name clapnq

The questions, their gold answers and their supporting passages are the multi-hop sets' (``datasets/multihop``,
built by ``scripts/build_multihop_sets.py`` from HaluEval / HotpotQA): no rule of answer relevance was written from
them; ``--split clapnq`` takes CLAPNQ's answerable dev questions instead (Natural Questions with one Wikipedia
passage and a written answer: another source and question style). For each question the embedded Qwen2.5-Coder
models (1.5B for even rows, 0.5B for odd ones; greedy, one instruction each, listed in ``TASKS``) write:

- ``restatement``: the question turned into a statement of what it asks, without the answer;
- ``heading``: a short title for a section about the question, without the answer;
- ``refusal``: a sentence saying the answer cannot be given;
- ``gold_sentence``: one sentence that gives the gold answer to the question;
- ``off_topic``: the model's answer to *another* question of the set (drawn with the seed), given that question's
  passages: a fluent answer about something else.

Beside them, made without a model: ``echo`` (the question itself), ``gold_bare`` (HotpotQA's answer) and
``other_gold`` (another question's gold answer). Each row: ``id``, ``question``, ``context`` (the two supporting
passages), ``kind``, ``answer``, ``construction`` (true for the gold kinds, false for the others: what the model was asked
for, not a label: models often do otherwise), ``writer`` (the model, or ``data``). The labels are read by people
or agents under ``datasets/relevance/RUBRIC.md`` into ``labels_{split}.jsonl`` (``LABELS.md``). A written answer that still holds the gold
answer (a restatement that gives it away) or is empty is dropped and counted. The split follows the multi-hop sets':
design rows come from ``design.jsonl.gz``, held-out rows from ``heldout.jsonl.gz`` (report on them only).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "datasets" / "relevance"

TASKS: dict[str, str] = {
    "restatement": "Rewrite this question as one declarative sentence that says what the question asks about. Do not "
                   "answer it and do not guess the answer.\nQuestion: {question}\nSentence:",
    "heading": "Write a short title (at most eight words) for a document section about the topic of this question. "
               "Do not answer it.\nQuestion: {question}\nTitle:",
    "refusal": "Someone asked you this question and you cannot answer it. Write one sentence that says so, without "
               "answering.\nQuestion: {question}\nSentence:",
    "gold_sentence": "Write one sentence that answers the question with the given answer.\nQuestion: {question}\n"
                     "Answer: {answer}\nSentence:",
    "off_topic": "{passages}\n\nAnswer the question in one sentence using the passages.\nQuestion: {question}\n"
                 "Answer:",
}


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


CLAPNQ = ROOT.parent / "shared" / "data" / "clapnq_dev" / "clapnq_dev_answerable.jsonl.gz"


def _clapnq_sets() -> list[dict]:
    """CLAPNQ's answerable dev questions (Natural Questions with a Wikipedia passage and a written answer; see that
    folder's README) in the multi-hop sets' shape: the passage is the one needed, the first written answer the
    gold."""
    return [{"id": f"clapnq-{row['id']}", "question": row["input"], "answer": row["output"][0]["answer"],
             "passages": [{"text": p["text"], "needed": True} for p in row["passages"]]}
            for row in _read(CLAPNQ) if row.get("output") and row["output"][0].get("answer")]


def _clean(text: str) -> str:
    text = text.strip().split("\n")[0].strip().strip('"').strip()
    return re.sub(r"^(sentence|title|answer)\s*:\s*", "", text, flags=re.I)


def _holds(answer: str, gold: str) -> bool:
    gold = gold.strip().lower()
    return gold not in {"yes", "no"} and len(gold) >= 3 and gold in answer.lower()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=160, help="questions per split")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--split", choices=("design", "heldout", "clapnq"),
                        help="one split of the multi-hop sets (default both), or CLAPNQ's answerable dev questions")
    parser.add_argument("--start", type=int, default=0, help="first question of the split to use")
    parser.add_argument("--name", help="output name (answers_<name>.jsonl.gz; default the split's)")
    args = parser.parse_args()
    from evaluations.models.llamacpp import gguf_path, load_llama

    models = {name: load_llama(gguf_path(name), n_ctx=2048, n_threads=2)
              for name in ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b")}

    def write(name: str, prompt: str) -> str:
        out = models[name].create_chat_completion(messages=[{"role": "user", "content": prompt}], temperature=0.0,
                                                  max_tokens=60, seed=0)
        return _clean(out["choices"][0]["message"]["content"] or "")

    OUT.mkdir(parents=True, exist_ok=True)
    for split in (args.split,) if args.split else ("design", "heldout"):
        every = _clapnq_sets() if split == "clapnq" else _read(ROOT / "datasets" / "multihop" / f"{split}.jsonl.gz")
        sets = every[args.start:args.start + args.questions]
        rng = random.Random(args.seed)
        rows, dropped = [], {}
        for n, s in enumerate(sets):
            model = "qwen2.5-coder-1.5b" if n % 2 == 0 else "qwen2.5-coder-0.5b"
            context = [p["text"] for p in s["passages"] if p["needed"]]
            other = sets[(n + rng.randrange(1, len(sets))) % len(sets)]
            other_context = [p["text"] for p in other["passages"] if p["needed"]]
            made = {"echo": (s["question"], "data"), "gold_bare": (s["answer"], "data"),
                    "other_gold": (other["answer"], "data")}
            for kind, task in TASKS.items():
                fields = {"question": s["question"], "answer": s["answer"], "passages": ""}
                if kind == "off_topic":
                    fields = {"question": other["question"], "answer": "", "passages": "\n".join(other_context)}
                made[kind] = (write(model, task.format(**fields)), model)
            for kind, (answer, writer) in made.items():
                gold_kind = kind in ("gold_bare", "gold_sentence")
                if not answer or (not gold_kind and kind != "echo" and _holds(answer, s["answer"])):
                    dropped[kind] = dropped.get(kind, 0) + 1
                    continue
                rows.append({"id": f"{s['id']}:{kind}", "question": s["question"], "context": context, "kind": kind,
                             "answer": answer, "construction": gold_kind, "writer": writer})
            print(f"{split} {n + 1}/{len(sets)}", file=sys.stderr, flush=True)
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
        with gzip.GzipFile(OUT / f"answers_{args.name or split}.jsonl.gz", "wb", compresslevel=9, mtime=0) as fh:
            fh.write(body)
        print(f"{split}: {len(rows)} answers; dropped {dropped}")


if __name__ == "__main__":
    main()
