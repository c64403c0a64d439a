"""What the worker knows of each MCP server, kept in the store for the API to show.

The worker's pool (activities/mcp/pool.py) writes one record per (workspace, server)
whenever a connection's state changes; `GET /workspace/mcp` reads them next to the
configuration. A record never holds env values, headers or anything secret: the
server's name, transport, state, its tools' names and annotations, and on failure the
category of the error, its message (the SDK's or the server's) and a hint.

Also the contracts of the discovery workflow that opens the servers
(workflows/mcp/discovery.py): its activity, its input and result, and its ids.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, Literal

from pydantic import BaseModel, Field

from runtime.activity_contract import ActivityContract
from runtime.failures import WireError
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


# -- the refusals of the MCP routes (one idiom: WireError models, api/errors.ApiError.of) --


class InvalidServerName(WireError):
    """A server name outside `SERVER_NAME` in a route's path: 400."""

    kind: Literal["invalid_server_name"] = "invalid_server_name"

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": "server name must be 1-64 of A-Z a-z 0-9 _ . -", "code": self.kind_name}


class InvalidMcpServer(WireError):
    """An operator's server entry that breaks the shape, the reference rule or the
    egress rule: 400 naming what is wrong."""

    kind: Literal["invalid_mcp_server"] = "invalid_mcp_server"
    message: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.kind_name}


class McpServerNotFound(WireError):
    """No such server where the route looks (the configuration, the operator's entries,
    the settings file): 404."""

    kind: Literal["mcp_server_not_found"] = "mcp_server_not_found"
    server: str
    message: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.kind_name, "serverName": self.server}


class McpRestartFailed(WireError):
    """The restart's workflow failed (its activity timed out, or no worker ran it): 503."""

    kind: Literal["mcp_restart_failed"] = "mcp_restart_failed"
    server: str
    message: str

    @property
    def http_status(self) -> int:
        return 503

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.kind_name, "serverName": self.server}


MCP_DISCOVER_CONTRACT: Final = ActivityContract(
    MCP_DISCOVER_ACTIVITY, McpDiscoveryInput, McpDiscoveryResult
)


# -- the discovery workflow's ids (workflows/mcp/discovery.py) -----------------------------


def workspace_digest(workspace: str) -> str:
    return hashlib.sha256(workspace.encode("utf-8")).hexdigest()[:16]


def discovery_workflow_id(workspace: str) -> str:
    return f"mcp-discovery/{workspace_digest(workspace)}"


def restart_workflow_id(workspace: str, server: str, request_id: str) -> str:
    return f"mcp-restart/{workspace_digest(workspace)}/{server}/{request_id}"
