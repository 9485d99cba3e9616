"""Answers to label for faithfulness (is every claim supported by the given context?): ``datasets/labels/faithfulness.jsonl``.

Rows (seeded, ``numpy.random.default_rng(--seed)``; the labels are added by reading, see
``datasets/labels/FAITHFULNESS_RUBRIC.md``):

1. Weak-model answers of ``datasets/labels/weak_answers.jsonl`` (SmolLM2-135M, Qwen2.5-Coder-0.5B) judged against the
   passage the model was given: ``gold`` its own passage, ``wrong`` the passage of another question (recovered by
   re-running the seeded draw of ``scripts/weak_answers.py``, no model is called), ``none`` (answered from memory)
   the question's own passage, what a retriever would have returned. EVOUNA ``none`` rows (no own passage) are
   skipped. A few failed / empty answers are kept as not-applicable rows.
2. Edited answers written by this script from passages of SQuAD 2.0, CLAPNQ, RepliQA and TechQA: the sentence of the
   passage that holds the gold answer (``copy``), the bare gold answer of a SQuAD question (``short``), or one of
   them with one named entity, number or year swapped for another of the same type taken from the same passage
   where possible (``swap_entity``, ``swap_number``, ``swap_date``); in the second batch some copies are replaced by
   paraphrases written by hand (``paraphrase``, ``scripts/faithfulness_paraphrases.json``).
3. For a quarter of the rows the context is a list of 2-3 passages: the one above plus passages of other questions
   of the same dataset, in a seeded order.

Every passage is cut to ``--context-chars`` (the cut the weak models saw); ``judging.labels.faith_labels`` cuts the same way.
Rows hold references into ``--shared`` (default ``../shared/data``), never the passages' text:
``{"id", "question_ref", "passage_refs", "context_chars", "origin", "system", "answer" | "answer_from" (+ "edit"),
"answer_sha256", "label", "label_note", "weak_ref"}``. Answers we wrote (weak models', paraphrases) are stored as
``answer``; answers taken from a passage (``copy``, ``short``, ``swap_*``) as a recipe the loader applies
(``judging.labels.faith_labels.AnswerRecipe``: a slice of the question's own passage, or its gold answer, plus the swap's
``{"old", "new"}``), checked here to rebuild the answer exactly. ``--labels FILE`` keeps the label and label_note of
rows of FILE with the same id and answer (same ``answer_sha256``). ``--sheets DIR`` writes reading sheets (question,
every passage as the judge sees it, answer) for the labeller; they are not part of the project. ``--convert FILE``
(one-off) rewrites FILE's stored copies in the recipe form, keeping its labels and asserting that every answer is
rebuilt unchanged.

    python scripts/faithfulness_answers.py [--out datasets/labels/faithfulness.jsonl] [--labels FILE] [--sheets /tmp/h11_sheets]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from evaluations.judging.labels.faith_labels import (AnswerEdit, AnswerRecipe, GoldRef, PassageSlice,  # noqa: E402
                                              answer_sha256, load_faithfulness_labels)
from evaluations.judging.labels.weak_labels import Question, read_questions  # noqa: E402
from weak_answers import draws, sample  # noqa: E402

FILES = {
    "squad2": "squad2_dev_cs224n/questions.jsonl.gz",
    "clapnq": "clapnq_dev/clapnq_dev_answerable.jsonl.gz",
    "repliqa": "repliqa_samples/repliqa_sample20.jsonl.gz",
    "techqa": "techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz",
}
#: the batches, each drawn with its own seed (--seed + index) and appended, so that a later batch leaves the ids
#: and answers of the earlier ones unchanged: weak-model rows per context condition ("na": failed/empty answers
#: kept as not applicable; later batches skip weak rows already used) and edited rows per dataset
BATCHES = (
    {"weak": {"gold": 120, "wrong": 55, "none": 55, "na": 10},
     "edits": {"squad2": 40, "clapnq": 25, "repliqa": 10, "techqa": 15}},
    {"weak": {"gold": 25, "wrong": 10, "none": 0, "na": 0},
     "edits": {"squad2": 15, "clapnq": 12, "techqa": 8}},
)
MULTI_SHARE = 0.25
#: origins whose answer is taken from the shared data: stored as a recipe (AnswerRecipe), not as text
RECIPE_ORIGINS = ("copy", "short", "swap_entity", "swap_number", "swap_date")
#: "dataset:key" -> a paraphrase written by hand of that question's copied sentence (second batch)
PARAPHRASES = {k: v for k, v in json.loads((ROOT / "scripts" / "faithfulness_paraphrases.json").read_text(
    encoding="utf-8")).items() if not k.startswith("_")}

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
_YEAR = re.compile(r"^(1[0-9]{3}|20[0-9]{2})$")
_ENTITY = re.compile(r"(?<=[a-z,;:] )(?:[A-Z][a-z]+|[A-Z]{2,})(?:\s+(?:of\s+|de\s+|the\s+)?(?:[A-Z][a-z]+|[A-Z]{2,}))*")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if len(s.strip()) > 20]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


def gold_sentence(q: Question, cut: int) -> str | None:
    """The sentence of the passage's first ``cut`` characters that holds (SQuAD) or best overlaps the gold answer."""
    candidates = sentences(q.passage[:cut])[:-1] or sentences(q.passage[:cut])  # the last one may be cut mid-way
    if not candidates or not q.references:
        return None
    gold = q.references[0]
    if q.dataset == "squad2":
        hits = [s for s in candidates if gold in s]
        return hits[0] if hits else None
    scores = [len(_words(s) & _words(gold)) / (1 + len(_words(s)) ** 0.5) for s in candidates]
    best = int(np.argmax(scores))
    return candidates[best] if len(_words(candidates[best]) & _words(gold)) >= 3 and len(candidates[best]) < 400 else None


def _kind(span: str) -> str:
    if _YEAR.match(span):
        return "swap_date"
    if _NUMBER.fullmatch(span):
        return "swap_number"
    return "swap_entity"


def _spans(text: str, kind: str) -> list[str]:
    if kind == "swap_entity":
        return list(dict.fromkeys(m.group(0) for m in _ENTITY.finditer(text)))
    return list(dict.fromkeys(n for n in _NUMBER.findall(text) if (_kind(n) == kind)))


def swap(text: str, passage: str, other: str, rng: np.random.Generator,
         target: str | None = None) -> tuple[str, str, AnswerEdit] | None:
    """``text`` with one entity / number / year (``target`` if given) replaced by another of the same type from
    ``passage`` (else from ``other``, else a shifted number): (edited text, origin, the edit) or None when nothing
    can be swapped."""
    numbers = [s for k in ("swap_date", "swap_number") for s in _spans(text, k)]
    options = [target] if target else (numbers if numbers and rng.random() < 0.7 else numbers + _spans(text, "swap_entity"))
    if not options:
        return None
    old = options[int(rng.integers(len(options)))]
    kind = _kind(old)
    for source in (passage, other):
        pool = [s for s in _spans(source, kind) if s not in text and old not in s and s not in old]
        if pool:
            new = pool[int(rng.integers(len(pool)))]
            return text.replace(old, new, 1), kind, AnswerEdit(old=old, new=new)
    if kind == "swap_entity":
        return None
    value = float(old.replace(",", ""))
    shifted = value + int(rng.integers(2, 30)) if kind == "swap_date" else value * int(rng.integers(2, 5))
    new = str(int(shifted)) if shifted == int(shifted) else f"{shifted:g}"
    return text.replace(old, new, 1), kind, AnswerEdit(old=old, new=new)


def weak_rows(shared: Path, rng: np.random.Generator, weak_file: Path, counts: dict[str, int],
              used: set[str]) -> list[dict]:
    questions_rng = np.random.default_rng(0)  # the seed scripts/weak_answers.py used
    jobs = draws(sample(shared, questions_rng), questions_rng)
    weak = [json.loads(line) for line in weak_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(jobs) == len(weak), "weak_answers.jsonl no longer matches the seeded draw of scripts/weak_answers.py"
    pools: dict[str, list[dict]] = {c: [] for c in counts}
    for (q, model, condition, given), row in zip(jobs, weak):
        assert (q.ref(), model, condition) == (row["ref"], row["model"], row["context"]), row["id"]
        passage_q = given if condition != "none" else (q if q.passage else None)
        if passage_q is None or row["id"] in used:
            continue  # EVOUNA / unanswerable TechQA from memory: no own passage to judge against
        out = {"question_ref": q.ref(), "passage_q": passage_q, "origin": f"weak:{condition}", "system": model,
               "answer": row["answer"], "weak_ref": row["id"]}
        pools["na" if row["qa_status"] == "failed" or not row["answer"].strip() else condition].append(out)
    picked = []
    for condition, n in counts.items():
        pool = pools[condition]
        picked.extend(pool[i] for i in sorted(rng.permutation(len(pool))[:n]))
    return picked


def edit_rows(shared: Path, rng: np.random.Generator, cut: int, counts: dict[str, int], used: set[str]) -> list[dict]:
    out = []
    for dataset, n in counts.items():
        rows = [q for q in read_questions(shared, dataset, FILES[dataset]) if q.answerable and q.passage]
        fresh = [q for q in rows if q.key not in used] or rows
        seen_passages: set[str] = set()
        for i in rng.permutation(len(fresh)):
            q = fresh[int(i)]
            sentence = gold_sentence(q, cut)
            if sentence is None or q.passage in seen_passages:
                continue
            other = fresh[int(rng.integers(len(fresh)))].passage[:cut]
            bare = dataset == "squad2" and len(q.references[0].split()) <= 6 and rng.random() < 0.4
            answer, origin = (q.references[0], "short") if bare else (sentence, "copy")
            source, edit = answer, None
            if rng.random() < 0.5:  # edited half; the label still comes from reading
                edited = swap(answer, q.passage[:cut], other, rng, target=q.references[0] if dataset == "squad2" else None)
                if edited is not None:
                    answer, origin, edit = edited
            seen_passages.add(q.passage)
            out.append({"question_ref": q.ref(), "passage_q": q, "origin": origin, "system": "edit", "answer": answer,
                        "weak_ref": None, "source": source, "edit": edit})
            if sum(r["question_ref"]["dataset"] == dataset for r in out) >= n:
                break
    return out


def add_distractors(rows: list[dict], shared: Path, rng: np.random.Generator) -> None:
    """A seeded quarter of the rows gets 1-2 passages of other questions of the same dataset (SQuAD for EVOUNA)."""
    for row in rows:
        own: Question = row["passage_q"]
        row["passages"] = [own]
        if rng.random() >= MULTI_SHARE or row["answer"].strip() == "":
            continue
        dataset = own.dataset
        pool = [q for q in read_questions(shared, dataset, own.file) if q.passage and q.passage != own.passage]
        extra = [pool[int(i)] for i in rng.choice(len(pool), size=int(rng.integers(1, 3)), replace=False)]
        extra = list({q.passage: q for q in extra}.values())
        position = int(rng.integers(len(extra) + 1))
        row["passages"] = extra[:position] + [own] + extra[position:]


def build(shared: Path, seed: int, cut: int, weak_file: Path) -> list[dict]:
    rows: list[dict] = []
    for index, batch in enumerate(BATCHES):
        rng = np.random.default_rng(seed + index)
        used_weak = {r["weak_ref"] for r in rows if r["weak_ref"]}
        weak = weak_rows(shared, rng, weak_file, batch["weak"], used_weak)
        used_keys = {r["question_ref"]["key"] for r in rows + weak}
        part = weak + edit_rows(shared, rng, cut, batch["edits"], used_keys)
        for row in part:  # our hand-written paraphrases replace some copies (seeds untouched)
            key = f"{row['question_ref']['dataset']}:{row['question_ref']['key']}"
            if row["origin"] == "copy" and key in PARAPHRASES:
                row["answer"], row["origin"] = PARAPHRASES[key], "paraphrase"
        add_distractors(part, shared, rng)
        rows += [part[int(i)] for i in rng.permutation(len(part))]  # every batch of 100 mixes origins
    return [{"id": f"fa-{i + 1:04d}", "question_ref": r["question_ref"],
             "passage_refs": [q.ref() for q in r["passages"]], "context_chars": cut, "origin": r["origin"],
             "system": r["system"], "answer": r["answer"], "label": None, "label_note": "",
             "weak_ref": r["weak_ref"], "_passages": [q.passage[:cut] for q in r["passages"]],
             "_own": r["passages"].index(r["passage_q"]), "_references": r["passage_q"].references,
             "_source": r.get("source"), "_edit": r.get("edit")}
            for i, r in enumerate(rows)]


def recipe(row: dict) -> AnswerRecipe:
    """The recipe of an edited row: its source text as a slice of its own passage (whitespace runs may differ), else
    the gold answer it is, plus the swap; asserted to rebuild the row's answer exactly."""
    source, own = row["_source"], row["_own"]
    pattern = r"\s+".join(map(re.escape, source.split()))
    found = re.search(pattern, row["_passages"][own]) if pattern else None
    options = [AnswerRecipe(answer_from=PassageSlice(passage=own, start=found.start(), end=found.end()),
                            edit=row["_edit"])] if found else []
    options += [AnswerRecipe(answer_from=GoldRef(gold=i), edit=row["_edit"])
                for i, gold in enumerate(row["_references"]) if gold == source]
    fits = [r for r in options if r.apply(row["_passages"], row["_references"]) == row["answer"]]
    assert fits, f"{row['id']}: no recipe rebuilds the answer"
    return fits[0]


def stored(row: dict) -> dict:
    """The row as written: the answer as text (ours) or as a recipe (taken from the shared data), with its sha256."""
    out = {k: v for k, v in row.items() if not k.startswith("_") and k not in ("answer", "label", "label_note", "weak_ref")}
    if row["origin"] in RECIPE_ORIGINS:
        out.update(recipe(row).model_dump(exclude_none=True))
    else:
        out["answer"] = row["answer"]
    out["answer_sha256"] = answer_sha256(row["answer"])
    return {**out, "label": row["label"], "label_note": row["label_note"], "weak_ref": row["weak_ref"]}


def write(rows: list[dict], out: Path, kept: dict[str, dict]) -> None:
    """Write ``rows`` (new form), keeping the label and note of ``kept`` rows with the same id and answer."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for row in rows:
            old = kept.get(row["id"])
            old_sha = old and old.get("answer_sha256", answer_sha256(old.get("answer") or ""))
            if old and old_sha == answer_sha256(row["answer"]):
                row["label"], row["label_note"] = old["label"], old["label_note"]
            f.write(json.dumps(stored(row), ensure_ascii=False) + "\n")


def convert(path: Path, shared: Path, seed: int, cut: int, weak_file: Path) -> None:
    """One-off: rewrite ``path`` (answers stored as text) in the recipe form. The seeded rebuild gives each swap's
    source and edit; every row must rebuild its current answer, id for id, and keep its label and note."""
    current = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    answers = {r.id: r.generated_answer for r in load_faithfulness_labels(path, shared)}  # text or an earlier recipe
    rows = build(shared, seed, cut, weak_file)
    assert [r["id"] for r in rows] == [r["id"] for r in current], "the rebuild no longer matches the file's rows"
    for row, old in zip(rows, current):
        assert (row["answer"], row["origin"], row["passage_refs"]) == (answers[old["id"]], old["origin"],
                                                                        old["passage_refs"]), old["id"]
    write(rows, path, {r["id"]: {**r, "answer_sha256": answer_sha256(answers[r["id"]])} for r in current})
    resolved = load_faithfulness_labels(path, shared)  # checks every answer_sha256
    assert [(r.id, r.generated_answer) for r in resolved] == list(answers.items())
    assert [r["label"] for r in current] == [r.label for r in resolved]


def sheet_block(row: dict, question: str) -> str:
    passages = "\n".join(f"[P{i + 1}] {p}" for i, p in enumerate(row["_passages"]))
    return "\n".join([f"## {row['id']}", f"Question: {question}", passages,
                      f"ANSWER: {row['answer'] if row['answer'].strip() else '(empty)'}", ""])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--weak", type=Path, default=ROOT / "datasets" / "labels" / "weak_answers.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "datasets" / "labels" / "faithfulness.jsonl")
    parser.add_argument("--labels", type=Path, default=None, help="keep the labels of this file's rows (same id, answer)")
    parser.add_argument("--sheets", type=Path, default=None)
    parser.add_argument("--sheet-size", type=int, default=12)
    parser.add_argument("--context-chars", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--convert", type=Path, default=None, help="one-off: rewrite this file in the recipe form")
    args = parser.parse_args()
    if args.convert:
        convert(args.convert, args.shared, args.seed, args.context_chars, args.weak)
        print(f"converted {args.convert}", file=sys.stderr)
        return
    rows = build(args.shared, args.seed, args.context_chars, args.weak)
    kept = {}
    if args.labels and args.labels.is_file():
        kept = {r["id"]: r for r in map(json.loads, args.labels.read_text(encoding="utf-8").splitlines()) if r}
    files = {(r["question_ref"]["dataset"], r["question_ref"]["file"]) for r in rows}
    text_of = {json.dumps(q.ref()): q.question for d, f in files for q in read_questions(args.shared, d, f)}
    write(rows, args.out, kept)
    if args.sheets:
        args.sheets.mkdir(parents=True, exist_ok=True)
        for k in range(0, len(rows), args.sheet_size):
            part = rows[k:k + args.sheet_size]
            text = "\n".join(sheet_block(r, text_of[json.dumps(r["question_ref"])]) for r in part)
            (args.sheets / f"sheet_{k // args.sheet_size + 1:02d}.md").write_text(text, encoding="utf-8")
    print(f"wrote {len(rows)} rows to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
