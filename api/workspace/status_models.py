"""What the workspace status routes answer (spec session-daemon-http-protocol, "Read-only
runtime status routes" and "Mutation: approval, tools, init"): one model per body, with
the spec's camelCase names. Optional fields the daemon omits are `omittable` and their
routes drop them with `response_model_exclude_none`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from api.openapi import omittable
from runtime.policy.approval import ApprovalMode

CellStatus = Literal["ok", "warning", "error", "disabled", "not_started", "unknown"]
ErrorKind = Literal[
    "budget_exhausted",
    "missing_binary",
    "blocked_egress",
    "auth_env_error",
    "init_timeout",
    "protocol_error",
    "missing_file",
    "parse_error",
]


class StatusCell(BaseModel):
    """The spec's DaemonStatusCell."""

    kind: str
    status: CellStatus
    error: str | SkipJsonSchema[None] = omittable("What went wrong (status error/warning).")
    errorKind: ErrorKind | SkipJsonSchema[None] = omittable("The category of the failure.")
    hint: str | SkipJsonSchema[None] = omittable("How to fix it.")


class EnvCell(StatusCell):
    """A cell of GET /workspace/env: `env_var` cells never carry a value."""

    kind: Literal["runtime", "platform", "memory", "sandbox", "proxy", "env_var"]
    name: str
    present: bool | SkipJsonSchema[None] = omittable("Whether the variable is set.")
    value: str | SkipJsonSchema[None] = omittable(
        "runtime/platform: the version; proxy: host:port only; never for env_var."
    )


class WorkspaceEnv(BaseModel):
    v: Literal[1]
    workspaceCwd: str
    initialized: bool
    acpChannelLive: bool
    cells: list[EnvCell]


class PreflightCell(StatusCell):
    locality: Literal["daemon", "acp"]
    detail: dict[str, Any] | SkipJsonSchema[None] = omittable("Cell-specific facts.")


class WorkspacePreflight(BaseModel):
    v: Literal[1]
    workspaceCwd: str
    initialized: bool
    acpChannelLive: bool
    cells: list[PreflightCell]


class ProviderModel(BaseModel):
    modelId: str
    baseModelId: str
    name: str
    description: str | None
    contextLimit: int | None
    isCurrent: bool
    isRuntime: bool


class ModelProvider(BaseModel):
    kind: Literal["model_provider"]
    status: CellStatus
    authType: str
    current: bool
    models: list[ProviderModel]


class CurrentModel(BaseModel):
    authType: str
    modelId: str


class WorkspaceProviders(BaseModel):
    v: Literal[1]
    workspaceCwd: str
    initialized: bool
    acpChannelLive: bool
    current: CurrentModel
    approvalMode: ApprovalMode = Field(
        description="The mode new sessions start in (the persisted `tools.approvalMode`)."
    )
    providers: list[ModelProvider]
    deviceFlowProviders: list[dict[str, Any]] = Field(
        description="OAuth device-flow providers and whether credentials are present "
        "(filled in by the device-flow work; empty here)."
    )


class Skill(BaseModel):
    kind: Literal["skill"]
    status: CellStatus
    name: str
    description: str
    level: Literal["project", "user", "extension", "bundled"]
    modelInvocable: bool
    argumentHint: str | SkipJsonSchema[None] = omittable("The arguments the skill takes.")


class WorkspaceSkills(BaseModel):
    v: Literal[1]
    workspaceCwd: str
    initialized: bool
    skills: list[Skill]


class McpError(BaseModel):
    error: str
    errorKind: ErrorKind | SkipJsonSchema[None] = omittable("The category of the failure.")
    hint: str | SkipJsonSchema[None] = omittable("How to fix it.")


class McpServer(BaseModel):
    """One configured server: never its env values, headers or anything secret."""

    kind: Literal["mcp_server"]
    status: CellStatus
    name: str
    mcpStatus: str
    transport: Literal["stdio", "sse", "http", "websocket", "sdk", "unknown"]
    disabled: bool
    disabledReason: Literal["config", "budget"] | SkipJsonSchema[None] = omittable(
        "Why the server is disabled: `config` (disabledMcpServers) or `budget`."
    )
    description: str | SkipJsonSchema[None] = omittable("The server's configured description.")
    errorKind: ErrorKind | SkipJsonSchema[None] = omittable("The category of the failure.")
    hint: str | SkipJsonSchema[None] = omittable("How to fix it.")
    errors: list[McpError] | SkipJsonSchema[None] = omittable(
        "What went wrong; omitted when discovery succeeded."
    )
    tools: list[str] | SkipJsonSchema[None] = omittable(
        "The qualified names (mcp__<server>__<tool>) of the tools it offers, once connected."
    )


class McpBudgetCell(BaseModel):
    """The workspace's MCP client budget (spec: mcp_guardrails)."""

    kind: Literal["mcp_budget"]
    scope: Literal["workspace"]
    status: CellStatus
    liveCount: int
    mode: Literal["warn", "enforce"]
    refusedCount: int
    budget: int | SkipJsonSchema[None] = omittable("The budget (--mcp-client-budget).")
    errorKind: ErrorKind | SkipJsonSchema[None] = omittable("budget_exhausted on refusals.")
    hint: str | SkipJsonSchema[None] = omittable("How to fix it.")


class WorkspaceMcp(BaseModel):
    v: Literal[1]
    workspaceCwd: str
    initialized: bool
    discoveryState: Literal["not_started", "in_progress", "completed"]
    servers: list[McpServer]
    clientCount: int = Field(
        description="MCP clients of the workspace: slots held (opening or open) when a "
        "budget is set, else the connected servers."
    )
    clientBudget: int | SkipJsonSchema[None] = omittable(
        "The budget (--mcp-client-budget); absent when none is set."
    )
    budgetMode: Literal["warn", "enforce", "off"]
    budgets: list[McpBudgetCell] = Field(description="Empty in `off` mode.")


class McpServerEntry(BaseModel):
    """A server an operator added: what it is, never its env or headers."""

    serverName: str
    transport: Literal["stdio", "http", "sse"]
    trust: bool
    description: str | SkipJsonSchema[None] = omittable("The server's description.")


class McpApproved(BaseModel):
    """What an operator approved: the entry's fingerprint, its command or URL (without
    credentials or query); never its args, env or headers."""

    serverName: str
    approved: bool
    fingerprint: str
    transport: Literal["stdio", "http", "sse"]
    command: str | SkipJsonSchema[None] = omittable("The stdio server's command.")
    url: str | SkipJsonSchema[None] = omittable("The server's URL, without credentials.")


class McpRemoved(BaseModel):
    serverName: str
    removed: bool


class McpRestarted(BaseModel):
    serverName: str
    restarted: bool
    durationMs: int | SkipJsonSchema[None] = omittable("How long the reconnection took.")
    skipped: bool | SkipJsonSchema[None] = omittable("True when the restart was skipped.")
    reason: str | SkipJsonSchema[None] = omittable("Why it was skipped.")


class AvailableCommand(BaseModel):
    name: str
    description: str
    input: dict[str, Any] | None
    meta: dict[str, Any] = Field(alias="_meta", serialization_alias="_meta")


class SupportedCommands(BaseModel):
    v: Literal[1]
    sessionId: str
    availableCommands: list[AvailableCommand]
    availableSkills: list[str]


class SessionTask(BaseModel):
    kind: str
    id: str
    label: str
    description: str
    status: str
    startTime: int
    runtimeMs: int


class SessionTasks(BaseModel):
    v: Literal[1]
    sessionId: str
    now: int = Field(description="Epoch milliseconds.")
    tasks: list[SessionTask]


class ToolToggled(BaseModel):
    toolName: str
    enabled: bool


class WorkspaceInitialized(BaseModel):
    path: str
    action: Literal["created", "noop", "overwrote"]


class SessionRecap(BaseModel):
    sessionId: str
    recap: str | None
