"""HTTP clients with a per-call timeout and retries, for every model and embedding server call.

Built on pydantic-ai's tenacity transports (``pydantic_ai.retries``); no hand-written loop. Retried:

- timeouts and dropped connections (``TimeoutException``, ``NetworkError``, ``RemoteProtocolError``);
- HTTP 429 and 5xx; a 429's ``Retry-After`` is honoured (capped at ``requests.max_retry_after``); but not a 5xx
  whose body says the request itself was refused (``rejects_request``: llama-cpp-python's server answers an
  unsupported ``response_format`` with HTTP 500 and a validation error), which no retry can change;
- a 200 whose JSON body does not parse (a truncated reply), so it never reaches the client as a crash.

Other 4xx (bad request, unknown model, bad key) are answered at once. Wait before retry n (1-based)::

    wait_n = min(max_backoff, backoff * 2^(n-1) + U(0, backoff))      (tenacity.wait_exponential_jitter)

After ``requests.retries`` retries the last reply is handed to the client as it came (so a final 500 is
the provider's usual HTTP error), or the last transport error is raised. ``RETRY_STATS`` counts retries
by reason, for reports and benchmarks.

The openai SDK (chat models, OpenAI-compatible embeddings) speaks ``httpx2``: ``async_client`` and
``sync_client``. The ``ollama`` client speaks ``httpx``: ``legacy_sync_transport``.
"""

from __future__ import annotations

import json
import threading
import warnings
from collections import Counter, deque
from typing import TYPE_CHECKING, Any

import httpx
import httpx2
from pydantic_ai.retries import AsyncHTTPX2TenacityTransport, HTTPX2TenacityTransport, RetryConfig, wait_retry_after
from tenacity import RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential_jitter

if TYPE_CHECKING:
    from evaluations.core.config import Requests


class RetryableStatus(httpx2.HTTPStatusError):
    """HTTP 429 or 5xx: worth another attempt (``.response`` is the reply, ``httpx2`` or ``httpx``)."""


class MalformedResponse(httpx2.HTTPStatusError):
    """A JSON reply whose body does not parse (cut off or garbled)."""


_TRANSIENT = (
    httpx2.TimeoutException, httpx2.NetworkError, httpx2.RemoteProtocolError,
    httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError,
    RetryableStatus, MalformedResponse,
)


class RetryStats:
    """Thread-safe counters: ``retries`` by reason, the ``waits`` chosen (reason, seconds; the last 1,000)
    and ``gave_up`` (calls that used every retry)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.retries: Counter[str] = Counter()
        self.waits: deque[tuple[str, float]] = deque(maxlen=1000)
        self.gave_up = 0

    def record_retry(self, reason: str, wait: float) -> None:
        with self._lock:
            self.retries[reason] += 1
            self.waits.append((reason, wait))

    def record_give_up(self) -> None:
        with self._lock:
            self.gave_up += 1

    def reset(self) -> None:
        with self._lock:
            self.retries.clear()
            self.waits.clear()
            self.gave_up = 0

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {"retries": sum(self.retries.values()), "by_reason": dict(sorted(self.retries.items())),
                    "gave_up": self.gave_up}


RETRY_STATS = RetryStats()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RetryableStatus):
        return f"HTTP {exc.response.status_code}"
    return type(exc).__name__


#: words in an error body that say the server refused the request's form (tools, response_format, a parameter)
REJECTION_WORDS = ("validation", "unsupported", "not supported", "input should be", "invalid")


def rejects_request(status: int, body: str) -> bool:
    """The server refused this request's form: HTTP 400/422, or a 5xx whose body says so (llama-cpp-python's
    server answers 500 to a ``response_format`` it does not know). Not: auth, a missing model, overload, a crash."""
    if status in (400, 422):
        return True
    return status >= 500 and any(word in body.lower() for word in REJECTION_WORDS)


def _body(response: httpx2.Response | httpx.Response) -> str:
    try:
        return response.content.decode("utf-8", "replace")
    except (httpx2.ResponseNotRead, httpx.ResponseNotRead):  # a streamed reply: its body is the client's to read
        return ""


def check_response(response: httpx2.Response | httpx.Response) -> None:
    """Raise ``RetryableStatus`` for 429/5xx (not for a refused request, ``rejects_request``), ``MalformedResponse``
    for unparseable JSON (body already read)."""
    status = response.status_code
    if status >= 500 and rejects_request(status, _body(response)):
        return
    if status == 429 or status >= 500:
        raise RetryableStatus(f"HTTP {status} from {response.request.url}", request=response.request,
                              response=response)
    if status == 200 and response.headers.get("content-type", "").startswith("application/json"):
        try:
            json.loads(response.content)
        except ValueError as exc:
            raise MalformedResponse(f"malformed JSON from {response.request.url}: {exc}", request=response.request,
                                    response=response) from None


def _streamed(response: httpx2.Response | httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


def _read_then_check(response: httpx2.Response | httpx.Response) -> None:
    if not _streamed(response):
        response.read()  # a body cut off mid-way raises here, inside the retry
    check_response(response)


class _ReadingTransport(httpx2.AsyncBaseTransport):
    """Reads non-streamed bodies inside the retry (``validate_response`` is synchronous and cannot await)."""

    def __init__(self, wrapped: httpx2.AsyncBaseTransport) -> None:
        self.wrapped = wrapped

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.wrapped.handle_async_request(request)
        if not _streamed(response):
            await response.aread()
        return response

    async def aclose(self) -> None:
        await self.wrapped.aclose()


def _before_sleep(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    RETRY_STATS.record_retry(_reason(exc) if exc else "unknown", state.upcoming_sleep)


def _give_up(state: RetryCallState) -> Any:
    """Retries exhausted: hand the last reply to the client as it is, or raise the last transport error."""
    RETRY_STATS.record_give_up()
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, httpx2.HTTPStatusError):
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


def async_client(requests: Requests) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` with the timeout and retries of ``requests`` (for the openai SDK / pydantic-ai)."""
    transport = AsyncHTTPX2TenacityTransport(retry_config(requests), _ReadingTransport(httpx2.AsyncHTTPTransport()),
                                             validate_response=check_response)
    return httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(requests.timeout))


def sync_client(requests: Requests) -> httpx2.Client:
    """An ``httpx2.Client`` retrying as ``async_client`` does (for the openai SDK's embeddings)."""
    transport = HTTPX2TenacityTransport(retry_config(requests), httpx2.HTTPTransport(),
                                        validate_response=_read_then_check)
    return httpx2.Client(transport=transport, timeout=httpx2.Timeout(requests.timeout))


def legacy_sync_transport(requests: Requests) -> httpx.BaseTransport:
    """The same retries as an ``httpx`` transport, for the ``ollama`` client (which is built on ``httpx``)."""
    from pydantic_ai.retries import TenacityTransport

    with warnings.catch_warnings():  # deprecated for httpx2 users; the ollama client is not one
        warnings.simplefilter("ignore")
        return TenacityTransport(retry_config(requests), httpx.HTTPTransport(), validate_response=_read_then_check)
