"""Log-probability requests made as streamed requests, for servers that price logprobs by the prompt's length.

The yes/no judges (``judging.checkers.served_checker``, ``judging.correctness.llm``) ask a served model for one
word and read P(yes) from the first token's ``top_logprobs``. llama-cpp-python's OpenAI-compatible server answers
such a request, when it is not streamed, by turning the logits of every position of the prompt into
log-probabilities (``Llama.logits_to_logprobs(self._scores)``) before it keeps the generated tokens' rows: a cost in
prompt length × vocabulary that a streamed request of the same question does not pay (it converts the generated
token's row alone). Measured on its server with a ~600-token prompt already in its cache: 0.20-0.64 s with
logprobs, 0.07 s streamed with the same logprobs, 0.04 s without (benchmarks/NOTES.md).

``LogprobsStreamed`` wraps a served chat model. The first request that asks for logprobs (``openai_logprobs``) is
made plainly; when its reply carries them, the later ones are made as streamed requests, each gathered into the one
``ModelResponse`` pydantic-ai builds from the stream (its text, usage and ``provider_details['logprobs']``). Every
other request passes through, and so does every request to a server that gave no logprobs. A server whose streamed
reply drops the logprobs its plain reply gave is asked plainly from then on (that question is asked again), so no
server's P(yes) is lost to the stream. A stream cut off mid-way (a dropped connection: ``ModelConnectionError``) is
asked again plainly, where the request retries apply (``models.retry`` retries a plain reply's body, not a
stream's). It sits under ``models.cache.CachedModel``: cache keys are those of the
wrapped model, so what was cached before is replayed as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_ai.models.wrapper import WrapperModel

if TYPE_CHECKING:
    from collections.abc import Awaitable

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
        #: None until a plain reply showed whether the server gives logprobs; True: stream them; False: never
        self.streams: bool | None = None

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        from pydantic_ai.exceptions import ModelConnectionError

        def plain() -> Awaitable[ModelResponse]:
            return self.wrapped.request(messages, model_settings, model_request_parameters)

        if self.streams is False or not (model_settings or {}).get("openai_logprobs"):
            return await plain()
        if self.streams is None:
            response = await plain()
            self.streams = _has_logprobs(response)
            return response
        try:
            async with self.wrapped.request_stream(messages, model_settings, model_request_parameters) as stream:
                async for _ in stream:
                    pass
        except ModelConnectionError:  # cut off mid-way: the retries (models.retry) read a plain reply, not a stream
            return await plain()
        response = stream.get()
        if _has_logprobs(response):
            return response
        self.streams = False  # the stream drops what a plain reply gave: this question is asked again, plainly
        return await plain()
