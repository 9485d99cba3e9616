"""Log-probability requests made as streamed requests, for servers that price logprobs by the prompt's length.

The yes/no judges (``judging.checkers.served_checker``, ``judging.correctness.llm``) ask a served model for one
word and read P(yes) from the first token's ``top_logprobs``. llama-cpp-python's OpenAI-compatible server answers
such a request, when it is not streamed, by turning the logits of every position of the prompt into
log-probabilities (``Llama.logits_to_logprobs(self._scores)``) before it keeps the generated tokens' rows: a cost in
prompt length × vocabulary that a streamed request of the same question does not pay (it converts the generated
token's row alone). Measured on its server with a ~600-token prompt already in its cache: 0.20-0.64 s with
logprobs, 0.07 s streamed with the same logprobs, 0.04 s without (benchmarks/NOTES.md).

The first request of a cold prompt pays the most: 13.4 s plainly against 4.4 s streamed for a 460-token prompt on
Qwen2.5-Coder-0.5B (llama-cpp-python, one thread; the rest is that conversion).

``LogprobsStreamed`` wraps a served chat model. A request that asks for logprobs (``openai_logprobs``) is made as a
streamed request, gathered into the one ``ModelResponse`` pydantic-ai builds from the stream (its text, usage and
``provider_details['logprobs']``). Every other request passes through. When the first stream carries no logprobs
(a server that gives none, or gives them only in plain replies) or is refused (an HTTP error), that question is
asked again plainly and every later one too, so no server's P(yes) is lost to the stream; a server without logprobs
costs one request more, once. A stream cut off mid-way (a dropped connection: ``ModelConnectionError``) is asked
again plainly, where the request retries apply (``models.retry`` retries a plain reply's body, not a stream's), and
says nothing about the server: the next question is streamed again. It sits under ``models.cache.CachedModel``:
cache keys are those of the wrapped model, so what was cached before is replayed as before.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any

from pydantic_ai.models.wrapper import WrapperModel

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models import Model, ModelRequestParameters
    from pydantic_ai.settings import ModelSettings

__all__ = ["LogprobsStreamed"]


def _has_logprobs(response: ModelResponse) -> bool:
    return bool((response.provider_details or {}).get("logprobs"))


class LogprobsStreamed(WrapperModel):
    """``request`` with logprobs asked -> a streamed request gathered into one response (module docstring)."""

    def __init__(self, wrapped: Model) -> None:
        super().__init__(wrapped)
        #: None until a stream showed whether it carries the server's logprobs; True: stream them; False: never
        self.streams: bool | None = None
        #: while ``streams`` is None, one logprobs question at a time per event loop: the questions asked at once
        #: wait for the first to show what a stream carries (a server without them is asked one question twice)
        self._first: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        args = (messages, model_settings, model_request_parameters)
        if not (model_settings or {}).get("openai_logprobs"):
            return await self.wrapped.request(*args)
        if self.streams is None:
            async with self._first.setdefault(asyncio.get_running_loop(), asyncio.Lock()):
                if self.streams is None:
                    return await self._streamed(*args)
        return await (self._streamed(*args) if self.streams else self.wrapped.request(*args))

    async def _streamed(self, *args: Any) -> ModelResponse:
        """The question streamed; asked again plainly when the stream fails or carries no logprobs."""
        from pydantic_ai.exceptions import ModelConnectionError, ModelHTTPError

        try:
            async with self.wrapped.request_stream(*args) as stream:
                async for _ in stream:
                    pass
        except ModelConnectionError:  # cut off mid-way: the retries (models.retry) read a plain reply, not a stream
            return await self.wrapped.request(*args)
        except ModelHTTPError:  # asked again plainly (where retries apply); a first stream refused: never stream
            self.streams = self.streams or False
            return await self.wrapped.request(*args)
        response = stream.get()
        if _has_logprobs(response):
            self.streams = True
            return response
        self.streams = False  # no logprobs in the stream: this question is asked again plainly, and the later ones
        return await self.wrapped.request(*args)
