"""`McpDiscoveryWorkflow`: the worker opens a workspace's MCP servers (discovery), or one
server again (restart), in an activity: connections live in the worker's pool
(activities/mcp/pool.py), and what it found is recorded in the store for
`GET /workspace/mcp`.

Ids: `mcp-discovery/{workspace digest}` (one at a time per workspace; a GET that finds
servers never opened starts it, or joins the running one) and
`mcp-restart/{workspace digest}/{server}/{request id}` (POST .../restart waits on it).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from workflows.activity_calls import call_activity

with workflow.unsafe.imports_passed_through():
    from runtime.mcp.status import (
        MCP_DISCOVER_CONTRACT,
        McpDiscoveryInput,
        McpDiscoveryResult,
    )


def workspace_digest(workspace: str) -> str:
    return hashlib.sha256(workspace.encode("utf-8")).hexdigest()[:16]


def discovery_workflow_id(workspace: str) -> str:
    return f"mcp-discovery/{workspace_digest(workspace)}"


def restart_workflow_id(workspace: str, server: str, request_id: str) -> str:
    return f"mcp-restart/{workspace_digest(workspace)}/{server}/{request_id}"


@workflow.defn(name="McpDiscovery")
class McpDiscoveryWorkflow:
    @workflow.run
    async def run(self, request: McpDiscoveryInput) -> McpDiscoveryResult:
        # One attempt: a server that cannot be opened is recorded as such (its state says
        # why); the next GET, prompt or restart tries again after the pool's backoff.
        result: McpDiscoveryResult = await call_activity(
            MCP_DISCOVER_CONTRACT,
            request,
            start_to_close_timeout=timedelta(milliseconds=request.timeout_ms)
            + timedelta(seconds=30),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        return result
