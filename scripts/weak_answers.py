"""Answers written by weak systems, for hand labelling: ``datasets/labels/weak_answers.jsonl``.

Questions (seeded, ``numpy.random.default_rng(0)``, from ``--shared``, default ``../shared/data``):

* RepliQA ``repliqa_samples/repliqa_sample20.jsonl.gz``: all 20 rows (2 unanswerable); passage ``document_extracted``;
* CLAPNQ dev: 30 answerable + 10 unanswerable rows; passage ``passages[0].text``;
* SQuAD 2.0 dev (CS224N half): 30 answerable + 10 unanswerable questions; passage ``context``;
* TechQA: 15 answerable + 5 unanswerable rows; passage ``contexts[0].text`` (unanswerable rows have none);
* EVOUNA NQ and TQ: 15 proper questions each; no passage.

Each question is answered by the two embedded models (SmolLM2-135M-Instruct, Qwen2.5-Coder-0.5B-Instruct) through
the tool's own QA path (``pipeline.qa_agent.answer_question``, the main job's agent and output modes, the model-call cache)
under a context condition: ``gold`` (its own passage, cut to ``--context-chars``), ``wrong`` (the passage of
another sampled question of the same dataset; EVOUNA: of a SQuAD question) or ``none`` (an empty context). Both
models answer with ``gold`` where a passage exists; each model answers one more time with ``wrong`` or ``none``
(a seeded draw per question and model). A failed answer is kept as ``""`` with ``qa_status: failed``.

Rows hold references into the shared files, never their text (``judging.labels.weak_labels`` resolves them):
``{"id", "ref": {"dataset", "file", "key"}, "answerable", "model", "context", "answer", "qa_status",
"label": null, "label_note": ""}``. ``--sheets DIR`` also writes reading sheets (question, gold, passage start,
answer) for the labellers; they are not part of the project.

    python scripts/weak_answers.py [--shared ../shared/data] [--out datasets/labels/weak_answers.jsonl] [--sheets /tmp/labels]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from evaluations.judging.labels.weak_labels import Question, read_questions  # noqa: E402

MODELS = ("smollm2-135m", "qwen2.5-coder-0.5b")
#: dataset -> (file, answerable count, unanswerable count)
PLAN = {
    "repliqa": ("repliqa_samples/repliqa_sample20.jsonl.gz", 18, 2),
    "clapnq": ("clapnq_dev/clapnq_dev_answerable.jsonl.gz", 30, 0),
    "clapnq_unanswerable": ("clapnq_dev/clapnq_dev_unanswerable.jsonl.gz", 0, 10),
    "squad2": ("squad2_dev_cs224n/questions.jsonl.gz", 30, 10),
    "techqa": ("techqa_rag_eval_sample/techqa_rag_eval_sample480.jsonl.gz", 15, 5),
    "evouna_nq": ("evouna/NQ.jsonl.gz", 15, 0),
    "evouna_tq": ("evouna/TQ.jsonl.gz", 15, 0),
}


def sample(shared: Path, rng: np.random.Generator) -> list[Question]:
    picked: list[Question] = []
    for dataset, (file, n_yes, n_no) in PLAN.items():
        rows = read_questions(shared, dataset.split("_unanswerable")[0], file)
        for answerable, n in ((True, n_yes), (False, n_no)):
            pool = [q for q in rows if q.answerable is answerable]
            order = rng.permutation(len(pool))[:n]
            picked.extend(pool[i] for i in sorted(order))
    return picked


def draws(questions: list[Question], rng: np.random.Generator) -> list[tuple[Question, str, str, Question | None]]:
    """(question, model, condition, the question whose passage is given: itself, another one or None), in row order."""
    by_dataset: dict[str, list[Question]] = {}
    for q in questions:
        by_dataset.setdefault(q.dataset, []).append(q)
    squad = by_dataset.get("squad2", [])
    jobs = []
    for q in questions:
        others = [o for o in (squad if q.dataset.startswith("evouna") else by_dataset[q.dataset])
                  if o.key != q.key and o.passage]
        for model in MODELS:
            if q.passage:
                jobs.append((q, model, "gold", q))
            extra = "wrong" if rng.random() < 0.5 and others else "none"
            jobs.append((q, model, extra, others[int(rng.integers(len(others)))] if extra == "wrong" else None))
    return jobs


def conditions(questions: list[Question], rng: np.random.Generator) -> list[tuple[Question, str, str, str]]:
    """(question, model, condition, passage) to answer."""
    return [(q, model, condition, given.passage if given else "") for q, model, condition, given in draws(questions, rng)]


async def answer_all(jobs, context_chars: int, log_every: int = 20, on_row=None) -> list[dict]:
    from evaluations.core.config import Config, LLMModel
    from evaluations.pipeline.qa_agent import QAFailed, answer_question, build_qa_agent
    from evaluations.models.chat import build_model, model_settings
    from evaluations.core.types import RetrievedChunk

    config = Config()
    agents = {}
    for name in MODELS:
        cfg = LLMModel(provider="embedded", name=name, max_tokens=96)
        agents[name] = build_qa_agent(build_model(cfg, config), model_settings(cfg))
    out, start, seconds = [], time.perf_counter(), {m: [] for m in MODELS}
    for i, (q, model, condition, passage) in enumerate(jobs):
        text = passage[:context_chars]
        chunks = [RetrievedChunk(chunk_id="p1", doc_id="p1", text=text, score=1.0)] if text else []
        t0 = time.perf_counter()
        try:
            result = await answer_question(agents[model], q.question, chunks)
            answer, status = result.answer.answer, "ok"
        except QAFailed:
            answer, status = "", "failed"
        seconds[model].append(time.perf_counter() - t0)
        out.append({"id": f"wa-{i + 1:04d}", "ref": q.ref(), "answerable": q.answerable, "model": model,
                    "context": condition, "answer": answer, "qa_status": status, "label": None, "label_note": ""})
        if on_row is not None:
            on_row(out)
        if (i + 1) % log_every == 0:
            print(f"{i + 1}/{len(jobs)} answers, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    for m, s in seconds.items():
        print(f"{m}: {np.mean(s):.2f} s per answer over {len(s)}", file=sys.stderr)
    return out


def sheet_block(row: dict, q: Question, passage: str) -> str:
    gold = " | ".join(q.references) if q.references else "(unanswerable: the source has no answer)"
    return "\n".join([
        f"## {row['id']}  ({q.dataset}, answerable={q.answerable}, model={row['model']}, context={row['context']})",
        f"Question: {q.question}", f"Gold: {gold}",
        f"Passage given (first 600 chars{', another question' if row['context'] == 'wrong' else ''}): "
        f"{passage[:600] or '(none)'}",
        f"ANSWER: {row['answer'] if row['answer'].strip() else '(empty)'}", ""])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "datasets" / "labels" / "weak_answers.jsonl")
    parser.add_argument("--sheets", type=Path, default=None)
    parser.add_argument("--context-chars", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    questions = sample(args.shared, rng)
    jobs = conditions(questions, rng)
    print(f"{len(questions)} questions, {len(jobs)} answers to write", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    sheet_size = 130

    def on_row(rows: list[dict]) -> None:  # every finished row at once; a reading sheet per sheet_size rows
        with args.out.open("a" if len(rows) > 1 else "w", encoding="utf-8") as f:
            f.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")
        if args.sheets and (len(rows) % sheet_size == 0 or len(rows) == len(jobs)):
            args.sheets.mkdir(parents=True, exist_ok=True)
            k = (len(rows) - 1) // sheet_size
            part = range(k * sheet_size, len(rows))
            text = "\n".join(sheet_block(rows[i], jobs[i][0], jobs[i][3]) for i in part)
            (args.sheets / f"sheet_{k + 1}.md").write_text(text, encoding="utf-8")

    rows = asyncio.run(answer_all(jobs, args.context_chars, on_row=on_row))
    print(f"wrote {len(rows)} rows to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
