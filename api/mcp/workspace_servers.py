"""The daemon's MCP surface (spec session-daemon-http-protocol): `GET /workspace/mcp`
and `POST /workspace/mcp/:server/restart`.

The configuration is read here (runtime/mcp/config: the workspace's `.qwen/settings.json`
and the operator's servers in the store); the connections live in the worker, which
records each server's state in the store (runtime/mcp/status). A GET that finds enabled
servers the worker never opened (or opened under another configuration) starts
`McpDiscoveryWorkflow` and answers at once with `discoveryState: in_progress`. A restart
runs the same workflow for one server and waits for it.

Nothing secret is shown: a cell carries the server's name, transport, state, tools'
qualified names and, on failure, the category, the message and a hint.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError
from temporalio.client import WorkflowFailureError
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError

from api.deps import ConnectorDep, JournalDep, SettingsDep, StoreDep
from api.errors import ApiError
from api.mcp.models import (
    McpApproved,
    McpBudgetCell,
    McpRemoved,
    McpRestarted,
    McpServerEntry,
    WorkspaceMcp,
)
from api.openapi import errors, json_body
from api.requests import client_id_of, read_body
from api.security import require_configured_token
from api.temporal import is_unavailable
from runtime.egress import redact_url
from runtime.mcp.config import (
    SERVER_NAME,
    McpServerConfig,
    McpServers,
    StrictMcpServerConfig,
    approve_file_server,
    egress_refusal,
    load_servers,
    put_operator_server,
    reference_refusal,
    remove_operator_server,
)
from runtime.mcp.contracts import server_prefix
from runtime.mcp.status import (
    BUDGET_HINT,
    BUDGET_WARN_FRACTION,
    InvalidMcpServer,
    InvalidServerName,
    McpBudgetState,
    McpDiscoveryInput,
    McpDiscoveryResult,
    McpRestartFailed,
    McpServerNotFound,
    McpServerState,
    discovery_workflow_id,
    read_budget,
    restart_workflow_id,
)
from runtime.mcp.views import server_cells
from runtime.sessions import registry
from runtime.settings import Settings
from runtime.store import Store
from workflows.mcp.discovery import McpDiscoveryWorkflow

router = APIRouter(tags=["workspace"])


def needs_discovery(servers: McpServers, states: dict[str, McpServerState]) -> bool:
    for name, config in servers.enabled().items():
        state = states.get(name)
        if state is None or state.fingerprint != config.fingerprint():
            return True
    return False


async def start_discovery(
    connector: Any, settings: Settings, servers: McpServers, scope: str | None = None
) -> bool:
    """Start (or join) the discovery of the workspace (or of `scope`, a tenant's); False
    when Temporal is not there."""
    scope = scope or settings.workspace_cwd
    try:
        client = await connector.get()
        await client.start_workflow(
            McpDiscoveryWorkflow.run,
            McpDiscoveryInput(workspace=scope, timeout_ms=_longest_timeout(servers, None)),
            id=discovery_workflow_id(scope),
            task_queue=settings.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
    except ApiError:
        return False
    except RPCError as err:
        if is_unavailable(err):
            connector.mark_down()
            return False
        raise
    return True


def _longest_timeout(servers: McpServers, only: str | None) -> int:
    configs = [c for n, c in servers.enabled().items() if only is None or n == only]
    return max((int(c.timeout_seconds * 1000) for c in configs), default=60_000)


@router.get("/workspace/mcp", response_model_exclude_none=True)
async def workspace_mcp(
    settings: SettingsDep, store: StoreDep, connector: ConnectorDep
) -> WorkspaceMcp:
    """The workspace's MCP servers and what the worker knows of each."""
    servers, states, cells = await server_cells(store, settings)
    state: Literal["not_started", "in_progress", "completed"] = "completed"
    if needs_discovery(servers, states):
        state = (
            "in_progress"
            if await start_discovery(connector, settings, servers)
            else ("not_started")
        )
    elif any(c.mcp_status == "connecting" for c in cells):
        state = "in_progress"
    budget = await asyncio.to_thread(read_budget, store, settings.workspace_cwd)
    mode = settings.effective_mcp_budget_mode
    live = sum(1 for c in cells if c.mcp_status == "connected")
    return WorkspaceMcp(
        v=1,
        workspace_cwd=settings.workspace_cwd,
        initialized=True,
        discovery_state=state,
        servers=cells,
        client_count=len(budget.reserved) if budget is not None and mode != "off" else live,
        client_budget=settings.mcp_client_budget,
        budget_mode=mode,
        budgets=budget_cells(settings, budget, live, servers),
    )


def budget_cells(
    settings: Settings, budget: McpBudgetState | None, live: int, servers: McpServers
) -> list[McpBudgetCell]:
    """The workspace's budget cell (none in `off`): error when servers were refused,
    warning past 75 % of the budget, ok otherwise (the reference's semantics). Its scope
    is `workspace`: one worker's pool serves every session of the workspace."""
    mode = settings.effective_mcp_budget_mode
    if mode == "off":
        return []
    limit = settings.mcp_client_budget
    refused = [n for n in (budget.refused if budget else []) if n not in servers.disabled]
    cell = McpBudgetCell(
        kind="mcp_budget",
        scope="workspace",
        status="ok",
        live_count=live,
        mode=mode,
        refused_count=len(refused),
        budget=limit,
    )
    if refused:
        return [
            cell.model_copy(
                update={"status": "error", "error_kind": "budget_exhausted", "hint": BUDGET_HINT}
            )
        ]
    if limit is not None and live >= BUDGET_WARN_FRACTION * limit:
        share = round(BUDGET_WARN_FRACTION * 100)
        hint = f"Live MCP clients are above {share}% of the configured budget."
        return [cell.model_copy(update={"status": "warning", "hint": hint})]
    return [cell]


@router.post(
    "/workspace/mcp/{server}/restart",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 404, 503),
    response_model_exclude_none=True,
)
async def restart_mcp_server(
    server: str,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    journal: JournalDep,
    connector: ConnectorDep,
) -> McpRestarted:
    """Close the server's connection in the worker and open it again (rediscovering its
    tools); sessions offer the new tools from their next model step."""
    originator = client_id_of(request)
    await read_body(request)  # `{}` (or empty); malformed JSON is a 400
    if not server or not SERVER_NAME.match(server):
        raise invalid_server_name()
    servers = await _load(store, settings)
    if server not in servers.servers:
        raise server_not_found(server, f"No MCP server named {server!r} in mcpServers")
    extra = {"originatorClientId": originator} if originator else {}

    async def refused(reason: str) -> McpRestarted:
        """Tell the workspace's live sessions the restart was refused, and answer so."""
        await asyncio.to_thread(
            registry.journal_to_live_sessions,
            store,
            journal,
            settings.workspace_cwd,
            "mcp_server_restart_refused",
            {"serverName": server, "reason": reason, **extra},
            retention=settings.event_ring_size,
            originator=originator,
        )
        return McpRestarted(server_name=server, restarted=False, skipped=True, reason=reason)

    if server in servers.disabled or server in servers.pending:
        reason = "server_disabled" if server in servers.disabled else "approval_required"
        return await refused(reason)
    client = await connector.get()
    try:
        result: McpDiscoveryResult = await client.execute_workflow(
            McpDiscoveryWorkflow.run,
            McpDiscoveryInput(
                workspace=settings.workspace_cwd,
                server=server,
                restart=True,
                timeout_ms=_longest_timeout(servers, server),
            ),
            id=restart_workflow_id(settings.workspace_cwd, server, uuid.uuid4().hex),
            task_queue=settings.task_queue,
            # Bounded: with no worker to run it, the restart fails (503) instead of hanging.
            execution_timeout=timedelta(milliseconds=_longest_timeout(servers, server))
            + timedelta(seconds=60),
        )
    except WorkflowFailureError as err:
        message = f"the worker could not restart {server}: {err.cause}"
        raise ApiError.of(McpRestartFailed(server=server, message=message)) from None
    if not result.servers:  # removed or disabled since it was checked above
        raise server_not_found(server, f"No enabled MCP server named {server!r}")
    (outcome,) = result.servers
    if not outcome.connected:
        # The spec's reason when the budget has no slot for it (enforce mode).
        budget_full = outcome.errorKind == "budget_exhausted"
        reason = "budget_would_exceed" if budget_full else "connect_failed"
        return await refused(reason)
    await asyncio.to_thread(
        registry.journal_to_live_sessions,
        store,
        journal,
        settings.workspace_cwd,
        "mcp_server_restarted",
        {"serverName": server, "durationMs": outcome.durationMs, **extra},
        retention=settings.event_ring_size,
        originator=originator,
    )
    return McpRestarted(server_name=server, restarted=True, duration_ms=outcome.durationMs)


# -- the operator's servers ------------------------------------------------------------------


def invalid_server_name() -> ApiError:
    return ApiError.of(InvalidServerName())


def _invalid_server(message: str) -> ApiError:
    return ApiError.of(InvalidMcpServer(message=message))


def server_not_found(server: str, message: str) -> ApiError:
    return ApiError.of(McpServerNotFound(server=server, message=message))


async def _load(store: Store, settings: Settings) -> McpServers:
    return await asyncio.to_thread(
        load_servers,
        store,
        settings.workspace_cwd,
        settings.resolved_data_dir,
        settings.mcp_workspace_servers,
    )


def name_clash(server: str, existing: McpServers) -> str | None:
    """Why `server` cannot be added next to `existing`: its tools' names must be its own
    (a name with `__` reads as a server and a tool; `a.b` and `a_b` are both `mcp__a_b__`
    to the model, and a grant of one would reach the other)."""
    if "__" in server:
        return "a server name may not contain '__' (its tools are named mcp__<server>__<tool>)"
    mine = server_prefix(server)
    for other in existing.servers:
        if other != server and server_prefix(other) == mine:
            return f"{server!r} and {other!r} give their tools the same names ({mine}…)"
    return None


def server_entry(name: str, config: McpServerConfig) -> McpServerEntry:
    return McpServerEntry(
        server_name=name,
        transport=config.transport,
        trust=config.trust,
        description=config.description,
    )


@router.put(
    "/workspace/mcp/servers/{server}",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401),
    response_model_exclude_none=True,
    openapi_extra=json_body(StrictMcpServerConfig),
)
async def put_mcp_server(
    server: str, request: Request, settings: SettingsDep, store: StoreDep
) -> McpServerEntry:
    """Add or replace one of the workspace's MCP servers (qwen-code's `mcpServers` entry;
    it wins over an entry of that name in `.qwen/settings.json`). Values of `env` and
    `headers` may be `$NAME` references to the worker's environment, for the names the
    provider-key rule allows; nothing of `env` or `headers` is ever shown back."""
    config = await operator_server(server, request, settings, await _load(store, settings))
    entry = config.model_dump(mode="json", exclude_defaults=True)
    await asyncio.to_thread(put_operator_server, store, settings.workspace_cwd, server, entry)
    return server_entry(server, config)


async def operator_server(
    server: str, request: Request, settings: Settings, existing: McpServers
) -> McpServerConfig:
    """An operator's `mcpServers` entry from a PUT's body, checked (strict shape, the
    reference rule, the egress rule).

    Raises:
        ApiError: 400 `invalid_server_name` or `invalid_mcp_server`.
    """
    if not SERVER_NAME.match(server):
        raise invalid_server_name()
    clash = name_clash(server, existing)
    if clash is not None:
        raise _invalid_server(clash)
    body = await read_body(request)
    try:
        config = StrictMcpServerConfig.model_validate(body)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in err.errors(include_url=False, include_input=False)
        )
        raise _invalid_server(problems) from None
    refusal = reference_refusal(config, settings.provider_key_envs) or egress_refusal(config)
    if refusal is not None:
        raise _invalid_server(refusal)
    return config


@router.delete(
    "/workspace/mcp/servers/{server}",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 404),
)
async def delete_mcp_server(server: str, settings: SettingsDep, store: StoreDep) -> McpRemoved:
    """Remove a server an operator added (one from `.qwen/settings.json` stays: edit the
    file, or list it in `disabledMcpServers`)."""
    if not SERVER_NAME.match(server):
        raise invalid_server_name()
    removed = await asyncio.to_thread(remove_operator_server, store, settings.workspace_cwd, server)
    if not removed:
        raise server_not_found(server, f"No MCP server named {server!r} was added through the API")
    return McpRemoved(server_name=server, removed=True)


@router.post(
    "/workspace/mcp/{server}/approve",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 404),
    response_model_exclude_none=True,
)
async def approve_mcp_server(
    server: str, request: Request, settings: SettingsDep, store: StoreDep
) -> McpApproved:
    """Approve the workspace's `.qwen/settings.json` entry `server` exactly as it is now
    (AGENTRT_MCP_WORKSPACE_SERVERS=approve): the worker runs it from its next need, and a
    later change of the entry waits for a new approval. The answer says what was
    approved (the command, or the URL without credentials), never env or headers."""
    await read_body(request)
    if not SERVER_NAME.match(server):
        raise invalid_server_name()
    servers = await _load(store, settings)
    if servers.sources.get(server) != "settings":
        raise server_not_found(
            server, f"No entry {server!r} in the workspace's .qwen/settings.json mcpServers"
        )
    config = servers.servers[server]
    fingerprint = config.fingerprint()
    await asyncio.to_thread(approve_file_server, store, settings.workspace_cwd, server, fingerprint)
    return McpApproved(
        server_name=server,
        approved=True,
        fingerprint=fingerprint,
        transport=config.transport,
        command=config.command,
        url=redact_url((config.httpUrl or config.url or "").split("?", 1)[0]) or None,
    )
