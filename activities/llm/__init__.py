"""Model providers behind one interface (DESIGN.md "Models"): `scripted` and `openai`."""

from __future__ import annotations

from activities.llm.contracts import (
    ChatMessage,
    DeltaCallback,
    ModelError,
    ModelProvider,
    ModelReply,
    ToolCall,
    ToolSpec,
    Usage,
)
from activities.llm.openai import OpenAIProvider
from activities.llm.providers import provider_from_settings
from activities.llm.scripted import ScriptedModel

__all__ = [
    "ChatMessage",
    "DeltaCallback",
    "ModelError",
    "ModelProvider",
    "ModelReply",
    "OpenAIProvider",
    "ScriptedModel",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "provider_from_settings",
]
