"""Write an answer split of judge-check's templated controls (``judging.validation.controls.build_controls``) to
questions nothing else here has used: design material for answer relevance's naming screen on long technical
answers (TechQA's and WixQA's golds run to several sentences; the writers' splits have few of them).

    python scripts/control_split.py --name tech [--skip 60] [--questions 40] [--seed 28]

For each file (``FILES``) the answerable questions with gold after judge-check's first ``--skip`` (those are what
``benchmarks/results/answer_relevance_judge_check.json`` reads) and not used by any answer split of
``datasets/relevance`` (matched by question text), the first ``--questions`` of them, get the controls of ``KINDS``
(those not worded by a template). Each row: ``id``, ``question``, ``context`` (the question's passage, as a
one-item list), ``kind`` (the control's category), ``answer``, ``construction`` (what the control is built to be:
not a label; another question's gold can be of the asked kind, which the rubric calls relevant), ``writer``
(``controls``), ``source`` (file:question id), ``gold``. The labels are read blind under ``RUBRIC.md`` into
``labels_<name>.jsonl`` (``LABELS.md``): ``--sheets K`` also writes K shuffled label sheets
(``label_sheet_<k>.jsonl``: blind id, question, answer) and the key mapping blind ids back (``sheet_key.json``) to
``--sheet-dir``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "datasets" / "relevance"
DATA = ROOT.parent / "shared" / "data"
FILES = ("techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz",
         "wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz")
#: the controls not built from a template of wording (judge-check's "The answer is …", "Regarding …, the document
#: has the details." are left out: a probe fitted on them would learn the templates judge-check then reads)
KINDS = ("gold_bare", "gold_detail", "gold_after_question", "other_gold", "off_topic_sentence")


def _used_questions(name: str) -> set[str]:
    """The questions of every answer split but ``name``'s own (a rewrite reads the same questions)."""
    used = set()
    for path in OUT.glob("answers_*.jsonl.gz"):
        if path.name == f"answers_{name}.jsonl.gz":
            continue
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            used |= {json.loads(line)["question"].strip() for line in fh if line.strip()}
    return used


def main() -> None:
    from evaluations.judging.labels.read import read_questions
    from evaluations.judging.validation.controls import build_controls

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--skip", type=int, default=60, help="judge-check's first answerable questions of each file")
    parser.add_argument("--questions", type=int, default=40, help="questions per file")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--sheets", type=int, default=0)
    parser.add_argument("--sheet-dir", type=Path, default=Path("/tmp/control_split"))
    args = parser.parse_args()
    used = _used_questions(args.name)
    rows = []
    for file in FILES:
        (_, items), = read_questions([DATA / file]).files
        answerable = [i for i in items if i.answerable and i.references]
        fresh = [i for i in answerable[args.skip:] if i.question.strip() not in used][:args.questions]
        for control in build_controls(fresh, seed=args.seed):
            if control.category not in KINDS:
                continue
            a = control.answer
            key = a.group.rsplit(":", 1)[-1] if a.group else a.question[:40]
            rows.append({"id": f"{Path(file).name.split('.')[0]}:{key}:{control.category}", "question": a.question,
                         "context": [a.context] if a.context else [], "kind": control.category, "answer": a.answer,
                         "construction": a.label, "writer": "controls", "source": f"{Path(file).name}:{key}",
                         "gold": list(a.references)})
        print(f"{file}: {len(fresh)} questions", file=sys.stderr)
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise SystemExit("two controls share an id")
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    with gzip.GzipFile(OUT / f"answers_{args.name}.jsonl.gz", "wb", compresslevel=9, mtime=0) as fh:
        fh.write(body)
    print(f"{args.name}: {len(rows)} answers")
    if args.sheets:
        order = list(range(len(rows)))
        random.Random(7).shuffle(order)
        args.sheet_dir.mkdir(parents=True, exist_ok=True)
        key = {}
        for k in range(args.sheets):
            part = order[k::args.sheets]
            with (args.sheet_dir / f"label_sheet_{k}.jsonl").open("w") as fh:
                for n in part:
                    blind = f"b{n * 7919 % 100003:05d}"
                    key[blind] = rows[n]["id"]
                    fh.write(json.dumps({"blind": blind, "question": rows[n]["question"],
                                         "answer": rows[n]["answer"]}, ensure_ascii=False) + "\n")
        (args.sheet_dir / "sheet_key.json").write_text(json.dumps(key))


if __name__ == "__main__":
    main()
