"""Live configuration of a tenant's agents: /api/v1/tenants/{tenant}/config/{key}.

`system_configs` rows (budgets `AgentDispatcher:*`, the weekly credit, the constitution
rules `constitution.rules`), validated per key by runtime/standing_agents/configs.py;
a change applies at the agents' next tick. A tenant whose feature is off answers 403
`feature_disabled`, like its other agent routes.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends

from api.deps import JournalDep, SettingsDep, StoreDep
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.standing_agents.deps import ConfigKeyPath, EnabledTenant
from api.standing_agents.models import ConfigBody, ConfigList, ConfigValue
from api.standing_agents.temporal_calls import WakerDep
from runtime.settings import Settings
from runtime.standing_agents import budget_pause, configs, control
from runtime.standing_agents.configs import KNOWN_KEYS, ConfigKeyNotFound, effective_value
from runtime.standing_agents.models import SystemConfig

router = APIRouter(prefix="/api/v1/tenants/{tenant}/config", route_class=StrictJsonRoute)


def _view(tenant: str, key: str, row: SystemConfig | None, settings: Settings) -> ConfigValue:
    value = row.value if row is not None else None
    return ConfigValue(
        tenant=tenant,
        key=key,
        value=value,
        effective=effective_value(key, value, settings),
        updated_at=control.iso(row.updated_at) if row is not None else None,
    )


@router.get("", responses=errors(400, 403))
async def list_configs(tenant: EnabledTenant, store: StoreDep, settings: SettingsDep) -> ConfigList:
    """Every known key, with its stored value (null when unset) and the value in force."""
    rows = await asyncio.to_thread(configs.tenant_configs, store, tenant)
    return ConfigList(
        tenant=tenant,
        configs=[_view(tenant, key, rows.get(key), settings) for key in sorted(KNOWN_KEYS)],
    )


@router.get("/{key}", responses=errors(400, 403, 404))
async def get_config(
    tenant: EnabledTenant, key: ConfigKeyPath, store: StoreDep, settings: SettingsDep
) -> ConfigValue:
    """The stored value (`null` when unset) and `effective`, what a tick uses: the
    stored value, else the settings layer, else the code default."""
    if key not in KNOWN_KEYS:
        raise ApiError.of(ConfigKeyNotFound(key=key))
    row = await asyncio.to_thread(configs.get_config, store, tenant, key)
    return _view(tenant, key, row, settings)


@router.put(
    "/{key}",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 403, 404),
)
async def put_config(
    body: ConfigBody,
    tenant: EnabledTenant,
    key: ConfigKeyPath,
    store: StoreDep,
    journal: JournalDep,
    settings: SettingsDep,
    waker: WakerDep,
) -> ConfigValue:
    """Store the value; an agent paused on a budget this raises resumes at once (issue
    21, item 9; the API's sweeper re-checks them too, should this process die here)."""
    row = await asyncio.to_thread(configs.put_config, store, tenant, key, body.value)
    resumed = await asyncio.to_thread(
        budget_pause.resume_lifted, store, settings, control.now_utc(), tenant
    )
    for instance in resumed:
        await asyncio.to_thread(control.journal_status, journal, instance)
        await waker(instance)
    return _view(tenant, key, row, settings)
