"""The model-facing specs of the session tools, from their descriptors (runtime/sessions/tools)."""

from __future__ import annotations

from runtime.llm.contracts import ToolSpec
from runtime.sessions.tools import SESSION_TOOLS, SHELL_TOOL


def tool_specs(shell_enabled: bool) -> list[ToolSpec]:
    """Specs of the session tools (the shell only when enabled)."""
    return [
        tool.spec() for name, tool in SESSION_TOOLS.items() if shell_enabled or name != SHELL_TOOL
    ]
