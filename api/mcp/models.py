"""What the MCP routes answer and take (spec session-daemon-http-protocol's MCP routes,
and the standing agents' MCP servers and grants): one wire model per body
(runtime/wire.py). A server's cell, `McpServer`, is built in runtime/
(runtime/mcp/views.py): the workspace's preflight shows it too.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from runtime.mcp.views import McpServer
from runtime.standing_agents.contracts import AgentType
from runtime.wire import WireBody, WireModel, omittable
from runtime.workspace.views import CellStatus, ErrorKind


class McpBudgetCell(WireModel):
    """The workspace's MCP client budget (spec: mcp_guardrails)."""

    kind: Literal["mcp_budget"]
    scope: Literal["workspace"]
    status: CellStatus
    live_count: int
    mode: Literal["warn", "enforce"]
    refused_count: int
    budget: int | SkipJsonSchema[None] = omittable("The budget (--mcp-client-budget).")
    error_kind: ErrorKind | SkipJsonSchema[None] = omittable("budget_exhausted on refusals.")
    hint: str | SkipJsonSchema[None] = omittable("How to fix it.")


class WorkspaceMcp(WireModel):
    v: Literal[1]
    workspace_cwd: str
    initialized: bool
    discovery_state: Literal["not_started", "in_progress", "completed"]
    servers: list[McpServer]
    client_count: int = Field(
        description="MCP clients of the workspace: slots held (opening or open) when a "
        "budget is set, else the connected servers."
    )
    client_budget: int | SkipJsonSchema[None] = omittable(
        "The budget (--mcp-client-budget); absent when none is set."
    )
    budget_mode: Literal["warn", "enforce", "off"]
    budgets: list[McpBudgetCell] = Field(description="Empty in `off` mode.")


class McpServerEntry(WireModel):
    """A server an operator added: what it is, never its env or headers."""

    server_name: str
    transport: Literal["stdio", "http", "sse"]
    trust: bool
    description: str | SkipJsonSchema[None] = omittable("The server's description.")


class McpApproved(WireModel):
    """What an operator approved: the entry's fingerprint, its command or URL (without
    credentials or query); never its args, env or headers."""

    server_name: str
    approved: bool
    fingerprint: str
    transport: Literal["stdio", "http", "sse"]
    command: str | SkipJsonSchema[None] = omittable("The stdio server's command.")
    url: str | SkipJsonSchema[None] = omittable("The server's URL, without credentials.")


class McpRemoved(WireModel):
    server_name: str
    removed: bool


class McpRestarted(WireModel):
    server_name: str
    restarted: bool
    duration_ms: int | SkipJsonSchema[None] = omittable("How long the reconnection took.")
    skipped: bool | SkipJsonSchema[None] = omittable("True when the restart was skipped.")
    reason: str | SkipJsonSchema[None] = omittable("Why it was skipped.")


class McpGrantBody(WireBody):
    # `mcp__<server>__<tool>` or `mcp__<server>__*` (runtime/mcp/grants); [] revokes.
    tools: list[Annotated[str, Field(max_length=64)]] = Field(max_length=200)


class McpGrant(WireModel):
    tenant: str
    agent_type: AgentType
    tools: list[str]


class TenantMcp(WireModel):
    """A tenant's MCP servers for its standing agents, their state, and the grants."""

    tenant: str
    discovery_state: Literal["not_started", "in_progress", "completed"]
    servers: list[McpServer]
    grants: dict[str, list[str]]
