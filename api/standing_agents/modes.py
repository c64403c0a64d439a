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

from api.deps import SettingsDep, StoreDep
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.standing_agents.models import ModeList, ModePresetBody, ModeToolsBody, ModeView
from runtime.llm.preset_store import get_preset
from runtime.standing_agents.catalog import TOOL_SUPERSET
from runtime.standing_agents.contracts import AgentType, ModeDefinition
from runtime.standing_agents.modes import (
    UnknownModePreset,
    catalogue,
    set_mode_preset,
    set_mode_tools,
)

router = APIRouter(prefix="/api/v1/agent-modes", route_class=StrictJsonRoute, tags=["agents"])
MODE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$"


def _view(mode: ModeDefinition) -> ModeView:
    return ModeView(
        agent_type=mode.agent_type,
        name=mode.name,
        description=mode.description,
        tools=list(mode.tools),
        is_default=mode.is_default,
        preset_id=mode.preset_id,
    )


@router.get("/{agent_type}", responses=errors(400))
async def list_modes(agent_type: AgentType, store: StoreDep) -> ModeList:
    modes = await asyncio.to_thread(catalogue, store, agent_type)
    return ModeList(
        agent_type=agent_type,
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
    """Replace the mode's toolset (the control verbs phase_complete, phase_blocked and
    soa_propose_mode_change are always in it; agent_workset_complete is offered while
    the agent is foundational)."""
    updated = await asyncio.to_thread(set_mode_tools, store, agent_type, mode, list(body.tools))
    return _view(updated)


@router.put(
    "/{agent_type}/{mode}/preset",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 404),
)
async def put_mode_preset(
    agent_type: AgentType,
    body: ModePresetBody,
    store: StoreDep,
    settings: SettingsDep,
    mode: str = Path(pattern=MODE_PATTERN),
) -> ModeView:
    """Set the preset this mode's planning calls use, over the type's site binding, from
    the agents' next tick (`null`: the binding again). 400 `unknown_preset` for a
    preset that does not exist; a preset a mode names cannot be deleted (409
    `preset_in_use`, with `modes`)."""
    if body.preset_id is not None:
        found = await asyncio.to_thread(get_preset, store, settings, body.preset_id)
        if found is None:
            raise ApiError.of(UnknownModePreset(preset_id=body.preset_id))
    updated = await asyncio.to_thread(set_mode_preset, store, agent_type, mode, body.preset_id)
    return _view(updated)
