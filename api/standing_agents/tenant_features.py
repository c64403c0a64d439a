"""The tenant flag of standing agents: /api/v1/tenants/{tenant}/features/standing-agents.

Default off. Enabling it with auto-bootstrap on (the default) ensures the tenant's
singleton SOA (Active and seeded with AgentInitialized when
AGENTRT_STANDING_AGENTS_IDLE_BY_DEFAULT, else Paused), in its foundational phase, and
wakes its workflow. A new tenant needs no restart: the flag is a row, read per request.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends

from api.deps import SettingsDep, StoreDep, TenantPath
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.standing_agents.temporal_calls import WakerDep
from runtime.standing_agents import control
from runtime.standing_agents.contracts import STANDING_AGENTS_FEATURE
from runtime.tenants.views import FeatureBody, FeatureState

router = APIRouter(prefix="/api/v1/tenants/{tenant}/features", route_class=StrictJsonRoute)
PATH = f"/{STANDING_AGENTS_FEATURE}"


@router.get(PATH, responses=errors(400))
async def get_standing_agents(
    tenant: TenantPath, store: StoreDep, settings: SettingsDep
) -> FeatureState:
    enabled = await asyncio.to_thread(control.standing_agents_enabled, store, tenant)
    soa = await asyncio.to_thread(control.tenant_soa, store, tenant)
    return FeatureState(
        tenant=tenant,
        feature=STANDING_AGENTS_FEATURE,
        enabled=enabled,
        soa_instance_id=soa.instance_id if soa is not None else None,
        deployment_enabled=settings.standing_agents_enabled,
    )


@router.put(
    PATH,
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401),
)
async def put_standing_agents(
    body: FeatureBody,
    tenant: TenantPath,
    store: StoreDep,
    settings: SettingsDep,
    waker: WakerDep,
) -> FeatureState:
    """Enable or disable; enabling wakes the tenant's open agents (their workflows
    stopped ticking while it was off), and bootstraps the SOA."""
    to_wake = await asyncio.to_thread(
        control.set_standing_agents, store, settings, tenant, body.enabled
    )
    for instance in to_wake:
        # Starts a workflow that is not running (signal-with-start); a failure is retried.
        await waker(instance)
    soa = await asyncio.to_thread(control.tenant_soa, store, tenant)
    return FeatureState(
        tenant=tenant,
        feature=STANDING_AGENTS_FEATURE,
        enabled=body.enabled,
        soa_instance_id=soa.instance_id if soa is not None else None,
        deployment_enabled=settings.standing_agents_enabled,
    )
