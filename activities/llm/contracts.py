"""The model provider interface: messages in, one reply out (DESIGN.md "Models").

Every type here is a pydantic model so that requests and replies can cross
Temporal as activity inputs and results (pydantic data converter).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

DeltaCallback = Callable[[str], Awaitable[None]]
"""Called with each piece of reply text as it is produced (streaming)."""


class ToolCall(BaseModel):
    """A call the model asks for; `name` is always the tool's own id (dots included)."""

    id: str
    name: str
    arguments: dict[str, Any]


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    # Assistant messages: the calls the model asked for in that turn.
    tool_calls: list[ToolCall] = Field(default_factory=list)
    # Tool messages: which call this is the result of.
    tool_call_id: str | None = None


class ToolSpec(BaseModel):
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ModelReply(BaseModel):
    content: str
    tool_calls: list[ToolCall]
    finish_reason: str  # "stop" | "tool_calls" | "length" | ... as the provider reported it
    # Recorded apart because endpoints serve aliases (gpt-4o → gpt-4o-2024-08-06).
    requested_model: str
    served_model: str
    usage: Usage


class ModelError(Exception):
    """A model call failed: transport, HTTP status, or a reply we cannot use.

    Messages never contain the API key, so they are safe to journal and show.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

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
