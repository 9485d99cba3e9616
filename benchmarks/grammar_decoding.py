"""Grammar-constrained answers of the embedded QA models: llama.cpp's sampler chain against ``greedy_under_grammar``.

The embedded models answer in JSON generated under a grammar built from the output schema
(``evaluations/models/llamacpp.py``). llama-cpp-python's ``create_completion(grammar=...)`` filters the whole
vocabulary through the grammar at every token; ``greedy_under_grammar`` (what the product runs at temperature 0)
checks the model's most likely token first and filters the vocabulary only when the grammar refuses it. Both
decode greedily, so the answers must be equal; the benchmark checks that on every answer and reports the time.

Each model answers the first ``--n`` RepliQA sample questions through the real QA agent (``answer_question``),
context = the gold document's paragraphs ranked by shared question words (``qa_models.repliqa``), cut to 2,000
characters, once per decoder (the chain first, then the fast path, per question; the model loaded beforehand).

    EVALUATIONS_LLM_THREADS=2 python benchmarks/grammar_decoding.py [--n 10] [--models smollm2-135m,...]

Writes ``benchmarks/results/grammar_decoding.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
OUT = ROOT / "benchmarks" / "results" / "grammar_decoding.json"

from evaluations.core.config import Config, LLMModel  # noqa: E402
from evaluations.models import llamacpp  # noqa: E402
from evaluations.models.gguf import resolve  # noqa: E402
from evaluations.pipeline.qa_agent import answer_question, build_qa_agent  # noqa: E402

FAST = llamacpp.greedy_under_grammar


def chain(llm: Any, prompt: list[int], gbnf: str, max_tokens: int) -> tuple[str, int, str]:
    """llama-cpp-python's own grammar sampling (the product's decoder before): the oracle."""
    import llama_cpp

    out = llm.create_completion(prompt, max_tokens=max_tokens, temperature=0.0, seed=0,
                                grammar=llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False))
    choice = out["choices"][0]
    return choice["text"], out["usage"]["completion_tokens"], choice["finish_reason"]


async def _one(agent: Any, item: dict, decoder: Any) -> tuple[str, float, int]:
    llamacpp.greedy_under_grammar = decoder
    start = time.perf_counter()
    result = await answer_question(agent, item["question"], item["chunks"], max_chars=2000)
    return result.raw_text, time.perf_counter() - start, int(result.usage.get("output_tokens", 0))


def run_model(name: str, items: list[dict]) -> dict[str, Any]:
    config = Config()
    cfg = LLMModel(provider="embedded", name=name, temperature=0.0, seed=0, max_tokens=256)
    agent = build_qa_agent(llamacpp.embedded_model(cfg, config.data_dir()))
    llamacpp._load(llamacpp.gguf_path(resolve(name).name, config.data_dir()), 0, resolve(name).n_ctx)
    rows = []
    try:
        for i, item in enumerate(items):
            slow_text, slow_s, tokens = asyncio.run(_one(agent, item, chain))
            fast_text, fast_s, _ = asyncio.run(_one(agent, item, FAST))
            rows.append({"id": item["id"], "equal": slow_text == fast_text, "tokens": tokens,
                         "chain_s": round(slow_s, 3), "fast_s": round(fast_s, 3)})
            print(f"  [{name}] {i + 1}/{len(items)} {tokens} tokens: {slow_s:5.2f}s -> {fast_s:5.2f}s "
                  f"{'equal' if slow_text == fast_text else 'DIFFERENT'}", file=sys.stderr)
    finally:
        llamacpp.greedy_under_grammar = FAST
    chain_s, fast_s = sum(r["chain_s"] for r in rows), sum(r["fast_s"] for r in rows)
    tokens = sum(r["tokens"] for r in rows)
    return {"answers": len(rows), "equal": sum(r["equal"] for r in rows), "output_tokens": tokens,
            "chain_seconds": round(chain_s, 2), "fast_seconds": round(fast_s, 2),
            "ratio_fast_to_chain": round(fast_s / chain_s, 3),
            "seconds_per_answer": {"chain": round(chain_s / len(rows), 2), "fast": round(fast_s / len(rows), 2)},
            "saved_ms_per_output_token": round(1000 * (chain_s - fast_s) / tokens, 1),
            "rows": rows}


def main() -> None:
    from qa_models import repliqa

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--models", default="smollm2-135m,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b")
    args = parser.parse_args()
    items = repliqa(args.n)
    results: dict[str, Any] = {}
    for name in args.models.split(","):
        results[name] = run_model(name, items)
        print(f"{name}: {results[name]['equal']}/{results[name]['answers']} equal, "
              f"{results[name]['ratio_fast_to_chain']}x the chain's time", file=sys.stderr)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    OUT.write_text(json.dumps({"models": results, "questions": args.n, "dataset": "repliqa_sample20 (gold context)",
                               "threads": os.environ.get("EVALUATIONS_LLM_THREADS", "all cores"),
                               "machine": platform.processor() or platform.machine(), "commit": commit,
                               "date": date.today().isoformat()}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
