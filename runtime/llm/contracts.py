"""The payloads of a model call (DESIGN.md "Models"): messages in, one reply out.

One model per concept: `ToolCall` is the tool call a model asked for, everywhere —
in replies, in the transcript, in workflow inputs (session and agent-tools steps)
and in the tools that run it. Every type is a pydantic model, so requests and
replies cross Temporal as activity inputs and results (pydantic data converter).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    """A call the model asks for; `name` is always the tool's own id (dots included)."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ImageRef(BaseModel):
    """An image a message shows the model, by reference (a stored screenshot's
    `<stream>#<seq>`), so transcripts and workflow histories never carry its bytes.
    `data_url` is filled only in the model step's own request, just before the call."""

    ref: str
    data_url: str | None = None


class ChatMessage(BaseModel):
    """One message of a conversation with a model, as transcripts store it and a model
    call sends it."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    # Assistant messages: the calls the model asked for in that turn.
    tool_calls: list[ToolCall] = Field(default_factory=list)
    # Tool messages: which call this is the result of.
    tool_call_id: str | None = None
    # Tool messages: images the call produced (windows_screenshot), shown to the model.
    images: list[ImageRef] = Field(default_factory=list)


class ToolSpec(BaseModel):
    """A tool offered to the model: its name, what it does, and its arguments' schema."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object


class UsageSource(StrEnum):
    """Where an attempt's token counts come from (`usageSource` of an attempt)."""

    REPORTED = "reported"  # the provider's own counts (`usage`), or the built-in model's
    ESTIMATED = "estimated"  # the provider reported none: counted by agentrt from the text


class Usage(BaseModel):
    """The tokens one model call consumed, and where their counts come from."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of `prompt_tokens`, those the provider read from its prompt cache (OpenAI's
    # `usage.prompt_tokens_details.cached_tokens`), billed at the cached-input price.
    # Defaults to 0: replies recorded in workflow histories before it was counted.
    cached_prompt_tokens: int = 0
    # Defaults to reported: replies recorded before agentrt estimated what was missing.
    source: UsageSource = UsageSource.REPORTED


class ModelReply(BaseModel):
    """A model's answer to one call: its text, the tool calls it asked for, why it
    stopped, the model asked for and the one that served, and the tokens it took."""

    content: str
    tool_calls: list[ToolCall]
    finish_reason: str  # "stop" | "tool_calls" | "length" | ... as the provider reported it
    # Recorded apart because endpoints serve aliases (gpt-4o → gpt-4o-2024-08-06).
    requested_model: str
    served_model: str
    usage: Usage
