"""`McpDiscoveryWorkflow`: the worker opens a workspace's MCP servers (discovery), or one
server again (restart), in an activity: connections live in the worker's pool
(activities/mcp/pool.py), and what it found is recorded in the store for
`GET /workspace/mcp`.

Ids (runtime/mcp/status.py, beside the workflow's contracts): `mcp-discovery/{workspace
digest}` (one at a time per workspace; a GET that finds servers never opened starts it,
or joins the running one) and `mcp-restart/{workspace digest}/{server}/{request id}`
(POST .../restart waits on it).
"""

from __future__ import annotations

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
