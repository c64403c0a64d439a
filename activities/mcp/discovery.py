"""`mcp.discover`: open a workspace's MCP servers in this worker's pool (McpDiscoveryWorkflow)."""

from __future__ import annotations

import asyncio
import time

from temporalio import activity

from activities.mcp.calls import McpCalls
from activities.mcp.pool import classify
from runtime.mcp.config import load_servers
from runtime.mcp.status import (
    MCP_DISCOVER_ACTIVITY,
    McpDiscoveryInput,
    McpDiscoveryResult,
    McpServerOutcome,
)


class McpDiscoveryActivities:
    def __init__(self, calls: McpCalls) -> None:
        self.calls = calls

    @activity.defn(name=MCP_DISCOVER_ACTIVITY)
    async def discover(self, request: McpDiscoveryInput) -> McpDiscoveryResult:
        """Every enabled server opened (each records its state), or `server` reopened."""
        servers = await asyncio.to_thread(
            load_servers,
            self.calls.store,
            request.workspace,
            self.calls.settings.resolved_data_dir,
            self.calls.settings.mcp_workspace_servers,
        )
        enabled = servers.enabled()
        names = [request.server] if request.server else list(enabled)
        outcomes = await asyncio.gather(
            *(self._open(request, name) for name in names if name in enabled)
        )
        return McpDiscoveryResult(servers=list(outcomes))

    async def _open(self, request: McpDiscoveryInput, name: str) -> McpServerOutcome:
        pool = self.calls.pool
        servers = await asyncio.to_thread(
            load_servers,
            self.calls.store,
            request.workspace,
            self.calls.settings.resolved_data_dir,
            self.calls.settings.mcp_workspace_servers,
        )
        config = servers.servers[name]
        started = time.monotonic()
        try:
            if request.restart:
                await pool.restart(request.workspace, name, config)
            else:
                await pool.connection(request.workspace, name, config)
        except Exception as err:
            return McpServerOutcome(
                name=name,
                connected=False,
                durationMs=int((time.monotonic() - started) * 1000),
                error=str(classify(err, config)),
            )
        return McpServerOutcome(
            name=name, connected=True, durationMs=int((time.monotonic() - started) * 1000)
        )
