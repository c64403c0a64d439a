"""The coordination registry: /api/v1/tenants/{tenant}/registry (spec §2.1b, §2.2, §3.9).

Durable (table `agent_registry`), strictly per tenant, entries expire
AGENTRT_REGISTRY_TTL_MS after their last heartbeat; the tenant's SOA is listed as
registered while it is not Closed (runtime/standing_agents/registry_store.py).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.deps import SettingsDep, StoreDep
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.standing_agents.deps import EnabledTenant, RegistryIdPath
from api.standing_agents.models import RegisterBody, RegistryAgent, RegistryList
from runtime.standing_agents import registry_store
from runtime.standing_agents.registry_store import (
    Registered,
)
from runtime.timestamps import iso_ms

router = APIRouter(prefix="/api/v1/tenants/{tenant}/registry", route_class=StrictJsonRoute)
MUTATION = [Depends(require_configured_token)]


def _view(entry: Registered) -> RegistryAgent:
    return RegistryAgent(
        agent_id=entry.agent_id,
        role=entry.role,
        capabilities=entry.capabilities,
        endpoint=entry.endpoint,
        last_heartbeat_at=iso_ms(entry.last_heartbeat_at),
    )


def _ttl(ms: int) -> timedelta:
    return timedelta(milliseconds=ms)


@router.post("", status_code=201, dependencies=MUTATION, responses=errors(400, 401, 403, 409))
async def register(body: RegisterBody, tenant: EnabledTenant, store: StoreDep) -> RegistryAgent:
    """Register (or re-register) an agent; ids starting with `soa-` are the SOA's (409)."""
    try:
        entry = await asyncio.to_thread(
            registry_store.register,
            store,
            tenant,
            body.agent_id,
            body.role,
            body.capabilities,
            body.endpoint,
        )
    except registry_store.ReservedAgentId as err:
        raise ApiError.of(err.refusal()) from None
    return _view(entry)


@router.post("/{agent_id}/heartbeat", dependencies=MUTATION, responses=errors(400, 401, 403, 404))
async def heartbeat(
    tenant: EnabledTenant, agent_id: RegistryIdPath, store: StoreDep, settings: SettingsDep
) -> RegistryAgent:
    try:
        entry = await asyncio.to_thread(
            registry_store.heartbeat, store, tenant, agent_id, _ttl(settings.registry_ttl_ms)
        )
    except registry_store.NotRegistered as err:
        raise ApiError.of(err.refusal()) from None
    return _view(entry)


@router.get("", responses=errors(400, 403))
async def list_registry(
    tenant: EnabledTenant,
    store: StoreDep,
    settings: SettingsDep,
    capability: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
) -> RegistryList:
    entries = await asyncio.to_thread(
        registry_store.live_entries, store, tenant, _ttl(settings.registry_ttl_ms), capability
    )
    return RegistryList(agents=[_view(entry) for entry in entries])
