"""A real OpenAI-compatible model server for tests: llama-cpp-python's ``llama_cpp.server`` on 127.0.0.1.

``llama_server`` (session-scoped fixture, registered in conftest.py) starts

    python -m llama_cpp.server --model <SmolLM2-135M-Instruct GGUF> --host 127.0.0.1 --port <free> --n_ctx 2048

(through this file's ``__main__``: the same ``llama_cpp.server`` main, with llama.cpp's extra weight buffers off,
``use_extra_bufts = False``; a llama.cpp built with ``GGML_NATIVE`` on a CPU with AMX otherwise crashes on any
prompt longer than one token, see ``evaluations.judging.correctness.embedded.load_llama``), waits until ``GET /v1/models`` answers, yields a ``LlamaServer`` (``base_url`` = ``http://127.0.0.1:<port>/v1``,
``model_id`` = the id the server lists, ``log`` = its output so far) and kills the process on teardown. A server
that does not come up fails the test with its log: nothing is skipped.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

START_TIMEOUT_S = 120.0
N_CTX = 2048


@dataclass
class LlamaServer:
    base_url: str  # http://127.0.0.1:PORT/v1
    model_id: str
    log_path: Path
    process: subprocess.Popen

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_llama_server(model_path: Path, log_path: Path, *, n_ctx: int = N_CTX, threads: int | None = None) -> LlamaServer:
    """Start the server and wait for ``/v1/models``; ``pytest.fail`` with the log when it does not come up."""
    port = free_port()
    threads = threads or int(os.environ.get("EVALUATIONS_LLM_THREADS", "0")) or min(os.cpu_count() or 1, 2)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--model", str(model_path), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
           "--n_threads_batch", str(threads), "--seed", "0", "--model_alias", model_path.stem.lower(),
           "--verbose", "False"]
    log = log_path.open("wb")
    process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_TIMEOUT_S
    last_error = ""
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            response = httpx.get(base_url + "/models", timeout=2.0)
            if response.status_code == 200:
                ids = [m["id"] for m in response.json()["data"]]
                return LlamaServer(base_url=base_url, model_id=ids[0], log_path=log_path, process=process)
            last_error = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            last_error = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    stop_llama_server(process)
    pytest.fail(
        f"llama_cpp.server did not start (exit code {process.returncode}, last probe: {last_error})\n"
        f"command: {' '.join(cmd)}\n--- log ---\n{log_path.read_text(errors='replace')[-4000:]}",
        pytrace=False,
    )


def stop_llama_server(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """SmolLM2-135M-Instruct behind llama-cpp-python's OpenAI-compatible server, for the whole session."""
    from evaluations.models.llamacpp import gguf_path

    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    server = start_llama_server(gguf_path("smollm2-135m"), log_path)
    try:
        yield server
    finally:
        stop_llama_server(server.process)


def _serve() -> None:
    """``python -m llama_cpp.server`` with ``use_extra_bufts = False`` in the model's default parameters."""
    import llama_cpp.llama_cpp as api
    from llama_cpp.server.__main__ import main

    original = api.llama_model_default_params

    def defaults():
        params = original()
        params.use_extra_bufts = False
        return params

    api.llama_model_default_params = defaults
    main()


if __name__ == "__main__":
    _serve()
