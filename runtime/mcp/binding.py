"""What an MCP call was resolved to when a human was asked about it."""

from __future__ import annotations

from pydantic import BaseModel


class McpBinding(BaseModel):
    """What an MCP call's preview resolved its name to: the server, the server's own tool
    name and the fingerprint of the server's configuration. The call runs on exactly
    this, or not at all: a name never moves to another server between the vote and the
    call, and a server whose configuration changed meanwhile is not called."""

    server: str
    tool: str
    fingerprint: str
