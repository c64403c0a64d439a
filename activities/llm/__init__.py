"""Model providers behind one interface (DESIGN.md "Models"): `scripted` and `openai`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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


if TYPE_CHECKING:
    from activities.deps import ActivityDeps


def activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    """This feature's activities, bound to the worker's `deps`."""
    from activities.llm.routing_activities import LlmActivities

    return [LlmActivities(deps.store, deps.settings).resolve_chain]
