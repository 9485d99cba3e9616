"""CoSQA dev (../shared/data/cosqa_dev/cosqa-dev.jsonl.gz) -> a generic dataset file + corpus for `evaluations run`.

Corpus: every row's Python function (id = its ``idx``). Queries: the rows labelled 1 ("the code answers the
query"), each query's relevant document being its own function; rows labelled 0 stay in the corpus as
distractors. Usage::

    python scripts/cosqa_to_dataset.py ../shared/data/cosqa_dev/cosqa-dev.jsonl.gz OUT_DIR
    evaluations run OUT_DIR/cosqa_queries.jsonl --corpus OUT_DIR/cosqa_corpus.jsonl --skip-qa
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path


def convert(source: Path, out: Path) -> tuple[Path, Path]:
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    out.mkdir(parents=True, exist_ok=True)
    corpus, queries = out / "cosqa_corpus.jsonl", out / "cosqa_queries.jsonl"
    corpus.write_text("".join(json.dumps({"id": r["idx"], "text": r["code"]}) + "\n" for r in rows))
    queries.write_text("".join(
        json.dumps({"id": r["idx"], "query": r["doc"], "relevant_doc_ids": [r["idx"]], "tags": ["cosqa"]}) + "\n"
        for r in rows if int(r["label"]) == 1))
    return queries, corpus


if __name__ == "__main__":
    for path in convert(Path(sys.argv[1]), Path(sys.argv[2])):
        print(f"wrote {path}")
