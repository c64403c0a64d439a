"""What the worker knows of each MCP server, kept in the store for the API to show.

The worker's pool (activities/mcp/pool.py) writes one record per (workspace, server)
whenever a connection's state changes; `GET /workspace/mcp` reads them next to the
configuration. A record never holds env values, headers or anything secret: the
server's name, transport, state, its tools' names and annotations, and on failure the
category of the error, its message (the SDK's or the server's) and a hint.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, Field

from runtime.store import Store
from runtime.workspace.settings import get_setting, set_setting

McpStatus = Literal["connecting", "connected", "disconnected"]
# The closed `errorKind` enumeration of the status routes (spec: /workspace/preflight).
McpErrorKind = Literal[
    "missing_binary",
    "blocked_egress",
    "auth_env_error",
    "init_timeout",
    "protocol_error",
    "budget_exhausted",
]
BudgetMode = Literal["warn", "enforce", "off"]
BUDGET_SETTING: Final = "mcp.budget"
# The reference's thresholds: warn at 75 % of the budget, re-armed below 37.5 %.
BUDGET_WARN_FRACTION: Final = 0.75
BUDGET_REARM_FRACTION: Final = 0.375
BUDGET_HINT: Final = "Raise --mcp-client-budget or remove servers from mcpServers config."


class McpBudgetState(BaseModel):
    """The worker's accounting of a workspace's MCP clients (spec: mcp_guardrails)."""

    budget: int | None = None
    mode: BudgetMode = "off"
    reserved: list[str] = Field(default_factory=list)  # servers holding a slot
    live: list[str] = Field(default_factory=list)  # of them, connected
    refused: list[str] = Field(default_factory=list)  # refused in the last pass


def write_budget(store: Store, workspace: str, state: McpBudgetState) -> None:
    set_setting(store, workspace, BUDGET_SETTING, state.model_dump(mode="json"))


def read_budget(store: Store, workspace: str) -> McpBudgetState | None:
    raw: Any = get_setting(store, workspace, BUDGET_SETTING)
    return McpBudgetState.model_validate(raw) if isinstance(raw, dict) else None


_PREFIX: Final = "mcp.status."


class McpToolInfo(BaseModel):
    name: str  # the server's own name for the tool
    qualified: str  # mcp__<server>__<tool>, what the model calls it
    readOnlyHint: bool = False
    idempotentHint: bool = False


class McpServerState(BaseModel):
    name: str
    transport: str
    fingerprint: str
    mcpStatus: McpStatus
    tools: list[McpToolInfo] = Field(default_factory=list)
    errorKind: McpErrorKind | None = None
    error: str | None = None
    hint: str | None = None
    updatedAtMs: int = 0


def state_key(server: str) -> str:
    return f"{_PREFIX}{server}"


def write_state(store: Store, workspace: str, state: McpServerState) -> None:
    set_setting(store, workspace, state_key(state.name), state.model_dump(mode="json"))


def read_state(store: Store, workspace: str, server: str) -> McpServerState | None:
    raw: Any = get_setting(store, workspace, state_key(server))
    return McpServerState.model_validate(raw) if isinstance(raw, dict) else None


class McpDiscoveryInput(BaseModel):
    """`McpDiscoveryWorkflow`: open the workspace's servers (all enabled ones, or
    `server` alone, closed and opened again when `restart`)."""

    workspace: str
    server: str | None = None
    restart: bool = False
    # The longest `timeout` of the servers concerned: the activity's bound.
    timeout_ms: int = 600_000


class McpServerOutcome(BaseModel):
    name: str
    connected: bool
    durationMs: int
    error: str | None = None
    errorKind: str | None = None


class McpDiscoveryResult(BaseModel):
    servers: list[McpServerOutcome] = Field(default_factory=list)


MCP_DISCOVER_ACTIVITY: Final = "mcp.discover"
