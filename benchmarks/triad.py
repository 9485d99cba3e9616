"""The reference-free triad without labels (issue 20): discrimination, run time and a cached re-run.

    python benchmarks/triad.py [--shared ../shared/data] [--n 50] [--out benchmarks/results]

50 answerable SQuAD 2.0 dev questions (seeded draw, ``numpy.random.default_rng(0)``), written as a dataset file of
rows with only ``id`` and ``query`` (no gold answer, no relevance label), over the 646 SQuAD paragraphs as corpus.
The same questions are run, as a user would (``evaluations run FILE --corpus … --system …``), against the systems
of ``benchmarks/triad_systems.py``:

* ``copy_sentence`` (TF-IDF top-k, answer = a sentence copied from the top passage): faithfulness goal >= 0.9;
* ``unrelated`` (same retrieval, answer = a sentence of an unrelated article): faithfulness goal <= 0.2;
* ``random_retriever`` (k random paragraphs): context relevance goal at least 0.3 below ``copy_sentence``'s
  (the TF-IDF retriever);
* ``copy_sentence`` again on the same cache: 0 model calls.

``--k`` (default 1) is how many passages each system returns and the judges read: SQuAD has one relevant
paragraph per question, so context relevance (precision@k) is at most 1/k for any retriever.
The first run's wall time is the "50-question triad run with the embedded models" (goal <= 10 min; the first run
uses a fresh cache folder so every verdict is computed). Writes ``triad.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("copy_sentence", "unrelated", "random_retriever")


def questions(shared: Path, n: int) -> list[dict]:
    with gzip.open(shared / "squad2_dev_cs224n" / "questions.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    answerable = [r for r in rows if r.get("answers")]
    pick = np.random.default_rng(0).choice(len(answerable), size=n, replace=False)
    return [{"id": str(answerable[i]["id"]), "query": answerable[i]["question"]} for i in sorted(pick)]


def judge_gguf() -> Path:
    """The assembled judge model file (assembled once, outside the timed runs)."""
    sys.path[:0] = [str(ROOT)]
    from evaluations.judging.correctness.embedded import embedded_judge_path

    return embedded_judge_path()


def run(work: Path, name: str, system: str, corpus: Path, data: Path, cache_dir: Path, k: str) -> dict:
    out = work / name
    command = [sys.executable, "-m", "evaluations", "run", str(data), "--corpus", str(corpus), "--system",
               f"triad_systems:{system}", "--k", k, "--no-progress", "--out", str(out)]
    env = {**os.environ, "TRIAD_CORPUS": str(corpus), "PYTHONPATH": f"{ROOT / 'benchmarks'}{os.pathsep}{ROOT}",
           "HAIKU_RAG_CONFIG_PATH": "", "XDG_DATA_HOME": str(cache_dir), "EVALUATIONS_JUDGE_GGUF": str(judge_gguf())}
    t0 = time.perf_counter()
    proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"{name} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    free = summary.get("reference_free") or {}
    names = ("faithfulness", "answer_relevance", "context_relevance")
    return {"system": system, "wall_s": seconds, "metrics": {m: summary["metrics"].get(m) for m in names},
            "n": {m: (free.get("metrics", {}).get(m) or {}).get("n") for m in names},
            "ci95": {m: (free.get("metrics", {}).get(m) or {}).get("ci95") for m in names},
            "judge_model_calls": free.get("model_calls"),
            "chat_and_embed_calls": {kind: (summary.get("model_calls") or {}).get(kind, {}).get("live")
                                     for kind in ("chat", "embed")},
            "exit": proc.returncode}


def targets(results: dict) -> dict[str, bool]:
    """The issue's goals, from the runs' metrics (a metric a run lacks fails its goal)."""
    copy, unrelated, rand = (results[s]["metrics"] for s in SYSTEMS)
    rerun = results["copy_sentence_rerun"]

    def known(*values: float | None) -> bool:
        return all(v is not None for v in values)

    return {
        "copy faithfulness >= 0.9": known(copy["faithfulness"]) and copy["faithfulness"] >= 0.9,
        "unrelated faithfulness <= 0.2": known(unrelated["faithfulness"]) and unrelated["faithfulness"] <= 0.2,
        "random context_relevance <= tfidf - 0.3": known(rand["context_relevance"], copy["context_relevance"])
        and rand["context_relevance"] <= copy["context_relevance"] - 0.3,
        "triad run <= 600 s": results["copy_sentence"]["wall_s"] <= 600,
        "cached re-run 0 model calls": rerun["judge_model_calls"] == 0
        and not any(rerun["chat_and_embed_calls"].values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--k", default="1", help="cut-offs (the largest is how many passages each system returns "
                                                 "and the judges read; SQuAD has one relevant paragraph per question, "
                                                 "so context relevance = precision@k <= 1/k)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-triad-"))
    data = work / "questions.jsonl"
    data.write_text("".join(json.dumps(q) + "\n" for q in questions(args.shared, args.n)))
    corpus = args.shared / "squad2_dev_cs224n" / "paragraphs.jsonl.gz"
    cache_dir = work / "data"  # a fresh data dir (caches start empty); the judge GGUF is the assembled one
    results = {name: run(work, name, name, corpus, data, cache_dir, args.k) for name in SYSTEMS}
    results["copy_sentence_rerun"] = run(work, "copy_sentence_rerun", "copy_sentence", corpus, data, cache_dir, args.k)
    summary = {"questions": args.n, "k": args.k, "corpus": "squad2_dev_cs224n/paragraphs.jsonl.gz", "runs": results,
               "load_average_1m_end": os.getloadavg()[0], "cpus": os.cpu_count(), "targets": targets(results)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "triad.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
