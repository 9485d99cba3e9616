"""Write an answer split of judge-check's templated controls (``judging.validation.controls.build_controls``) to
questions nothing else here has used: design material for answer relevance's naming screen on long technical
answers (TechQA's and WixQA's golds run to several sentences; the writers' splits have few of them).

    python scripts/control_split.py --name tech [--skip 60] [--questions 40] [--seed 28]

For each file (``FILES``) the answerable questions with gold after judge-check's first ``--skip`` (those are what
``benchmarks/results/answer_relevance_judge_check.json`` reads) and not used by any answer split of
``datasets/relevance`` (``writer_sheets.used_questions``: by source or wording), the first ``--questions`` of them,
get the controls of ``KINDS`` (those not worded by a template). Each row: ``id``, ``question``, ``context`` (the
question's passage, as a one-item list), ``kind`` (the control's category), ``answer``, ``construction`` (what the
control is built to be: not a label; another question's gold can be of the asked kind, which the rubric calls
relevant), ``writer`` (``controls``), ``source`` (file:question id), ``gold``. The labels are read blind under
``RUBRIC.md`` into ``labels_<name>.jsonl`` (``LABELS.md``); ``--sheets DIR`` also writes the two blind labelling
sheets of ``writer_sheets.write_label_sheets`` there.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
from writer_sheets import DATA, RELEVANCE as OUT, used_questions, write_label_sheets  # noqa: E402

FILES = ("techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz",
         "wixqa_expertwritten_sample/wixqa_expertwritten_sample160.jsonl.gz")
#: the controls not built from a template of wording (judge-check's "The answer is …", "Regarding …, the document
#: has the details." are left out: a probe fitted on them would learn the templates judge-check then reads)
KINDS = ("gold_bare", "gold_detail", "gold_after_question", "other_gold", "off_topic_sentence")


def main() -> None:
    from evaluations.judging.labels.read import read_questions
    from evaluations.judging.validation.controls import build_controls

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--skip", type=int, default=60, help="judge-check's first answerable questions of each file")
    parser.add_argument("--questions", type=int, default=40, help="questions per file")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--sheets", type=Path, metavar="DIR",
                        help="also write the blind labelling sheets there (writer_sheets.write_label_sheets)")
    args = parser.parse_args()
    sources, wordings = used_questions(but=args.name)
    rows = []
    for file in FILES:
        (_, items), = read_questions([DATA / file]).files
        answerable = [i for i in items if i.answerable and i.references]
        fresh = [i for i in answerable[args.skip:]
                 if i.group not in sources and i.question.strip().lower() not in wordings][:args.questions]
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
        write_label_sheets(args.sheets, rows)


if __name__ == "__main__":
    main()
