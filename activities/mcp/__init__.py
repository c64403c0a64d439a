"""The worker's side of MCP: its connections to the servers (pool.py) and the calls made
through them (calls.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activities.deps import ActivityDeps


def activities(deps: ActivityDeps) -> list[Callable[..., Any]]:
    """This feature's activities, bound to the worker's `deps` (imported when asked for, so
    that importing one of the feature's modules loads no other)."""
    from activities.mcp.discovery import McpDiscoveryActivities

    return [McpDiscoveryActivities(deps.mcp).discover]
