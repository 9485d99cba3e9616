"""``--system http(s)://…``: an HTTP endpoint as the system under test.

One JSON POST per case with the request ``{"query", "k", "case_id"}``; the reply body is the response JSON,
validated against ``SystemResponse``. Timeouts and retries are the config's ``requests`` section
(``models.retry.async_client``: timeouts, dropped connections, 429 (Retry-After) and 5xx are retried with
backoff). Every run calls the endpoint: a reply is reused only by the same run when it is resumed
(``systems.replies``). A final non-2xx status, a body that is not JSON or a bad response is a per-case error naming
the URL and the case. Before any work the run checks that the endpoint's
host accepts a connection (``check``): a server that is down is one error (exit 2), not a failed case per question.
"""

from __future__ import annotations

from typing import Any

from evaluations.core.errors import EvaluationsError
from evaluations.systems.base import SystemRequest, SystemResponse
from evaluations.systems.callable import SystemResponseError, validate_response
from evaluations.systems.replies import RunReplies, through


class HTTPSystem:
    """A JSON-over-HTTP endpoint implementing the system contract (module docstring)."""

    def __init__(self, url: str, *, requests: Any | None = None, replies: RunReplies | None = None):
        from evaluations.core.config import Requests

        self.url = url
        self.id = url
        self.requests = requests or Requests()
        self.replies = replies  # this run's earlier replies (--resume), else None
        self._client = None

    def check(self, timeout: float = 10.0) -> None:
        """The endpoint's host accepts a TCP connection (no request is sent): a server that is down, or a wrong
        host or port, is one error before any work instead of a failed case per question."""
        import socket
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            socket.create_connection((parts.hostname or "", port), timeout=min(timeout, self.requests.timeout)).close()
        except (OSError, ValueError) as exc:
            raise EvaluationsError(f"cannot reach the system: {exc}", where=f"--system {self.url}",
                                   fix="start the server, or correct the URL's host and port") from None

    def _http(self):
        if self._client is None:
            from evaluations.models.retry import async_client

            self._client = async_client(self.requests)
        return self._client

    async def __call__(self, request: SystemRequest) -> SystemResponse:
        return await through(self.replies, request, lambda: self._post(request))

    async def _post(self, request: SystemRequest) -> SystemResponse:
        payload = request.model_dump()
        where = f"system {self.url}, case {request.case_id}"
        try:
            reply = await self._http().post(self.url, json=payload)
        except Exception as exc:  # transport errors after the retries
            import httpx2

            attempts = self.requests.retries + 1
            if isinstance(exc, httpx2.TimeoutException):
                raise EvaluationsError(
                    f"no answer within {self.requests.timeout:g} s (requests.timeout) in {attempts} attempt(s)",
                    where=where, fix="make the system answer sooner, or raise requests.timeout in the config") from None
            detail = str(exc) or "no detail"
            raise EvaluationsError(f"the request failed after {attempts} attempt(s): {type(exc).__name__}: {detail}"
                                   [:400], where=where,
                                   fix="check the server is up and answers POST requests at that URL") from None
        if reply.status_code >= 400:
            raise SystemResponseError(f"HTTP {reply.status_code}: {reply.text[:200]}", where=where,
                                      fix="the endpoint must answer a POST of the request JSON with 200 and JSON")
        try:
            raw = reply.json()
        except ValueError:
            raise SystemResponseError(f"the reply is not JSON: {reply.text[:200]!r}", where=where,
                                      fix="answer with a JSON object (Content-Type: application/json)") from None
        return validate_response(raw, self.id, request.case_id)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
