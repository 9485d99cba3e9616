"""A design probe for issue 46 (nothing here is shipped): yes/no judge questions asked as continuations of the QA
conversation, against the same questions asked as the judges ask them now (each its own prompt), on llama.cpp's own
server (llama-cpp-python) with SmolLM2-135M, 2 threads, one request at a time.

    python benchmarks/served_continuation.py [--cases 4]

Per RepliQA case: the QA request (a short system prompt, the document cut into 5 passages of 1,000 characters,
the question; up to 64 tokens), then 6 one-token yes/no questions with the first token's logprobs, streamed as
``models.streamed.LogprobsStreamed`` asks them: "Is passage [k] needed …" for each passage and "Is this statement
supported …" for the answer, (a) ``continued``: appended to the QA conversation after its answer, so the server's
prompt cache holds the passages; (b) ``own``: each as its own prompt, ``PASSAGE_SYSTEM`` + the judge's rubric +
the passage + the question, as the served checker asks now. Seconds are the client's wall time. Only time is
measured: whether a continued question judges as well is not (that needs a refit and labels on a served model).
Writes ``benchmarks/results/served_continuation.json``.
"""
import argparse
import datetime as dt
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "repliqa_samples" / "repliqa_sample20.jsonl.gz"
RESULTS = ROOT / "benchmarks" / "results" / "served_continuation.json"


class Server:
    """One llama.cpp server and its client; ``ask`` returns (seconds, the reply's text)."""

    def __init__(self):
        sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
        from llama_server import start_llama_server

        from evaluations.models.llamacpp import gguf_path

        self.server = start_llama_server(gguf_path("smollm2-135m"), Path(tempfile.mkdtemp()) / "server.log", threads=2)
        self.client = httpx.Client(base_url=self.server.base_url, timeout=600)

    def stop(self) -> None:
        from llama_server import stop_llama_server

        stop_llama_server(self.server.process)

    def ask(self, messages: list[dict], max_tokens: int, logprobs: bool = False) -> tuple[float, str]:
        body = {"model": self.server.model_id, "messages": messages, "max_tokens": max_tokens, "temperature": 0}
        started = time.perf_counter()
        if not logprobs:
            reply = self.client.post("/chat/completions", json=body)
            reply.raise_for_status()
            return time.perf_counter() - started, reply.json()["choices"][0]["message"]["content"]
        # streamed, as models.streamed.LogprobsStreamed asks: the server converts only the new token's logits
        body |= {"logprobs": True, "top_logprobs": 5, "stream": True}
        text = ""
        with self.client.stream("POST", "/chat/completions", json=body) as reply:
            reply.raise_for_status()
            for line in reply.iter_lines():
                if line.startswith("data: ") and line[6:].strip() != "[DONE]":
                    text += json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
        return time.perf_counter() - started, text


def one_case(server: Server, row: dict, rubrics: dict[str, str]) -> dict[str, float]:
    """The seconds of one case's QA request, its 6 questions continued, and the same questions as own prompts."""
    from evaluations.judging.checkers.yesno import PASSAGE_SYSTEM

    doc = row["document_extracted"]
    passages = [doc[i:i + 1000] for i in range(0, min(len(doc), 5000), 1000)]
    context = "\n\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages))
    qa = [{"role": "system", "content": "Answer the question from the context. Be brief."},
          {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {row['question']}"}]
    answering, answer = server.ask(qa, 64)
    statement = answer[:200]
    conversation = qa + [{"role": "assistant", "content": answer}]
    asks = [f"Is passage [{i + 1}] needed to answer the question? Answer yes or no." for i in range(len(passages))]
    asks.append(f"Is this statement supported by the context: \"{statement}\"? Answer yes or no.")
    continued = sum(server.ask(conversation + [{"role": "user", "content": a}], 1, logprobs=True)[0] for a in asks)
    own = [("context_relevance", f"Passage:\n{p}\n\nQuestion: {row['question']}\nIs the passage needed to answer "
                                 "the question? Answer yes or no.") for p in passages]
    own.append(("faithfulness", f"Passage:\n{passages[0]}\n\nStatement: {statement}\nIs the statement supported by "
                                "the passage? Answer yes or no."))
    alone = sum(server.ask([{"role": "system", "content": f"{PASSAGE_SYSTEM}\n\n{rubrics[judge]}"},
                            {"role": "user", "content": text}], 1, logprobs=True)[0] for judge, text in own)
    return {"qa": answering, "continued": continued, "own": alone}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=4)
    args = parser.parse_args()
    rows = [json.loads(line) for line in gzip.open(SOURCE, "rt")][:args.cases]
    rubrics = {judge: (ROOT / "judges" / f"{judge}.md").read_text() for judge in ("context_relevance", "faithfulness")}
    server, cases = Server(), []
    try:
        for row in rows:  # the next case's QA request comes after these: the cache is as it is in a run
            cases.append(one_case(server, row, rubrics))
            print(json.dumps({k: round(v, 2) for k, v in cases[-1].items()}), file=sys.stderr, flush=True)
    finally:
        server.stop()
    sums = {k: round(sum(c[k] for c in cases), 1) for k in ("qa", "continued", "own")}
    result = {"model": "SmolLM2-135M-Instruct (llama.cpp's server, 2 threads)", "cases": len(cases),
              "questions_per_case": 6, "seconds": sums,
              "per_case": {k: [round(c[k], 2) for c in cases] for k in sums},
              "continued_over_answering": round(sums["continued"] / sums["qa"], 2),
              "own_over_answering": round(sums["own"] / sums["qa"], 2), "date": dt.date.today().isoformat()}
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
