"""The sheets behind a split of answers written by other writers (``datasets/relevance/answers_writers*``).

Three steps, each a subcommand; the writing and the labelling between them are done by people or helper agents
reading the briefs (``datasets/relevance/WRITING_BRIEF.md``; ``RUBRIC.md`` with the hard cases of ``LABELS.md``):

* ``questions OUT``: picks answerable questions from seven files of ``../shared/data`` (``SOURCES``: each file,
  its short name, the answerable question it starts from and how many it takes), skipping every question an
  answer split already holds (by its ``source`` or its wording), and writes ``OUT/questions.json`` and two writing
  sheets ``OUT/write_sheet_{0,1}.json`` (the questions of each source shuffled with the source's name as seed and
  dealt alternately);
* ``blind OUT``: reads the writers' ``OUT/written_{0,1}.jsonl`` (checks ten kinds per question, valid JSON), and
  writes two labelling sheets ``OUT/label_sheet_{0,1}.jsonl`` holding only a blind row id, the question and the
  answer, all answers shuffled (seed 7) and halved, with the map back in ``OUT/label_map.json``;
* ``extracted OUT``: instead of written answers, sentences a retrieval system would answer with, taken from the
  multi-hop sets' needed passages (``EXTRACTED_KINDS``: the first sentence of the first and of the second needed
  passage, as the run without labels answers, and the first sentence of either that holds the gold when it is
  not one of those), written to
  ``OUT/rows.json`` with the two labelling sheets ``blind`` writes;
* ``merge OUT NAME``: reads the labellers' ``OUT/labels_{0,1}.jsonl`` (in their sheet's order) and writes
  ``datasets/relevance/answers_NAME.jsonl.gz`` and ``labels_NAME.jsonl``; prints labels by kind.

    python scripts/writer_sheets.py questions /tmp/w4 --first 400
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from evaluations.judging.labels.questions import load_questions  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
RELEVANCE = ROOT / "datasets" / "relevance"
#: file under ../shared/data, short name, first answerable question (0-based, file order), how many (writers4)
SOURCES = [("squad2_dev_cs224n/questions.jsonl.gz", "squad", 2600, 16),
           ("techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz", "techqa", 350, 10),
           ("clapnq_dev/clapnq_dev_answerable.jsonl.gz", "clapnq", 290, 10),
           ("repliqa_samples/repliqa3_news_questions50.jsonl.gz", "repliqa", 46, 4),
           ("wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz", "wixqa", 110, 12),
           ("evouna/NQ.jsonl.gz", "nq", 2200, 8),
           ("evouna/TQ.jsonl.gz", "tq", 1700, 8)]
KINDS = ("restatement_a", "restatement_b", "echo_wrapped", "heading", "refusal", "vague", "off_topic",
         "context_other", "gold_sentence", "gold_casual")
#: the kinds of a split of long replies (``questions --kinds long``; ``LONG_BRIEF.md``): four of 4-8 sentences that
#: give the gold answer at the start, in the middle, at the end, or as a retrieval system's cited reply; six of as
#: many sentences that never give it
LONG_KINDS = ("gold_first", "gold_middle", "gold_end", "gold_rag", "restatement_long", "refusal_long", "vague_long",
              "context_other_long", "off_topic_long", "outline")
KIND_SETS = {"short": KINDS, "long": LONG_KINDS}
#: the kinds of ``extracted``: sentences copied from a multi-hop question's needed passages
EXTRACTED_KINDS = ("first_sentence_a", "first_sentence_b", "gold_sentence")


def _kinds(out: Path) -> tuple[str, ...]:
    """The kinds of the split being made in ``out`` (``OUT/kinds.json``, written by ``questions``)."""
    path = out / "kinds.json"
    return tuple(json.loads(path.read_text())) if path.exists() else KINDS


def used_questions(but: str | None = None) -> tuple[set[str], set[str]]:
    """The sources and the wordings (stripped, lower case) of every question an answer split of
    ``datasets/relevance`` holds, but split ``but``'s own (a split written again reads the same questions)."""
    sources, wordings = set(), set()
    for path in RELEVANCE.glob("answers_*.jsonl.gz"):
        if path.name == f"answers_{but}.jsonl.gz":
            continue
        for row in map(json.loads, gzip.open(path, "rt")):
            wordings.add(row["question"].strip().lower())
            sources.add(row.get("source", ""))
    return sources, wordings


def questions(out: Path, first: int, starts: dict[str, tuple[int, int]], kinds: str = "short") -> None:
    sources, wordings = used_questions()
    picked, sheets = [], ([], [])
    number = first
    for file, short, start, count in SOURCES:
        start, count = starts.get(short, (start, count))
        items = [i for i in load_questions(DATA / file) if i.answerable][start:]
        fresh = [i for i in items if i.group not in sources and i.question.strip().lower() not in wordings][:count]
        if len(fresh) < count:
            raise SystemExit(f"{file}: only {len(fresh)} unused answerable questions from {start}")
        rows = []
        for item in fresh:
            rows.append({"qid": f"{short}-{number}", "source": item.group, "question": item.question,
                         "gold": list(item.references), "context": item.context})
            number += 1
        picked += rows
        dealt = rows[:]
        random.Random(short).shuffle(dealt)
        for k, row in enumerate(dealt):
            sheets[k % 2].append({key: row[key] for key in ("qid", "question", "gold", "context")})
    out.mkdir(parents=True, exist_ok=True)
    (out / "kinds.json").write_text(json.dumps(list(KIND_SETS[kinds])))
    (out / "questions.json").write_text(json.dumps(picked, indent=1, ensure_ascii=False))
    for k, sheet in enumerate(sheets):
        random.Random(k).shuffle(sheet)
        (out / f"write_sheet_{k}.json").write_text(json.dumps(sheet, indent=1, ensure_ascii=False))
    print(f"{len(picked)} questions; sheets of {len(sheets[0])} and {len(sheets[1])}")


def _written(out: Path, writers: tuple[str, str] = ("writer-0", "writer-1")) -> list[dict]:
    if (out / "rows.json").exists():  # ``extracted``: no writers
        return json.loads((out / "rows.json").read_text())
    by_qid = {q["qid"]: q for q in json.loads((out / "questions.json").read_text())}
    rows, kinds = [], _kinds(out)
    for k in (0, 1):
        sheet = [q["qid"] for q in json.loads((out / f"write_sheet_{k}.json").read_text())]
        got: dict[str, dict[str, str]] = collections.defaultdict(dict)
        for n, line in enumerate((out / f"written_{k}.jsonl").read_text().splitlines(), 1):
            if line.strip():
                row = json.loads(line)
                if row["qid"] not in sheet or row["kind"] not in kinds or row["kind"] in got[row["qid"]]:
                    raise SystemExit(f"written_{k}.jsonl:{n}: unexpected or repeated {row['qid']} {row['kind']}")
                got[row["qid"]][row["kind"]] = row["answer"]
        for qid in sheet:
            if set(got[qid]) != set(kinds):
                raise SystemExit(f"written_{k}.jsonl: {qid} lacks {sorted(set(kinds) - set(got[qid]))}")
            rows += [{**by_qid[qid], "kind": kind, "answer": got[qid][kind], "writer": writers[k]}
                     for kind in kinds]
    return rows


def extracted(out: Path, split: str, first: int, count: int) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from relevance_outside import copied_sentences  # what the run without labels answers with

    sets = [json.loads(line) for line in gzip.open(ROOT / "datasets" / "multihop" / f"{split}.jsonl.gz", "rt")]
    rows = []
    for s in sets[first:first + count]:
        picked = copied_sentences(s)
        if picked.get("gold_sentence") in (picked["first_sentence_a"], picked["first_sentence_b"]):
            del picked["gold_sentence"]  # a first sentence holding the gold is not asked twice
        rows += [{"qid": s["id"], "question": s["question"], "kind": kind,
                  "context": "\n\n".join(p["text"] for p in s["passages"]),
                  "answer": answer, "writer": "data", "source": f"multihop/{split}.jsonl.gz", "gold": s["answer"]}
                 for kind, answer in picked.items()]
    out.mkdir(parents=True, exist_ok=True)
    (out / "kinds.json").write_text(json.dumps(EXTRACTED_KINDS))
    (out / "rows.json").write_text(json.dumps(rows, ensure_ascii=False))
    write_label_sheets(out, rows)


def blind(out: Path) -> None:
    write_label_sheets(out, _written(out))


def write_label_sheets(out: Path, rows: list[dict]) -> None:
    """Two labelling sheets ``out/label_sheet_{0,1}.jsonl`` of ``rows`` (a blind row id, the question and the answer
    only), all rows shuffled (seed 7) and halved; ``out/label_map.json`` maps each row id back to its row's index."""
    out.mkdir(parents=True, exist_ok=True)
    order = list(range(len(rows)))
    random.Random(7).shuffle(order)
    half = (len(order) + 1) // 2
    mapping = {}
    for k, part in enumerate((order[:half], order[half:])):
        with (out / f"label_sheet_{k}.jsonl").open("w") as f:
            for n, i in enumerate(part, 1):
                row_id = f"b{k}-{n:03d}"
                mapping[row_id] = i
                f.write(json.dumps({"row": row_id, "question": rows[i]["question"], "answer": rows[i]["answer"]},
                                   ensure_ascii=False) + "\n")
    (out / "label_map.json").write_text(json.dumps(mapping))
    print(f"{len(rows)} answers; labelling sheets of {half} and {len(rows) - half}")


def merge(out: Path, name: str, writers: list[str], labellers: list[str]) -> None:
    rows = _written(out, (writers[0], writers[1]))
    mapping = json.loads((out / "label_map.json").read_text())
    labels: dict[int, dict] = {}
    for k in (0, 1):
        sheet = [json.loads(line)["row"] for line in (out / f"label_sheet_{k}.jsonl").open()]
        got = [json.loads(line) for line in (out / f"labels_{k}.jsonl").open() if line.strip()]
        if [g["row"] for g in got] != sheet or any(not isinstance(g["label"], bool) for g in got):
            raise SystemExit(f"labels_{k}.jsonl does not follow its sheet's rows, or a label is not true/false")
        for g in got:
            labels[mapping[g["row"]]] = {"label": g["label"], "reason": g.get("reason", ""), "labeller": labellers[k]}
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["qid"], rows[i]["kind"]))
    with gzip.open(RELEVANCE / f"answers_{name}.jsonl.gz", "wt") as f:
        for i in order:
            r = rows[i]
            f.write(json.dumps({"id": f"{r['qid']}:{r['kind']}", "question": r["question"],
                                "context": [r["context"]] if r["context"] else [], "kind": r["kind"],
                                "answer": r["answer"], "writer": r["writer"], "source": r["source"],
                                "gold": r["gold"]}, ensure_ascii=False) + "\n")
    with (RELEVANCE / f"labels_{name}.jsonl").open("w") as f:
        for i in order:
            f.write(json.dumps({"id": f"{rows[i]['qid']}:{rows[i]['kind']}", **labels[i]}, ensure_ascii=False) + "\n")
    counts = collections.Counter((rows[i]["kind"], labels[i]["label"]) for i in order)
    for kind in _kinds(out):
        print(f"{kind}: {counts[(kind, True)]} relevant, {counts[(kind, False)]} not")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    q = sub.add_parser("questions")
    q.add_argument("out", type=Path)
    q.add_argument("--first", type=int, default=400, help="the number of the first question id")
    q.add_argument("--from", dest="starts", default="", help="another split's questions: SHORT:START:COUNT,... "
                   "(e.g. squad:2700:16; a source not named keeps SOURCES' start and count)")
    q.add_argument("--kinds", choices=sorted(KIND_SETS), default="short",
                   help="the kinds each question gets: short (WRITING_BRIEF.md) or long replies (LONG_BRIEF.md)")
    sub.add_parser("blind").add_argument("out", type=Path)
    e = sub.add_parser("extracted")
    e.add_argument("out", type=Path)
    e.add_argument("--split", default="heldout", help="a multi-hop split of datasets/multihop")
    e.add_argument("--first", type=int, default=0)
    e.add_argument("--count", type=int, default=300)
    m = sub.add_parser("merge")
    m.add_argument("out", type=Path)
    m.add_argument("name")
    m.add_argument("--writers", nargs=2, default=["writer-0", "writer-1"])
    m.add_argument("--labellers", nargs=2, default=["labeller-0", "labeller-1"])
    args = parser.parse_args()
    if args.step == "questions":
        starts = {short: (int(start), int(count)) for short, start, count in
                  (part.split(":") for part in args.starts.split(",") if part)}
        questions(args.out, args.first, starts, args.kinds)
    elif args.step == "blind":
        blind(args.out)
    elif args.step == "extracted":
        extracted(args.out, args.split, args.first, args.count)
    else:
        merge(args.out, args.name, args.writers, args.labellers)


if __name__ == "__main__":
    main()
