"""Which embedded QA model should be the default? Answer quality by every judge, and seconds per answer.

Each model answers the same questions with the same **gold context** (no retrieval, so only the model differs),
through the real QA agent (``answer_question``, grammar-constrained JSON), cut to the embedded context budget
(``qa.max_context_chars`` default, 2,000 characters):

- ``repliqa``: the 20 rows of ``repliqa_samples/repliqa_sample20`` (18 answerable, 2 "not found"); context = the
  gold document's paragraphs ranked by how many question words they share (best first);
- ``clapnq_answerable`` / ``clapnq_unanswerable``: seeded samples of CLAPNQ dev; context = the one passage;
- ``squad2``: a seeded sample of the SQuAD 2.0 dev (CS224N half), answerable and unanswerable as drawn;
  context = the question's paragraph.

Answerable questions are scored by every judge: keyword_correct (> 0.7), token_f1, exact_match, contains_gold,
semantic_similarity, offline_correct / offline_p_correct, and the embedded LLM judge (Qwen2.5-Coder-1.5B yes/no,
``llm_judge`` / ``llm_p_correct``) when it loads. Unanswerable ones by ``abstained`` (the answer declines:
"I don't know", "not found/mentioned/provided in the context", ...). Seconds per answer are wall time of one
``answer_question`` call with the model already loaded, at ``EVALUATIONS_LLM_THREADS`` threads.

    EVALUATIONS_LLM_THREADS=1 python benchmarks/qa_models.py [--n 20] [--models smollm2-135m,qwen2.5-coder-0.5b]

Writes ``benchmarks/results/qa_models.json`` (per model and dataset means, and every answer).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "benchmarks" / "results" / "qa_models.json"
SEED = 7
CONTEXT_CHARS = 2000

from evaluations.core.config import Config, LLMModel  # noqa: E402
from evaluations.judging.correctness import lexical  # noqa: E402
from evaluations.pipeline.qa_agent import QAFailed, answer_question, build_qa_agent  # noqa: E402
from evaluations.core.types import RetrievedChunk  # noqa: E402

_ABSTAIN = re.compile(
    r"\b(i don'?t know|i do not know|not (?:found|mentioned|stated|provided|given|specified|available|included|"
    r"present)|no (?:information|mention)|does not (?:say|mention|contain|provide|specify)|doesn'?t (?:say|mention|"
    r"contain|provide)|cannot (?:answer|determine|find|be determined)|can'?t (?:answer|determine)|unanswerable|"
    r"unknown)\b",
    re.I,
)
_WORD = re.compile(r"[a-z0-9]+")


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _item(dataset: str, qid: str, question: str, context: list[str], answers: list[str]) -> dict[str, Any]:
    chunks = [RetrievedChunk(chunk_id=f"p{i}", doc_id=qid, text=t, score=1.0) for i, t in enumerate(context)]
    return {"dataset": dataset, "id": qid, "question": question, "chunks": chunks,
            "answers": [a for a in answers if a.strip()], "answerable": any(a.strip() for a in answers)}


def repliqa(n: int) -> list[dict]:
    items = []
    for row in _read(DATA / "repliqa_samples" / "repliqa_sample20.jsonl.gz")[:n]:
        paragraphs = [p for p in row["document_extracted"].split("\n") if p.strip()]
        q = _words(row["question"])
        ranked = sorted(paragraphs, key=lambda p: -len(q & _words(p)))
        gold = "" if row["answer"].strip() == "The answer is not found in the document." else row["answer"]
        items.append(_item("repliqa", str(row["sample_id"]), row["question"], ranked, [gold]))
    return items


def clapnq(n: int, kind: str) -> list[dict]:
    rows = _read(DATA / "clapnq_dev" / f"clapnq_dev_{kind}.jsonl.gz")
    picked = random.Random(SEED).sample(rows, n)
    return [_item(f"clapnq_{kind}", r["id"], r["input"], [r["passages"][0]["text"]],
                  [o["answer"] for o in r["output"]]) for r in picked]


def squad2(n: int) -> list[dict]:
    rows = _read(DATA / "squad2_dev_cs224n" / "questions.jsonl.gz")
    picked = random.Random(SEED).sample(rows, n)
    return [_item("squad2", r["id"], r["question"], [r["context"]], sorted(set(r["answers"]["text"])))
            for r in picked]


def _llm_judge():
    """The embedded LLM judge (probability fn, threshold), or (None, reason) when it cannot load."""
    try:
        from evaluations.judging.correctness.embedded import judge_params, load_judge

        judge = load_judge()
        return judge, float(judge_params()["threshold"])
    except Exception as exc:  # noqa: BLE001 - the benchmark reports the judge as missing
        return None, f"{type(exc).__name__}: {exc}"


def score(item: dict, answer: str, judge: Any, threshold: Any) -> dict[str, Any]:
    from evaluations.judging.correctness.offline import load_model
    from evaluations.judging.correctness.semantic import semantic_similarity

    if not item["answerable"]:
        return {"abstained": bool(_ABSTAIN.search(answer))}
    refs = item["answers"]
    p_off, v_off = load_model().judge(refs, answer)
    out: dict[str, Any] = {
        "keyword_correct": lexical.keyword_correct(refs, answer),
        "token_f1": lexical.token_f1(refs, answer),
        "exact_match": lexical.exact_match(refs, answer),
        "contains_gold": lexical.containment(refs, answer),
        "semantic_similarity": semantic_similarity(refs, answer),
        "offline_p_correct": p_off,
        "offline_correct": v_off,
        "abstained": bool(_ABSTAIN.search(answer)),
    }
    if judge is not None:
        p, _ = judge.probability(item["question"], refs, answer)
        out["llm_p_correct"] = p
        out["llm_judge"] = p >= threshold
    return out


async def _answer_all(model_name: str, items: list[dict], on_row=None) -> list[dict]:
    from evaluations.models.llamacpp import embedded_model

    config = Config()
    cfg = LLMModel(provider="embedded", name=model_name, temperature=0.0, seed=0, max_tokens=256)
    agent = build_qa_agent(embedded_model(cfg, config.data_dir()))
    # load the weights outside the timing
    from evaluations.models.gguf import resolve
    from evaluations.models.llamacpp import _load, gguf_path

    _load(gguf_path(resolve(model_name).name, config.data_dir()), 0, resolve(model_name).n_ctx)
    rows = []
    for i, item in enumerate(items):
        start = time.perf_counter()
        try:
            result = await answer_question(agent, item["question"], item["chunks"], max_chars=CONTEXT_CHARS)
            answer, usage, mode, error = result.answer.answer, result.usage, result.mode, None
        except QAFailed as failed:
            answer, usage, mode, error = "", failed.usage, None, failed.error
        seconds = time.perf_counter() - start
        rows.append({"dataset": item["dataset"], "id": item["id"], "question": item["question"],
                     "gold": item["answers"], "answerable": item["answerable"], "answer": answer,
                     "seconds": round(seconds, 3), "usage": usage, "mode": mode, "error": error})
        print(f"  [{model_name}] {i + 1}/{len(items)} {item['dataset']} {seconds:5.1f}s {answer[:70]!r}",
              file=sys.stderr)
        if on_row is not None:
            on_row(rows)
    return rows


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def summarise(rows: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "n": len(rows), "answered": sum(1 for r in rows if r["answer"]),
        "seconds_per_answer": {"mean": _mean([r["seconds"] for r in rows]),
                               "median": round(statistics.median(r["seconds"] for r in rows), 3)},
        "tokens_per_answer": {k: _mean([r["usage"].get(k, 0) for r in rows]) for k in ("input_tokens", "output_tokens")},
    }
    answerable = [r for r in rows if r["answerable"] and r["answer"]]
    names = sorted({k for r in answerable for k in r["scores"]})
    out["judges"] = {k: _mean([float(r["scores"][k]) for r in answerable if k in r["scores"]]) for k in names}
    out["n_answerable"] = len([r for r in rows if r["answerable"]])
    unanswerable = [r for r in rows if not r["answerable"]]
    out["n_unanswerable"] = len(unanswerable)
    out["abstained_when_unanswerable"] = _mean([float(r["scores"]["abstained"]) for r in unanswerable if r["answer"]])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="questions per dataset (RepliQA: at most 20)")
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-coder-0.5b")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    items = repliqa(args.n) + clapnq(args.n, "answerable") + clapnq(args.n, "unanswerable") + squad2(args.n)
    judge, threshold = _llm_judge()
    print(f"LLM judge: {'loaded' if judge is not None else threshold}", file=sys.stderr)
    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    results: dict[str, Any] = {
        "threads": int(os.environ.get("EVALUATIONS_LLM_THREADS", "0")) or None,
        "cpu_count": os.cpu_count(), "context": f"gold context, first {CONTEXT_CHARS} chars", "seed": SEED,
        "llm_judge": "qwen2.5-coder-1.5b yes/no" if judge is not None else f"not available ({threshold})",
        "llm_judge_threshold": threshold if judge is not None else None,
        "models": previous.get("models", {}),  # other models' results of an earlier run are kept
    }

    def record(model_name: str, rows: list[dict], started: float) -> None:
        """Score the newest answer and rewrite the file: an interrupted run keeps what it measured."""
        row, item = rows[-1], items[len(rows) - 1]
        row["scores"] = score(item, row["answer"], judge, threshold) if row["answer"] else {}
        by_dataset = {d: summarise([r for r in rows if r["dataset"] == d]) for d in dict.fromkeys(r["dataset"] for r in rows)}
        results["models"][model_name] = {"overall": summarise(rows), "by_dataset": by_dataset, "complete": len(rows) == len(items),
                                         "wall_seconds": round(time.perf_counter() - started, 1), "answers": rows}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")

    for model_name in args.models.split(","):
        started = time.perf_counter()
        asyncio.run(_answer_all(model_name, items, on_row=lambda rows, m=model_name, t=started: record(m, rows, t)))
    brief = {m: {"overall": r["overall"], "by_dataset": {d: {"judges": s["judges"], "abstained": s["abstained_when_unanswerable"],
                                                          "s/answer": s["seconds_per_answer"]["mean"]}
                                                      for d, s in r["by_dataset"].items()}}
             for m, r in results["models"].items()}
    print(json.dumps(brief, indent=1))


if __name__ == "__main__":
    main()
