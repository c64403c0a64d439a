"""The standing agents' mode catalogue (spec standing-agents §2.5, table `agent_modes`):
/api/v1/agent-modes/{agentType}.

Deployment-wide, like the table: a mode's toolset applies to every tenant's agents of
the type from their next tick. It holds the type's own tools (within its superset,
§3.4.7) and MCP entries (`mcp__<server>__<tool>`, `mcp__<server>__*`), which a tick
offers only where the tenant's grant names them too (/api/v1/tenants/{tenant}/mcp).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Path

from api.deps import StoreDep
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.routes.agents_models import ModeList, ModeToolsBody, ModeView
from api.security import require_configured_token
from runtime.standing_agents.catalog import TOOL_SUPERSET, ModeCatalogError
from runtime.standing_agents.contracts import AgentType, ModeDefinition
from runtime.standing_agents.modes import (
    InvalidModeTools,
    ModeNotFound,
    UnknownMode,
    catalogue,
    set_mode_tools,
)

router = APIRouter(prefix="/api/v1/agent-modes", route_class=StrictJsonRoute, tags=["agents"])
MODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$"


def _view(mode: ModeDefinition) -> ModeView:
    return ModeView(
        agentType=mode.agent_type,
        name=mode.name,
        description=mode.description,
        tools=list(mode.tools),
        isDefault=mode.is_default,
    )


@router.get("/{agent_type}", responses=errors(400))
async def list_modes(agent_type: AgentType, store: StoreDep) -> ModeList:
    modes = await asyncio.to_thread(catalogue, store, agent_type)
    return ModeList(
        agentType=agent_type,
        modes=[_view(m) for m in modes],
        superset=sorted(TOOL_SUPERSET[agent_type]),
    )


@router.put(
    "/{agent_type}/{mode}/tools",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 404),
)
async def put_mode_tools(
    agent_type: AgentType,
    body: ModeToolsBody,
    store: StoreDep,
    mode: str = Path(pattern=MODE_PATTERN),
) -> ModeView:
    """Replace the mode's toolset (phase_complete and phase_blocked are always in it)."""
    try:
        updated = await asyncio.to_thread(set_mode_tools, store, agent_type, mode, list(body.tools))
    except UnknownMode as err:
        raise ApiError.of(ModeNotFound(mode=mode, allowed=err.allowed)) from None
    except ModeCatalogError as err:
        raise ApiError.of(InvalidModeTools(message=str(err))) from None
    return _view(updated)
