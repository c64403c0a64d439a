"""The model provider interface: messages in, one reply out (DESIGN.md "Models").

The payload types live in `runtime.llm.contracts` (workflows and both runtimes use
them too); they are re-exported here for the providers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from runtime.llm.contracts import ChatMessage, ModelReply, ToolCall, ToolSpec, Usage

DeltaCallback = Callable[[str], Awaitable[None]]
"""Called with each piece of reply text as it is produced (streaming)."""


class ModelError(Exception):
    """A model call failed: transport, HTTP status, or a reply we cannot use.

    Messages never contain the API key, so they are safe to journal and show.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        timed_out: bool = False,
        answered: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        # Seconds the server asked us to wait (`Retry-After` of a 429 or 503), if it said.
        self.retry_after = retry_after
        # No answer in time (connect, read or write timeout), as opposed to a refusal.
        self.timed_out = timed_out
        # The server had answered (a 2xx) when the call failed: a reply cut short or
        # unusable, whose tokens the provider may well have billed.
        self.answered = answered

    @property
    def retryable(self) -> bool:
        """Whether trying again may help.

        True without a status (transport failure, or a malformed reply that a new
        sample may fix) and for 408/409/429/5xx; false for the other statuses
        (bad key, bad request), which the same request would meet again.
        """
        if self.status is None:
            return True
        return self.status in (408, 409, 429) or self.status >= 500


class ModelProvider(Protocol):
    name: str

    async def complete(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        """One model turn: text and/or tool calls, streaming text to `on_delta`.

        Raises:
            ModelError: when the provider fails or returns an unusable reply.
        """
        ...


__all__ = [
    "ChatMessage",
    "DeltaCallback",
    "ModelError",
    "ModelProvider",
    "ModelReply",
    "ToolCall",
    "ToolSpec",
    "Usage",
]
