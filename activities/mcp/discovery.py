"""`mcp.discover`: open a workspace's MCP servers in this worker's pool (McpDiscoveryWorkflow)."""

from __future__ import annotations

import time

from activities.mcp.calls import McpCalls
from activities.mcp.failures import classify
from runtime.mcp.status import (
    MCP_DISCOVER_CONTRACT,
    McpDiscoveryInput,
    McpDiscoveryResult,
    McpServerOutcome,
)


class McpDiscoveryActivities:
    def __init__(self, calls: McpCalls) -> None:
        self.calls = calls

    @MCP_DISCOVER_CONTRACT.defn
    async def discover(self, request: McpDiscoveryInput) -> McpDiscoveryResult:
        """Every enabled server opened in one pass (slots of the client budget taken in
        declaration order, refusals batched), or `server` closed and opened again."""
        servers = await self.calls.servers(request.workspace)
        enabled = servers.enabled()
        pool = self.calls.pool
        started = time.monotonic()
        if request.server is not None:
            if request.server not in enabled:
                return McpDiscoveryResult()
            config = enabled[request.server]
            try:
                if request.restart:
                    await pool.restart(request.workspace, request.server, config)
                else:
                    await pool.connection(request.workspace, request.server, config)
            except Exception as err:
                failure = classify(err, config, pool.secrets(config))
                return McpDiscoveryResult(
                    servers=[_outcome(request.server, started, str(failure), failure.kind)]
                )
            return McpDiscoveryResult(servers=[_outcome(request.server, started)])
        _, failures = await pool.tools(request.workspace, enabled)
        return McpDiscoveryResult(
            servers=[
                _outcome(name, started, str(failures[name]), failures[name].kind)
                if name in failures
                else _outcome(name, started)
                for name in enabled
            ]
        )


def _outcome(
    name: str, started: float, error: str | None = None, kind: str | None = None
) -> McpServerOutcome:
    return McpServerOutcome(
        name=name,
        connected=error is None,
        durationMs=int((time.monotonic() - started) * 1000),
        error=error,
        errorKind=kind,
    )
