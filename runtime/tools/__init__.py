"""The one tool layer: every tool an agentrt agent can call, whoever provides it.

A tool is a `ToolDescriptor` (runtime/tools/descriptor.py): its name, title, description,
the JSON schema of its arguments (generated from a pydantic model for agentrt's own
tools, given by the server for an MCP tool) and MCP's annotations, which decide how a
call is dispatched (`Dispatch`). The session tools, the Windows verbs, the MCP tools and
the agent-tools catalog are declared through it.
"""

from runtime.tools.descriptor import (
    READ_ONLY,
    Dispatch,
    ToolAnnotations,
    ToolArgumentsError,
    ToolDescriptor,
    arguments_schema,
)

__all__ = [
    "READ_ONLY",
    "Dispatch",
    "ToolAnnotations",
    "ToolArgumentsError",
    "ToolDescriptor",
    "arguments_schema",
]
