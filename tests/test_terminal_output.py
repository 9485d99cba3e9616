"""What a person sees in a terminal: only this tool's output. pydantic-ai 2.62 prints a first-run banner (its
tracing service, links, "goes away once observability is on") to a terminal when the first agent of a process runs,
unless ``PYDANTIC_AI_NO_BANNER`` is set; ``evaluations`` sets it (a value the user set is kept). The banner is
never shown under pytest or CI, so the command runs here in a pseudo-terminal without those variables."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys

from fake_llm_server import FakeLLMServer, tool_call
from test_cli_retrieval import REPO


def _in_a_terminal(args: list[str], env: dict[str, str], cwd) -> tuple[int, str]:
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "evaluations", *args], stdin=subprocess.DEVNULL, stdout=follower,
                            stderr=follower, env=env, cwd=cwd)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed: the command has exited
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    text = b"".join(chunks).decode("utf-8", errors="replace")
    return proc.wait(timeout=120), re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text)  # what a person reads


def test_a_run_that_asks_an_agent_prints_no_library_banner_to_a_terminal(tmp_path):
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "d1", "text": "The Eiffel Tower is in Paris."}) + "\n")
    (tmp_path / "questions.jsonl").write_text(json.dumps({"id": "q1", "query": "Where is the Eiffel Tower?"}) + "\n")

    def responder(request):
        tool = request["tools"][0]["function"]
        return tool_call(tool["name"], {"answer": "In Paris.", "cited_ids": ["d1"], "confidence": 0.9})

    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "CI", "PYDANTIC_AI_NO_BANNER")}
    env |= {"COLUMNS": "80", "PYTHONPATH": str(REPO), "EVALUATIONS_REFERENCE_FREE": "none"}
    with FakeLLMServer(models=("qa-llm",), responder=responder) as server:
        (tmp_path / "c.yaml").write_text(
            f"qa: {{model: {{provider: openai, name: qa-llm, base_url: '{server.openai_url}'}}}}\n")
        code, shown = _in_a_terminal(["run", "questions.jsonl", "--corpus", "docs.jsonl", "--search-mode", "fts",
                                      "--config", "c.yaml", "--no-cache", "--no-progress", "--out", "run"],
                                     env, tmp_path)
        assert code == 0, shown
        assert server.calls("/v1/chat/completions"), "the QA agent never ran: nothing for a banner to follow"
    assert "model calls: 1 (cached 0)" in shown, shown  # the QA agent answered in this process
    assert "observability" not in shown and "PYDANTIC_AI_NO_BANNER" not in shown and "logfire" not in shown, shown
