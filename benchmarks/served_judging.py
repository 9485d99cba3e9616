"""Judging against answering on a served model: the reference-free judges and the QA agent on one llama.cpp server.

Starts llama.cpp's own OpenAI-compatible server (``llama_cpp.server``, tests/llama_server.py) serving
SmolLM2-135M-Instruct on 2 threads, then runs the README's kind of job against it with every reference-free judge on
the same server (``judge.model``), one case at a time so that no request waits behind another case's::

    evaluations repliqa --source repliqa_sample20 --limit CASES --concurrency 1 --qa-model openai:smollm2 ...

and reports the run's own ``summary.json`` ``judging`` section: the answering seconds, the wall time judging took
(per case, the span its judges cover together: a case's judges run at once, in turns at the one server), every
judge's seconds added up, each judge's seconds (its wait for a turn included) and model calls, and judging ÷
answering; per case, answering and judging seconds, and judging ÷ answering after the first two cases (once the
output ladders have settled). Issue 46's target: the judges' seconds <= the answering seconds.
``--from-run DIR`` only summarises a finished run folder.

    python benchmarks/served_judging.py [--cases 5] [--out benchmarks/results/served_judging.json] [--keep DIR]
    python benchmarks/served_judging.py --from-run RUN_DIR
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "repliqa_samples" / "repliqa_sample20.jsonl.gz"


def per_case(run: Path) -> list[list[float]]:
    """[answering seconds, judging seconds] of each case in run order: the QA model's latency and the span its
    judges covered together (first start to last end in its ``judge_cost``)."""
    out = []
    for line in (run / "cases.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        costs = (record.get("judge_cost") or {}).values()
        span = max((c["started"] + c["seconds"] for c in costs), default=0.0) - min(
            (c["started"] for c in costs), default=0.0)
        out.append([round((record.get("latency_ms") or {}).get("llm", 0.0) / 1000, 1), round(span, 1)])
    return out


def summarise(run: Path) -> dict:
    """The run's own ``summary.json`` ``judging`` section (``results.judging``), rounded; per case, answering and
    judging seconds, and judging ÷ answering over the cases after the first two (the QA agent's, the LLM judge's
    and the claim probe's output ladders settle in those: one-time costs)."""
    judging = json.loads((run / "summary.json").read_text())["judging"]
    cases = per_case(run)
    later = cases[2:]
    steady = round(sum(j for _, j in later) / sum(a for a, _ in later), 2) if later else None
    return {"cases": len(cases), "answering_seconds": round(judging["answering_seconds"], 1),
            "judging_seconds": round(judging["seconds"], 1),
            "judge_seconds_added_up": round(judging.get("judge_seconds") or judging["seconds"], 1),
            "judging_over_answering": round(judging["judging_per_answering"], 2),
            "after_the_first_two_cases": steady, "per_case_answering_judging": cases,
            "judges": {name: {"seconds": round(j["seconds"]["mean"] * j["cases"], 1), "calls": j["calls"]["total"]}
                       for name, j in judging["judges"].items()}}


def run_job(cases: int, work: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from llama_server import start_llama_server, stop_llama_server

    from evaluations.models.llamacpp import gguf_path

    server = start_llama_server(gguf_path("smollm2-135m"), work / "server.log", threads=2)
    try:
        config = work / "config.yaml"
        config.write_text(
            f"providers: {{openai: {{base_url: '{server.base_url}'}}}}\n"
            f"storage: {{data_dir: '{work / 'home'}'}}\ncache: {{path: '{work / 'calls.sqlite'}'}}\n"
            "judge:\n  reference_free: [faithfulness, answer_relevance, context_relevance]\n"
            f"  model: {{provider: openai, name: {server.model_id}, base_url: '{server.base_url}'}}\n")
        out = work / "run"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "evaluations", "repliqa", "--source", str(SOURCE), "--limit", str(cases),
                        "--concurrency", "1", "--qa-model", f"openai:{server.model_id}", "--config", str(config),
                        "--out", str(out), "--no-progress"], check=True, cwd=ROOT)
        print(f"whole run: {time.perf_counter() - started:.1f} s")
        return out
    finally:
        stop_llama_server(server.process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=5)
    parser.add_argument("--from-run", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "served_judging.json")
    parser.add_argument("--keep", type=Path, help="work in this (new) folder and keep it: the run and server.log")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        if args.keep:
            work.mkdir(parents=True)
        run = args.from_run or run_job(args.cases, work)
        result = {"model": "SmolLM2-135M-Instruct (llama.cpp's server, 2 threads)", "concurrency": 1,
                  **summarise(run)}
    print(json.dumps(result, indent=2))
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
