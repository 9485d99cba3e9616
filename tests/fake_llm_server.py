"""A small real HTTP server speaking Ollama's API and the OpenAI-compatible API, for tests.

Loopback only (127.0.0.1, port 0), one background thread, stopped when the ``with`` block or the
``fake_llm_server`` fixture ends. Behaviour is scripted by the test:

- ``responder(request_json) -> reply`` decides every chat answer (``/api/chat`` and
  ``/v1/chat/completions``). A reply is a ``str`` (assistant text), ``tool_call(name, args)`` /
  ``tool_calls(...)``, or a ``Fault`` for that one request. Default: echo the last user message.
- embeddings are hashed bags of words (``bow_vector``): texts sharing words are close.
- ``latency`` seconds are added to every request; ``inject(kind, times, path)`` queues faults:
  ``"500"``, ``"429"`` (with ``Retry-After: retry_after``), ``"timeout"`` (no reply for ``hang``
  seconds, then the connection is closed), ``"malformed"`` (a 200 with broken JSON), ``"drop"``
  (connection closed, no reply), ``"400"`` (a bad request, not worth retrying), ``"500-rejected"`` (a 500
  whose body says the request was refused, as llama-cpp-python's server answers an unknown response_format),
  ``"cut-stream"`` (a 200 event stream whose connection closes after its first event).
- ``fault_rate`` (0-1) makes that share of POST requests fail with a kind drawn from ``fault_kinds``
  (seeded by ``fault_seed``, so a run repeats); ``faults`` records every fault served as (kind, path).
- a model not in ``models`` gets a 404 like Ollama's ``model "x" not found, try pulling it first``.
- every request is recorded in ``requests`` (method, path, parsed JSON body, headers); a responder
  that raises is answered with HTTP 500 and its error kept in ``errors`` for the test to assert on.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

FAULTS = ("500", "429", "timeout", "malformed", "drop", "400", "500-rejected", "cut-stream")
TRANSIENT_FAULTS = FAULTS[:5]  # what a client should retry


@dataclass(frozen=True)
class Fault:
    kind: str  # one of FAULTS


@dataclass(frozen=True)
class ToolCalls:
    calls: tuple[tuple[str, Any], ...]  # (name, arguments: dict, or str sent verbatim)


def tool_call(name: str, arguments: Any) -> ToolCalls:
    """A reply calling one tool; ``arguments`` is a dict (JSON-encoded) or a raw string (sent as is)."""
    return ToolCalls(((name, arguments),))


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)  # lower-cased names
    fault: str | None = None  # the fault this request was answered with, if any


def bow_vector(text: str, dim: int) -> list[float]:
    """Hashed bag of words: each lower-cased word adds +-1 at md5(word) mod dim; L2-normalised."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.md5(word.encode()).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vec[index] += 1.0 if digest[4] & 1 else -1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


def _tokens(value: Any) -> int:
    return len(re.findall(r"\w+|[^\w\s]", json.dumps(value) if not isinstance(value, str) else value))


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


def echo_responder(request: dict[str, Any]) -> Any:
    return _last_user_text(request.get("messages", []))


@dataclass
class FakeLLMServer:
    models: tuple[str, ...] = ("llama3.2", "nomic-embed-text")
    responder: Callable[[dict[str, Any]], Any] = echo_responder
    latency: float = 0.0
    dim: int = 64
    requests: list[Recorded] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # responder exceptions (answered as HTTP 500)
    retry_after: float = 1.0  # seconds, sent with a "429" fault
    hang: float = 3.0  # seconds a "timeout" fault keeps the client waiting
    fault_rate: float = 0.0  # share of POST requests failing with a random kind from fault_kinds
    fault_kinds: tuple[str, ...] = TRANSIENT_FAULTS
    fault_seed: int = 0
    #: the OpenAI replies ("plain", "stream") that carry the first token's logprobs when a request asks for them
    #: (the reply's first word, log-probability 0); none by default, as many servers
    logprobs_in: tuple[str, ...] = ()
    faults: list[tuple[str, str]] = field(default_factory=list)  # every fault served: (kind, path)
    _faults: list[tuple[str, str | None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _rng: random.Random | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=5)
            self._httpd = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Ollama-style root URL (``http://127.0.0.1:PORT``)."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    # -- scripting and inspection -----------------------------------------------------------
    def inject(self, kind: str, times: int = 1, path: str | None = None) -> None:
        """Make the next ``times`` requests (to ``path`` if given) fail with ``kind``."""
        assert kind in FAULTS, kind
        with self._lock:
            self._faults.extend([(kind, path)] * times)

    def calls(self, path: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _take_fault(self, path: str, method: str = "POST") -> str | None:
        with self._lock:
            for i, (kind, only) in enumerate(self._faults):
                if only is None or only == path:
                    del self._faults[i]
                    self.faults.append((kind, path))
                    return kind
            if self.fault_rate and method == "POST":
                if self._rng is None:
                    self._rng = random.Random(self.fault_seed)
                if self._rng.random() < self.fault_rate:
                    kind = self._rng.choice(self.fault_kinds)
                    self.faults.append((kind, path))
                    return kind
        return None


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLMServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- plumbing ---------------------------------------------------------------------------
    def _send(self, status: int, payload: Any, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        path = self.path.split("?")[0]
        recorded = Recorded(method, path, body, {k.lower(): v for k, v in self.headers.items()})
        with self.fake._lock:
            self.fake.requests.append(recorded)
        if self.fake.latency:
            time.sleep(self.fake.latency)
        fault = self.fake._take_fault(path, method)
        if fault:
            recorded.fault = fault
            return self._fault(fault)
        route = _ROUTES.get((method, path))
        if route is None:
            return self._send(404, {"error": f"404 page not found: {method} {path}"})
        try:
            route(self, body if isinstance(body, dict) else {})
        except Exception as exc:  # a failing responder assertion: answer 500 and keep it for the test
            with self.fake._lock:
                self.fake.errors.append(f"{type(exc).__name__}: {exc}")
            self._send(500, {"error": f"responder failed: {type(exc).__name__}: {exc}"})

    def _fault(self, kind: str) -> None:
        if kind == "500":
            self._send(500, {"error": "internal server error (injected)"})
        elif kind == "429":
            self._send(429, {"error": "rate limited (injected)"}, headers={"Retry-After": f"{self.fake.retry_after:g}"})
        elif kind == "500-rejected":  # llama-cpp-python's server refusing a response_format it does not know
            self._send(500, {"error": {"message": "1 validation error: {'type': 'literal_error', 'loc': ('body', "
                                                  "'response_format', 'type'), 'msg': \"Input should be 'text' or "
                                                  "'json_object'\"}", "type": "internal_server_error"}})
        elif kind == "400":
            self._send(400, {"error": {"message": "bad request (injected)", "type": "invalid_request_error"}})
        elif kind == "timeout":
            time.sleep(self.fake.hang)
            self._drop()
        elif kind == "malformed":
            self._send(200, b'{"model": "x", "choices": [{"message": ')
        elif kind == "cut-stream":  # the headers promise more body than comes before the connection closes
            event = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                     "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
            data = b"data: " + json.dumps(event).encode() + b"\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data) + 100))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            self._drop()
        else:
            self._drop()

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _model_ok(self, model: str, openai: bool) -> bool:
        known = self.fake.models
        if model in known or model.removesuffix(":latest") in known:
            return True
        message = f'model "{model}" not found, try pulling it first'
        payload = {"error": {"message": message, "type": "api_error", "param": None, "code": None}} if openai else {
            "error": message
        }
        self._send(404, payload)
        return False

    def _reply(self, body: dict[str, Any]) -> Any:
        reply = self.fake.responder(body)
        if isinstance(reply, Fault):
            self._fault(reply.kind)
            return None
        return reply

    # -- Ollama API ------------------------------------------------------------------------
    def ollama_tags(self, body: dict[str, Any]) -> None:
        models = [{"name": f"{m}:latest", "model": f"{m}:latest", "size": 1, "digest": "0" * 64,
                   "modified_at": "2024-01-01T00:00:00Z", "details": {"format": "gguf"}} for m in self.fake.models]
        self._send(200, {"models": models})

    def ollama_embed(self, body: dict[str, Any]) -> None:
        model = body.get("model", "")
        if not self._model_ok(model, openai=False):
            return
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        self._send(200, {"model": model, "embeddings": [bow_vector(t, self.fake.dim) for t in texts],
                         "prompt_eval_count": sum(_tokens(t) for t in texts)})

    def ollama_chat(self, body: dict[str, Any]) -> None:
        model = body.get("model", "")
        if not self._model_ok(model, openai=False):
            return
        reply = self._reply(body)
        if reply is None:
            return
        message: dict[str, Any] = {"role": "assistant", "content": ""}
        if isinstance(reply, ToolCalls):
            message["tool_calls"] = [{"function": {"name": n, "arguments": a if isinstance(a, dict) else json.loads(a)}}
                                     for n, a in reply.calls]
        else:
            message["content"] = str(reply)
        out = {"model": model, "created_at": "2024-01-01T00:00:00Z", "message": message, "done": True,
               "done_reason": "stop", "prompt_eval_count": _tokens(body.get("messages", [])),
               "eval_count": _tokens(message)}
        if body.get("stream", True):  # Ollama streams NDJSON unless told otherwise
            lines = [{**out, "done": False}, {**out, "message": {"role": "assistant", "content": ""}}]
            data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
            return self._send(200, data, "application/x-ndjson")
        self._send(200, out)

    # -- OpenAI-compatible API -------------------------------------------------------------
    def openai_models(self, body: dict[str, Any]) -> None:
        self._send(200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                                                    for m in self.fake.models]})

    def openai_embeddings(self, body: dict[str, Any]) -> None:
        model = body.get("model", "")
        if not self._model_ok(model, openai=True):
            return
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        data = [{"object": "embedding", "index": i, "embedding": bow_vector(t, self.fake.dim)}
                for i, t in enumerate(texts)]
        tokens = sum(_tokens(t) for t in texts)
        self._send(200, {"object": "list", "model": model, "data": data,
                         "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def openai_chat(self, body: dict[str, Any]) -> None:
        model = body.get("model", "")
        if not self._model_ok(model, openai=True):
            return
        reply = self._reply(body)
        if reply is None:
            return
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if isinstance(reply, ToolCalls):
            finish = "tool_calls"
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function",
                 "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)}}
                for i, (n, a) in enumerate(reply.calls)
            ]
        else:
            message["content"] = reply if isinstance(reply, str) else json.dumps(reply)
        prompt, completion = _tokens(body.get("messages", [])), _tokens(message)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        head = {"id": f"chatcmpl-{len(self.fake.requests)}", "created": 0, "model": model}
        words = (message["content"] or "").split()
        logprobs = None
        if body.get("logprobs") and words and ("stream" if body.get("stream") else "plain") in self.fake.logprobs_in:
            first = {"token": words[0], "logprob": 0.0, "bytes": None}
            logprobs = {"content": [{**first, "top_logprobs": [first]}]}
        if body.get("stream"):
            delta = dict(message, content=message["content"] or "")
            if "tool_calls" in delta:
                delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(delta["tool_calls"])]
            chunks = [
                {**head, "object": "chat.completion.chunk",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": None, "logprobs": logprobs}]},
                {**head, "object": "chat.completion.chunk",
                 "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
            ]
            data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            return self._send(200, data, "text/event-stream")
        self._send(200, {**head, "object": "chat.completion",
                         "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": logprobs}],
                         "usage": usage})


_ROUTES: dict[tuple[str, str], Callable[[_Handler, dict[str, Any]], None]] = {
    ("GET", "/api/tags"): _Handler.ollama_tags,
    ("POST", "/api/embed"): _Handler.ollama_embed,
    ("POST", "/api/chat"): _Handler.ollama_chat,
    ("GET", "/v1/models"): _Handler.openai_models,
    ("POST", "/v1/embeddings"): _Handler.openai_embeddings,
    ("POST", "/v1/chat/completions"): _Handler.openai_chat,
}


@pytest.fixture
def fake_llm_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def closed_port_url() -> str:
    """A loopback URL nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
