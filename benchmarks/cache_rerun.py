"""Does a second identical run make no model calls, and how long does it take?

Starts the fake OpenAI-compatible server (tests/fake_llm_server.py) with LATENCY seconds added to every
request, writes CASES RepliQA questions (the answerable rows of the real 20-row sample, repeated; each
repeat's question carries a " [case N]" suffix so every case is a distinct request), then runs the real CLI::

    evaluations repliqa --source <cases> --qa-model openai:qa-llm --judge openai:judge-llm ...

three times on one index (built first, untimed) and one cache file: ``cold`` (empty cache), ``warm`` (the same
command again) and ``bypass`` (``--no-cache``), plus a retrieval-only run (``--skip-qa``) for the time no cache
can remove (indexing checks, retrieval, the offline evaluators). Model calls are counted at the server.

``model_stage`` measures the same model calls in-process, without the rest of a run: the real QA agent and the
real LLM judge (``build_qa_agent``/``llm_judge`` on ``build_model``) inside ``pydantic_evals.Dataset.evaluate``,
once on an empty cache and once again.

``real_server`` does the same cold/warm pair of CLI runs against a real model server: llama.cpp's own
OpenAI-compatible server (``llama_cpp.server``, tests/llama_server.py) serving SmolLM2-135M-Instruct, as both the QA
model and the LLM judge, on REAL_CASES RepliQA questions (``--real-cases``; 0 skips it). Its calls are counted from
``summary.json`` (``model_calls.chat``: live and cached).

Prints and writes JSON (benchmarks/results/cache_rerun.json): wall seconds, calls, the warm/cold ratios
(target: 0 calls, <= 10%). A warm run still pays for the fixed part of any run (starting Python and importing
pydantic-ai/LanceDB, opening the index, retrieval, writing the reports): against the scripted server at LATENCY
per call that fixed part is most of the cold run too, so the ratio that says what the cache saves a user is the
real server's.

    python benchmarks/cache_rerun.py [--cases 100] [--latency 0.2] [--concurrency 4] [--real-cases 20] [--out DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from fake_llm_server import FakeLLMServer, tool_call  # noqa: E402

REPLIQA_20 = ROOT.parent / "shared" / "data" / "repliqa_samples" / "repliqa_sample20.jsonl.gz"
CHAT = "/v1/chat/completions"
RESULTS = ROOT / "benchmarks" / "results"


def write_cases(path: Path, n: int) -> dict[str, str]:
    """``n`` answerable RepliQA rows as JSONL (distinct ids and question texts); returns question -> gold answer."""
    with gzip.open(REPLIQA_20, "rt", encoding="utf-8") as handle:
        rows = [r for r in map(json.loads, handle) if "not found in the document" not in r["answer"].lower()]
    gold: dict[str, str] = {}
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = dict(rows[i % len(rows)])
            row["sample_id"] = i
            row["question"] = f"{row['question']} [case {i}]"
            gold[row["question"]] = row["answer"]
            out.write(json.dumps(row) + "\n")
    return gold


def responder(gold: dict[str, str]):
    """QA: the gold answer, citing the first context id; judge: pass when the answer is a gold answer.

    Replies with a call of the request's output tool, or with the JSON text when the request offers no tools
    (the structured-output modes without tools)."""
    answers = set(gold.values())

    def reply(request: dict) -> object:
        text = " ".join(str(m.get("content")) for m in request["messages"] if m.get("role") == "user")
        output = re.search(r"<Output>\s*(.*?)\s*</Output>", text, flags=re.S)
        if output:  # the LLM judge
            verdict = output.group(1) in answers
            payload = {"reason": "compared with the gold answers", "pass": verdict, "score": float(verdict)}
        else:
            question = text.rsplit("Question: ", 1)[1].strip()
            ids = re.findall(r"^\[([^\]]+)\]", text, flags=re.M)
            payload = {"answer": gold[question], "cited_ids": ids[:1], "confidence": 0.8}
        tools = request.get("tools") or []
        return tool_call(tools[0]["function"]["name"], payload) if tools else json.dumps(payload)

    return reply


def run_cli(args: list[str], env: dict[str, str]) -> tuple[float, dict, str]:
    """(wall seconds, summary.json from --json, stderr)."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "evaluations", *args, "--no-progress", "--json"], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, **env})
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 3):
        raise SystemExit(f"evaluations exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return seconds, json.loads(proc.stdout[proc.stdout.index("{"):]), proc.stderr


def stage_seconds(summary: dict, stage: str) -> float:
    """Sum over cases of one stage's latency (``latency_ms.by_stage``), in seconds."""
    by_stage = summary.get("latency_ms", {}).get("by_stage", {}).get(stage) or {}
    return round(by_stage.get("n", 0) * by_stage.get("mean", 0.0) / 1000, 2)


def model_stage(server: FakeLLMServer, source: Path, cache: Path, concurrency: int) -> dict:
    """The QA agent + LLM judge alone (pydantic-evals), cold then warm on one cache: seconds and server calls."""
    from pydantic_evals import Case, Dataset

    from evaluations.core.config import load_config
    from evaluations.evaluators.llm_judges import llm_judge
    from evaluations.pipeline.qa_agent import build_qa_agent
    from evaluations.models.chat import build_model, model_settings
    from evaluations.core.types import CaseMetadata, CaseOutput, RetrievalInputs

    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    context = {r["question"]: f"[{r['sample_id']}] {r['document_extracted'][:1500]}" for r in rows}
    config = load_config(None, {"qa.model": {"provider": "openai", "name": "qa-llm", "base_url": server.openai_url},
                                "judge.model": {"provider": "openai", "name": "judge-llm",
                                                "base_url": server.openai_url},
                                "cache.path": str(cache)})
    dataset = Dataset(name="cache-model-stage", evaluators=[llm_judge(config.judge.model, config)], cases=[
        Case(name=str(r["sample_id"]), inputs=RetrievalInputs(query=r["question"]),
             metadata=CaseMetadata(query_id=str(r["sample_id"]), answers=[r["answer"]])) for r in rows])
    out: dict[str, dict] = {}
    for name in ("cold", "warm"):
        agent = build_qa_agent(build_model(config.qa.model, config), model_settings(config.qa.model))

        async def task(inputs: RetrievalInputs) -> CaseOutput:
            result = await agent.run(f"Context:\n{context[inputs.query]}\n\nQuestion: {inputs.query}")
            return CaseOutput(answer=result.output)

        before = len(server.calls(CHAT))
        started = time.perf_counter()
        report = dataset.evaluate_sync(task, max_concurrency=concurrency, progress=False)
        seconds = time.perf_counter() - started
        passed = sum(bool(c.assertions.get("llm_judge") and c.assertions["llm_judge"].value) for c in report.cases)
        out[name] = {"seconds": round(seconds, 3), "model_calls_at_server": len(server.calls(CHAT)) - before,
                     "cases": len(report.cases), "failures": len(report.failures), "llm_judge_passed": passed}
    out["warm_over_cold"] = round(out["warm"]["seconds"] / out["cold"]["seconds"], 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--skip-cli", action="store_true", help="Only the in-process model stage.")
    parser.add_argument("--real-cases", type=int, default=20, help="Cases against the real llama.cpp server (0: none).")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Folder for cache_rerun.json.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cache_rerun-"))
    source = work / "cases.jsonl"
    gold = write_cases(source, args.cases)
    env = {"EVALUATIONS_CACHE_PATH": str(work / "model_calls.sqlite"), "EVALUATIONS_LLM_THREADS": "1"}
    common = ["repliqa", "--source", str(source), "--db", str(work / "db")]
    runs: dict[str, dict] = {}
    with FakeLLMServer(models=("qa-llm", "judge-llm"), responder=responder(gold), latency=args.latency) as server:
        stage = model_stage(server, source, work / "model_stage.sqlite", args.concurrency)
        print(json.dumps({"model_stage": stage}), flush=True)
        if not args.skip_cli:
            runs = cli_runs(server, args, common, env, work)
    result = {"cases": args.cases, "latency_s": args.latency, "concurrency": args.concurrency, "model_stage": stage}
    if runs:
        cold, warm, base = runs["cold"], runs["warm"], runs["retrieval_only"]
        result["cli"] = {
            "runs": runs,
            "warm_over_cold": round(warm["seconds"] / cold["seconds"], 3),
            # the part a cache can remove: wall time above a retrieval-only run of the same command
            "warm_over_cold_above_retrieval_only": round(
                max(warm["seconds"] - base["seconds"], 0.0) / max(cold["seconds"] - base["seconds"], 1e-9), 3),
        }
    if args.real_cases:
        result["real_server"] = real_server(args.real_cases, work / "real")
    result["targets"] = {"warm_model_calls": 0, "warm_over_cold_max": 0.10}
    result["machine"] = {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cache_rerun.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def cli_runs(server: FakeLLMServer, args, common: list[str], env: dict[str, str], work: Path) -> dict[str, dict]:
    """The CLI: index once (untimed), then retrieval-only, cold, warm and --no-cache runs."""
    env = {**env, "OPENAI_BASE_URL": server.openai_url}
    index_seconds, _, _ = run_cli([*common, "--skip-qa", "--out", str(work / "index")], env)
    qa = [*common, "--skip-db", "--qa-model", "openai:qa-llm", "--judge", "openai:judge-llm",
          "--concurrency", str(args.concurrency)]
    runs: dict[str, dict] = {}
    for name, extra in (("retrieval_only", ["--skip-qa"]), ("cold", []), ("warm", []), ("bypass", ["--no-cache"])):
        before = len(server.calls(CHAT))
        command = [*common, "--skip-db", "--skip-qa"] if name == "retrieval_only" else [*qa, *extra]
        seconds, summary, _ = run_cli([*command, "--out", str(work / name)], env)
        judges = summary.get("answers", {}).get("judges", {})
        runs[name] = {
            "seconds": round(seconds, 2),
            "model_calls_at_server": len(server.calls(CHAT)) - before,
            "cases": summary["counts"]["cases"],
            "llm_judge_mean": judges.get("llm_judge", {}).get("mean"),
            "qa_stage_seconds": stage_seconds(summary, "llm"),
            "judge_stage_seconds": stage_seconds(summary, "judge"),
            "model_calls_reported": summary.get("model_calls") or summary.get("run", {}).get("model_calls"),
        }
    runs["index_seconds_untimed"] = round(index_seconds, 2)
    return runs


def real_server(n: int, work: Path) -> dict:
    """Cold then warm CLI runs (QA + LLM judge) against llama.cpp's server with SmolLM2 (index built first)."""
    from llama_server import start_llama_server, stop_llama_server

    from evaluations.models.llamacpp import gguf_path

    work.mkdir(parents=True, exist_ok=True)
    source = work / "cases.jsonl"
    write_cases(source, n)
    server = start_llama_server(gguf_path("smollm2-135m"), work / "server.log")
    try:
        env = {"EVALUATIONS_CACHE_PATH": str(work / "model_calls.sqlite"), "OPENAI_BASE_URL": server.base_url}
        common = ["repliqa", "--source", str(source), "--db", str(work / "db")]
        index_seconds, _, _ = run_cli([*common, "--skip-qa", "--out", str(work / "index")], env)
        model = f"openai:{server.model_id}"
        qa = [*common, "--skip-db", "--qa-model", model, "--judge", model, "--concurrency", "1"]
        runs: dict[str, dict] = {}
        for name in ("cold", "warm"):
            seconds, summary, _ = run_cli([*qa, "--out", str(work / name)], env)
            counts = summary["counts"]
            runs[name] = {"seconds": round(seconds, 2), "cases": counts["cases"], "qa_failed": counts["qa_failed"],
                          "judge_failed": counts["judge_failed"], "model_calls": summary["model_calls"]["chat"],
                          "llm_judge_mean": summary.get("answers", {}).get("judges", {}).get("llm_judge", {}).get(
                              "mean")}
    finally:
        stop_llama_server(server.process)
    return {"model": server.model_id, "cases": n, "index_seconds_untimed": round(index_seconds, 2), "runs": runs,
            "warm_over_cold": round(runs["warm"]["seconds"] / runs["cold"]["seconds"], 4)}


if __name__ == "__main__":
    main()
