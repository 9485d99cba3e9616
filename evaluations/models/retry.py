"""HTTP clients with a per-call timeout and retries, for every model and embedding server call.

Built on pydantic-ai's tenacity transports (``pydantic_ai.retries``); no hand-written loop. Retried:

- timeouts and dropped connections (``httpx.TimeoutException``, ``NetworkError``, ``RemoteProtocolError``);
- HTTP 429 and 5xx; a 429's ``Retry-After`` is honoured (capped at ``requests.max_retry_after``);
- a 200 whose JSON body does not parse (a truncated reply), so it never reaches the client as a crash.

Other 4xx (bad request, unknown model, bad key) are answered at once. Wait before retry n (1-based)::

    wait_n = min(max_backoff, backoff * 2^(n-1) + U(0, backoff))      (tenacity.wait_exponential_jitter)

After ``requests.retries`` retries the last reply is handed to the client as it came (so a final 500 is
the provider's usual HTTP error), or the last transport error is raised. ``RETRY_STATS`` counts retries
by reason, for reports and benchmarks.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

import httpx
from pydantic_ai.retries import AsyncTenacityTransport, RetryConfig, TenacityTransport, wait_retry_after
from tenacity import RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential_jitter

if TYPE_CHECKING:
    from ..config import Requests


class RetryableStatus(httpx.HTTPStatusError):
    """HTTP 429 or 5xx: worth another attempt."""


class MalformedResponse(httpx.HTTPStatusError):
    """A JSON reply whose body does not parse (cut off or garbled)."""


_TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, RetryableStatus,
              MalformedResponse)


class RetryStats:
    """Thread-safe counters: ``retries`` by reason (exception class name) and ``gave_up`` calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.retries: Counter[str] = Counter()
        self.gave_up = 0

    def record_retry(self, reason: str) -> None:
        with self._lock:
            self.retries[reason] += 1

    def record_give_up(self) -> None:
        with self._lock:
            self.gave_up += 1

    def reset(self) -> None:
        with self._lock:
            self.retries.clear()
            self.gave_up = 0

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {"retries": sum(self.retries.values()), "by_reason": dict(sorted(self.retries.items())),
                    "gave_up": self.gave_up}


RETRY_STATS = RetryStats()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, httpx.HTTPStatusError) and not isinstance(exc, MalformedResponse):
        return f"HTTP {exc.response.status_code}"
    return type(exc).__name__


def check_response(response: httpx.Response) -> None:
    """Raise ``RetryableStatus`` for 429/5xx, ``MalformedResponse`` for unparseable JSON (body already read)."""
    status = response.status_code
    if status == 429 or status >= 500:
        raise RetryableStatus(f"HTTP {status} from {response.request.url}", request=response.request,
                              response=response)
    if status == 200 and response.headers.get("content-type", "").startswith("application/json"):
        try:
            json.loads(response.content)
        except ValueError as exc:
            raise MalformedResponse(f"malformed JSON from {response.request.url}: {exc}", request=response.request,
                                    response=response) from None


def _read_then_check(response: httpx.Response) -> None:
    response.read()  # a body cut off mid-way raises here, inside the retry
    check_response(response)


class _ReadingTransport(httpx.AsyncBaseTransport):
    """Reads non-streamed bodies inside the retry (``validate_response`` is synchronous and cannot await)."""

    def __init__(self, wrapped: httpx.AsyncBaseTransport) -> None:
        self.wrapped = wrapped

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.wrapped.handle_async_request(request)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            await response.aread()
        return response

    async def aclose(self) -> None:
        await self.wrapped.aclose()


def _before_sleep(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    RETRY_STATS.record_retry(_reason(exc) if exc else "unknown")


def _give_up(state: RetryCallState) -> httpx.Response:
    """Retries exhausted: hand the last reply to the client as it is, or raise the last transport error."""
    RETRY_STATS.record_give_up()
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response
    if exc is not None:
        raise exc
    return state.outcome.result()


def retry_config(requests: Requests) -> RetryConfig:
    """The tenacity arguments for ``requests`` (the config section): what to retry, how long to wait, when to stop."""
    backoff = wait_exponential_jitter(initial=requests.backoff, max=requests.max_backoff, jitter=requests.backoff)
    return RetryConfig(
        retry=retry_if_exception(lambda exc: isinstance(exc, _TRANSIENT)),
        wait=wait_retry_after(fallback_strategy=backoff, max_wait=requests.max_retry_after),
        stop=stop_after_attempt(requests.retries + 1),
        before_sleep=_before_sleep,
        retry_error_callback=_give_up,
    )


def _timeout(requests: Requests) -> httpx.Timeout:
    return httpx.Timeout(requests.timeout)


def async_client(requests: Requests) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` with the timeout and retries of ``requests`` (for pydantic-ai providers)."""
    transport = AsyncTenacityTransport(retry_config(requests), _ReadingTransport(httpx.AsyncHTTPTransport()),
                                       validate_response=check_response)
    return httpx.AsyncClient(transport=transport, timeout=_timeout(requests))


def sync_transport(requests: Requests) -> httpx.BaseTransport:
    """A synchronous transport retrying as ``async_client`` does (for the embedding clients)."""
    return TenacityTransport(retry_config(requests), httpx.HTTPTransport(), validate_response=_read_then_check)


def sync_client(requests: Requests) -> httpx.Client:
    return httpx.Client(transport=sync_transport(requests), timeout=_timeout(requests))
