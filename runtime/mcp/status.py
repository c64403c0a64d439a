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
    "missing_binary", "blocked_egress", "auth_env_error", "init_timeout", "protocol_error"
]
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


class McpDiscoveryResult(BaseModel):
    servers: list[McpServerOutcome] = Field(default_factory=list)


MCP_DISCOVER_ACTIVITY: Final = "mcp.discover"
