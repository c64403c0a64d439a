"""MCP in both directions: agentrt's own MCP server (`server/`), and the MCP servers that a
workspace or an agent uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter


def routers() -> list[APIRouter]:
    """This feature's routers, in the order the app includes them (imported here, when the
    app is built, so that importing one of the feature's modules loads no other)."""
    from api.mcp import agent_servers, workspace_servers

    return [workspace_servers.router, agent_servers.router]
