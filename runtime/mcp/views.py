"""The workspace's (or a tenant's) MCP servers as a client reads them, as wire models
(runtime/wire.py): one `McpServer` cell per server, as `GET /workspace/mcp`, a tenant's MCP
view and the preflight's `mcp_discovery` cell show them, built by `server_cells` from the
configuration and what the worker recorded of each server (runtime/mcp/status.py). Never
env values, headers or anything secret. Optional fields the daemon omits are `omittable`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic.json_schema import SkipJsonSchema

from runtime.mcp.config import McpServerConfig, McpServers, load_servers
from runtime.mcp.status import McpServerState, read_state
from runtime.settings import Settings
from runtime.store import Store
from runtime.wire import WireModel, omittable
from runtime.workspace.views import CellStatus, ErrorKind, PreflightCell


class McpError(WireModel):
    error: str
    error_kind: ErrorKind | SkipJsonSchema[None] = omittable("The category of the failure.")
    hint: str | SkipJsonSchema[None] = omittable("How to fix it.")


class McpServer(WireModel):
    """One configured server: never its env values, headers or anything secret."""

    kind: Literal["mcp_server"]
    status: CellStatus
    name: str
    mcp_status: str
    transport: Literal["stdio", "sse", "http", "websocket", "sdk", "unknown"]
    disabled: bool
    disabled_reason: Literal["config", "budget"] | SkipJsonSchema[None] = omittable(
        "Why the server is disabled: `config` (disabledMcpServers) or `budget`."
    )
    description: str | SkipJsonSchema[None] = omittable("The server's configured description.")
    error_kind: ErrorKind | SkipJsonSchema[None] = omittable("The category of the failure.")
    hint: str | SkipJsonSchema[None] = omittable("How to fix it.")
    errors: list[McpError] | SkipJsonSchema[None] = omittable(
        "What went wrong; omitted when discovery succeeded."
    )
    tools: list[str] | SkipJsonSchema[None] = omittable(
        "The qualified names (mcp__<server>__<tool>) of the tools it offers, once connected."
    )


def _states(store: Store, scope: str, servers: McpServers) -> dict[str, McpServerState]:
    out = {}
    for name in servers.servers:
        state = read_state(store, scope, name)
        if state is not None:
            out[name] = state
    return out


def _cell(
    name: str, config: McpServerConfig, disabled: bool, state: McpServerState | None
) -> McpServer:
    cell: dict[str, Any] = {
        "kind": "mcp_server",
        "name": name,
        "transport": config.transport,
        "disabled": disabled,
        "description": config.description,
        "mcp_status": "disconnected",
        "status": "not_started",
    }
    if disabled:
        return McpServer(**{**cell, "status": "disabled", "disabled_reason": "config"})
    if state is None or state.fingerprint != config.fingerprint():
        return McpServer(**cell)
    cell["mcp_status"] = state.mcpStatus
    if state.mcpStatus == "connected":
        return McpServer(**{**cell, "status": "ok", "tools": [t.qualified for t in state.tools]})
    if state.mcpStatus == "connecting":
        return McpServer(**{**cell, "status": "warning"})
    if state.errorKind is None:
        return McpServer(**{**cell, "status": "not_started"})
    if state.errorKind == "budget_exhausted":
        cell["disabled_reason"] = "budget"
    error = McpError(
        error=state.error or "disconnected", error_kind=state.errorKind, hint=state.hint
    )
    return McpServer(
        **{**cell, "status": "error", "error_kind": state.errorKind, "hint": state.hint},
        errors=[error],
    )


def _pending_cell(name: str, config: McpServerConfig) -> McpServer:
    """A settings-file entry no operator approved (as it is now): never started."""
    return McpServer(
        kind="mcp_server",
        status="disabled",
        name=name,
        mcp_status="disconnected",
        transport=config.transport,
        disabled=True,
        disabled_reason="config",
        description=config.description,
        hint=f"an operator approves this entry of .qwen/settings.json: "
        f"POST /workspace/mcp/{name}/approve (AGENTRT_MCP_WORKSPACE_SERVERS)",
    )


def _problem_cell(name: str, problem: str) -> McpServer:
    return McpServer(
        kind="mcp_server",
        status="error",
        name=name,
        mcp_status="disconnected",
        transport="unknown",
        disabled=False,
        error_kind="parse_error",
        hint="fix this entry of mcpServers (.qwen/settings.json)",
        errors=[McpError(error=problem, error_kind="parse_error")],
    )


async def server_cells(
    store: Store, settings: Settings, scope: str | None = None
) -> tuple[McpServers, dict[str, McpServerState], list[McpServer]]:
    """The configuration, the worker's states and one cell per server (and per entry that
    could not be read), of the workspace or of `scope` (a tenant's: runtime/mcp/grants)."""
    scope = scope or settings.workspace_cwd
    servers = await asyncio.to_thread(
        load_servers,
        store,
        scope,
        settings.resolved_data_dir,
        settings.mcp_workspace_servers,
    )
    states = await asyncio.to_thread(_states, store, scope, servers)
    cells = [
        _pending_cell(name, config)
        if name in servers.pending
        else _cell(name, config, name in servers.disabled, states.get(name))
        for name, config in servers.servers.items()
    ]
    cells += [_problem_cell(name, problem) for name, problem in servers.problems.items()]
    return servers, states, cells


def discovery_cell(cells: list[McpServer], discovery: str) -> PreflightCell:
    """The preflight's `mcp_discovery`, as the reference daemon builds it (`detail`:
    discoveryState, total and the count per mcpStatus; agentrt adds the servers disabled
    or waiting for an operator's approval): error when a server failed, warning while
    one is still connecting, ok otherwise (and with no server)."""
    enabled = [c for c in cells if c.status != "disabled"]
    detail: dict[str, Any] = {
        "discoveryState": discovery,
        "total": len(cells),
        "connected": sum(1 for c in enabled if c.mcp_status == "connected"),
        "connecting": sum(1 for c in enabled if c.mcp_status == "connecting"),
        "disconnected": sum(1 for c in enabled if c.mcp_status == "disconnected"),
        "unknown": 0,
        "disabled": len(cells) - len(enabled),
    }
    if not cells:
        return PreflightCell(
            kind="mcp_discovery",
            status="ok",
            locality="daemon",
            hint="No MCP servers configured.",
            detail=detail,
        )
    failed = [c for c in enabled if c.status == "error"]
    if failed:
        return PreflightCell(
            kind="mcp_discovery",
            status="error",
            locality="daemon",
            error=f"{len(failed)}/{len(cells)} MCP server(s) failed, first {failed[0].name}.",
            error_kind=failed[0].error_kind,
            hint=failed[0].hint,
            detail=detail,
        )
    waiting = detail["connecting"] + sum(1 for c in enabled if c.status == "not_started")
    if waiting or discovery == "in_progress":
        return PreflightCell(
            kind="mcp_discovery",
            status="warning",
            locality="daemon",
            error=f"{waiting}/{len(cells)} MCP server(s) still connecting.",
            detail=detail,
        )
    return PreflightCell(kind="mcp_discovery", status="ok", locality="daemon", detail=detail)
