"""Model calls: the payloads every runtime shares."""

from runtime.llm.contracts import ChatMessage, ModelReply, ToolCall, ToolSpec, Usage

__all__ = ["ChatMessage", "ModelReply", "ToolCall", "ToolSpec", "Usage"]
