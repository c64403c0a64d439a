"""McpDiscoveryWorkflow: a workspace's MCP servers opened in the worker."""

from __future__ import annotations


def workflows() -> list[type]:
    """This feature's workflow classes, for the worker (imported when asked for, so that
    importing one of the feature's modules loads no other)."""
    from workflows.mcp.discovery import McpDiscoveryWorkflow

    return [McpDiscoveryWorkflow]
