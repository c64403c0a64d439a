"""Model calls: the payloads every runtime shares, and which model serves (DESIGN.md, Models)."""

from runtime.llm.active import ActiveModel, active_model, served_model_id
from runtime.llm.contracts import ChatMessage, ModelReply, ToolCall, ToolSpec, Usage

__all__ = [
    "ActiveModel",
    "ChatMessage",
    "ModelReply",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "active_model",
    "served_model_id",
]
