"""The standing-agent routes' dependencies: path bounds and the tenant feature gate (other
features' routes that need standing agents enabled take `EnabledTenant` too).

Every route under /api/v1/tenants/{tenant} answers in the house error shape
(`{"error", "code", ...}`): the control functions (runtime/standing_agents/control.py)
refuse with typed `WireError`s (runtime/standing_agents/errors.py and the policy
modules), which api/errors.py answers.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, Path

from api.deps import StoreDep, TenantPath
from api.errors import ApiError
from runtime.standing_agents.control import standing_agents_enabled
from runtime.standing_agents.errors import StandingAgentsDisabled

INSTANCE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
DECISION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
CONFIG_KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"
REGISTRY_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$"

InstancePath = Annotated[str, Path(pattern=INSTANCE_PATTERN)]
DecisionPath = Annotated[str, Path(pattern=DECISION_PATTERN)]
ConfigKeyPath = Annotated[str, Path(pattern=CONFIG_KEY_PATTERN)]
RegistryIdPath = Annotated[str, Path(pattern=REGISTRY_ID_PATTERN)]


async def require_standing_agents(tenant: TenantPath, store: StoreDep) -> str:
    """The tenant feature gate: agent routes of a disabled tenant answer 403."""
    if not await asyncio.to_thread(standing_agents_enabled, store, tenant):
        raise ApiError.of(StandingAgentsDisabled(tenant=tenant))
    return tenant


EnabledTenant = Annotated[str, Depends(require_standing_agents)]
