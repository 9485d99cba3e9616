"""Do runs survive a flaky model server? 20% faults over 200 cases at 8-way concurrency.

The fake OpenAI-compatible server (tests/fake_llm_server.py) answers QA and judge requests correctly but fails
FAULT_RATE of them (seeded) with one of: HTTP 500, HTTP 429 (Retry-After: 1), a timeout (no reply for longer
than ``requests.timeout``, then the connection closes), a 200 with malformed JSON, a dropped connection. The
real CLI runs CASES RepliQA questions (see cache_rerun.write_cases) with QA + LLM judge, ``--no-cache``, on an
index built first (untimed)::

    evaluations repliqa --source <cases> --qa-model openai:qa-llm --judge openai:judge-llm --concurrency 8 ...

Every case must end answered and judged, or counted failed with its error; none lost. A case "met a fault" when
any of its requests was answered with one; "recovered" when such a case still ended answered and judged.
Prints and writes JSON (benchmarks/results/fault_injection.json).

    python benchmarks/fault_injection.py [--cases 200] [--fault-rate 0.2] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests")]

from cache_rerun import CHAT, RESULTS, responder, run_cli, write_cases  # noqa: E402
from fake_llm_server import FakeLLMServer  # noqa: E402

CASE_ID = re.compile(r"\[case (\d+)\]")
REQUESTS = {"timeout": 2.0, "retries": 4, "backoff": 0.25, "max_backoff": 2.0, "max_retry_after": 5}


def _case_of(body: dict) -> str | None:
    match = CASE_ID.search(json.dumps(body.get("messages", [])))
    return match.group(1) if match else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--out", type=Path, default=RESULTS, help="Folder for fault_injection.json.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fault_injection-"))
    source = work / "cases.jsonl"
    gold = write_cases(source, args.cases)
    config = work / "haiku.rag.yaml"
    config.write_text(json.dumps({"requests": REQUESTS}))  # JSON is YAML
    env = {"EVALUATIONS_CACHE_PATH": str(work / "model_calls.sqlite")}
    common = ["repliqa", "--source", str(source), "--db", str(work / "db"), "--config", str(config)]
    with FakeLLMServer(models=("qa-llm", "judge-llm"), responder=responder(gold), latency=args.latency,
                       retry_after=1, hang=REQUESTS["timeout"] + 3) as server:
        env["OPENAI_BASE_URL"] = server.openai_url
        run_cli([*common, "--skip-qa", "--out", str(work / "index")], env)
        server.fault_rate = args.fault_rate
        seconds, summary, stderr = run_cli([*common, "--skip-db", "--qa-model", "openai:qa-llm", "--judge",
                                            "openai:judge-llm", "--concurrency", str(args.concurrency), "--no-cache",
                                            "--max-failures", "100%", "--out", str(work / "run")], env)
        chats = server.calls(CHAT)
    records = [json.loads(line) for line in (work / "run" / "cases.jsonl").read_text().splitlines()]
    faulted = Counter(_case_of(r.body) for r in chats if r.fault)
    by_kind = Counter(r.fault for r in chats if r.fault)
    outcome: dict[str, str] = {}
    errors: list[dict] = []
    for record in records:
        case = CASE_ID.search(record["query"]).group(1)
        judged = "llm_judge" in record.get("judges", {})
        if record.get("status") == "failed":
            outcome[case] = "retrieval_failed"
        elif record["qa"]["status"] != "ok":
            outcome[case] = "qa_failed"
        elif not judged:
            outcome[case] = "judge_failed"
        else:
            outcome[case] = "answered_and_judged"
        if outcome[case] != "answered_and_judged":
            error = record.get("error") or record["qa"].get("error") or [e["error"] for e in record["judge_errors"]]
            errors.append({"case": case, "outcome": outcome[case], "error": error})
            assert error, f"case {case} failed without an error"
    met_fault = [c for c in outcome if faulted.get(c)]
    recovered = [c for c in met_fault if outcome[c] == "answered_and_judged"]
    result = {
        "cases": args.cases, "fault_rate": args.fault_rate, "concurrency": args.concurrency,
        "requests_config": REQUESTS, "seconds": round(seconds, 1),
        "chat_requests": len(chats), "faults_served": sum(by_kind.values()), "faults_by_kind": dict(by_kind),
        "outcomes": dict(Counter(outcome.values())),
        "lost": args.cases - len(records), "duplicated": len(records) - len(outcome),
        "cases_meeting_a_fault": len(met_fault), "recovered": len(recovered),
        "recovered_share": round(len(recovered) / len(met_fault), 4) if met_fault else None,
        "summary_counts": summary["counts"],
        "llm_judge_mean": summary.get("answers", {}).get("judges", {}).get("llm_judge"),
        "failed_cases": errors[:20],
        "target": {"lost": 0, "recovered_share_min": 0.95},
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fault_injection.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
