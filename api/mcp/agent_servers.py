"""A tenant's MCP servers for its standing agents, and the grants of their tools:
/api/v1/tenants/{tenant}/mcp.

The servers are the operator's only (no settings file is read for a tenant), in the
shape of the workspace's (`PUT /workspace/mcp/servers/:name`: qwen-code's `mcpServers`
entry, `$NAME` references for secrets, never shown back), kept under the tenant's MCP
scope (runtime/mcp/grants). A tool reaches an agent only when a grant of its agent type
names it AND its mode's toolset does (`PUT /api/v1/agent-modes/{type}/{mode}/tools`);
a call to a tool not annotated read-only becomes a decision on the tenant's queue.
A tenant whose feature is off answers 403 `feature_disabled`. These routes are the
administrator's (api/security/roles.py): an entry runs a command on the worker.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Depends, Request

from api.deps import ConnectorDep, SettingsDep, StoreDep
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.mcp.models import McpGrant, McpGrantBody, McpRemoved, McpServerEntry, TenantMcp
from api.mcp.workspace_servers import (
    invalid_server_name,
    needs_discovery,
    operator_server,
    server_entry,
    server_not_found,
    start_discovery,
)
from api.openapi import errors, json_body
from api.security import require_configured_token
from api.standing_agents.deps import EnabledTenant
from runtime.mcp import grants
from runtime.mcp.config import (
    SERVER_NAME,
    StrictMcpServerConfig,
    load_servers,
    put_operator_server,
    remove_operator_server,
)
from runtime.mcp.views import server_cells
from runtime.standing_agents.contracts import AgentType

router = APIRouter(
    prefix="/api/v1/tenants/{tenant}/mcp", route_class=StrictJsonRoute, tags=["agents"]
)
MUTATION = [Depends(require_configured_token)]


@router.get("", responses=errors(400, 403), response_model_exclude_none=True)
async def tenant_mcp(
    tenant: EnabledTenant, store: StoreDep, settings: SettingsDep, connector: ConnectorDep
) -> TenantMcp:
    """The tenant's servers with what the worker knows of each, and the grants by agent
    type. Servers the worker never opened are discovered in the background."""
    scope = grants.tenant_scope(tenant)
    servers, states, cells = await server_cells(store, settings, scope)
    state: Literal["not_started", "in_progress", "completed"] = "completed"
    if needs_discovery(servers, states):
        started = await start_discovery(connector, settings, servers, scope)
        state = "in_progress" if started else "not_started"
    elif any(c.mcp_status == "connecting" for c in cells):
        state = "in_progress"
    granted = await asyncio.to_thread(grants.grants, store, tenant)
    return TenantMcp(tenant=tenant, discovery_state=state, servers=cells, grants=granted)


@router.put(
    "/servers/{server}",
    dependencies=MUTATION,
    responses=errors(400, 401, 403),
    response_model_exclude_none=True,
    openapi_extra=json_body(StrictMcpServerConfig),
)
async def put_tenant_mcp_server(
    server: str, tenant: EnabledTenant, request: Request, store: StoreDep, settings: SettingsDep
) -> McpServerEntry:
    """Add or replace one of the tenant's MCP servers (nothing of `env` or `headers` is
    ever shown back)."""
    scope = grants.tenant_scope(tenant)
    existing = await asyncio.to_thread(load_servers, store, scope)
    config = await operator_server(server, request, settings, existing)
    entry = config.model_dump(mode="json", exclude_defaults=True)
    await asyncio.to_thread(put_operator_server, store, scope, server, entry)
    return server_entry(server, config)


@router.delete("/servers/{server}", dependencies=MUTATION, responses=errors(400, 401, 403, 404))
async def delete_tenant_mcp_server(
    server: str, tenant: EnabledTenant, store: StoreDep
) -> McpRemoved:
    if not SERVER_NAME.match(server):
        raise invalid_server_name()
    scope = grants.tenant_scope(tenant)
    removed = await asyncio.to_thread(remove_operator_server, store, scope, server)
    if not removed:
        raise server_not_found(server, f"No MCP server named {server!r} for tenant {tenant!r}")
    return McpRemoved(server_name=server, removed=True)


@router.put("/grants/{agent_type}", dependencies=MUTATION, responses=errors(400, 401, 403))
async def put_tenant_mcp_grant(
    agent_type: AgentType, body: McpGrantBody, tenant: EnabledTenant, store: StoreDep
) -> McpGrant:
    """Grant the tenant's agents of `agent_type` these MCP tools (`mcp__<server>__<tool>`
    or `mcp__<server>__*`), replacing the type's grant; `[]` revokes it. Only granted
    tools enter the type's superset: fail-closed."""
    try:
        tools = await asyncio.to_thread(
            grants.put_grant, store, tenant, agent_type.value, list(body.tools)
        )
    except ValueError as err:
        refusal = grants.InvalidMcpGrant(agent_type=agent_type.value, message=str(err))
        raise ApiError.of(refusal) from None
    return McpGrant(tenant=tenant, agent_type=agent_type, tools=tools)
