"""How much does ``evaluation.concurrency`` buy against a slow model server?

Starts the fake Ollama server (tests/fake_llm_server.py) with added latency per request, then runs
CASES structured-output agent calls (pydantic-ai ``Agent(output_type=Answer)`` on the model from
``build_model`` with provider ollama) inside ``pydantic_evals.Dataset.evaluate`` at
``max_concurrency`` 1 and N. Prints JSON: both wall times and the speed-up (target >= 6x at N=8).

    python benchmarks/qa_concurrency.py [--cases 100] [--latency 0.2] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_llm_server import FakeLLMServer, tool_call  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_evals import Case, Dataset  # noqa: E402

from evaluations.core.config import load_config  # noqa: E402
from evaluations.models.chat import build_model, model_settings  # noqa: E402
from evaluations.core.types import Answer, CaseOutput, RetrievalInputs  # noqa: E402


def _responder(request: dict) -> object:
    question = request["messages"][-1]["content"]
    return tool_call(request["tools"][0]["function"]["name"], {"answer": f"echo: {question}", "confidence": 0.5})


async def _run(url: str, cases: int, concurrency: int) -> tuple[float, int]:
    config = load_config(None, {"providers.ollama.base_url": url, "qa.model": {"provider": "ollama", "name": "llama3.2"}})
    agent = Agent(build_model(config.qa.model, config), output_type=Answer)
    settings = model_settings(config.qa.model)

    async def task(inputs: RetrievalInputs) -> CaseOutput:
        result = await agent.run(inputs.query, model_settings=settings)
        usage = result.usage
        return CaseOutput(answer=result.output, usage={"input": usage.input_tokens, "output": usage.output_tokens})

    dataset = Dataset(name="qa-concurrency", cases=[
        Case(name=f"c{i}", inputs=RetrievalInputs(query=f"question number {i}")) for i in range(cases)
    ])
    start = time.perf_counter()
    report = await dataset.evaluate(task, max_concurrency=concurrency, progress=False)
    elapsed = time.perf_counter() - start
    ok = sum(1 for c in report.cases if c.output.answer and c.output.answer.answer.startswith("echo: question"))
    if report.failures or ok != cases:
        raise SystemExit(f"{len(report.failures)} task failures, {ok}/{cases} correct answers at N={concurrency}")
    return elapsed, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds added to every request")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with FakeLLMServer(models=("llama3.2",), responder=_responder, latency=args.latency) as server:
        serial, _ = asyncio.run(_run(server.url, args.cases, 1))
        parallel, _ = asyncio.run(_run(server.url, args.cases, args.concurrency))
        requests = len(server.calls("/v1/chat/completions"))
    print(json.dumps({
        "cases": args.cases,
        "latency_s": args.latency,
        "requests": requests,
        "wall_s": {"1": round(serial, 3), str(args.concurrency): round(parallel, 3)},
        "speedup": round(serial / parallel, 2),
        "ideal_speedup": args.concurrency,
        "target_met": serial / parallel >= 6,
    }, indent=2))


if __name__ == "__main__":
    main()
