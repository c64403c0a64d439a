"""What the standing-agent routes share: path bounds, the tenant feature gate, errors.

Every route under /api/v1/tenants/{tenant} answers in the house error shape
(`{"error", "code", ...}`); the control functions (runtime/standing_agents/control.py)
raise typed exceptions that are turned into answers here, once.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Depends, Path

from api.deps import StoreDep
from api.errors import ApiError
from runtime.standing_agents import signals
from runtime.standing_agents.contracts import AgentSignalKind
from runtime.standing_agents.control import standing_agents_enabled

TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
INSTANCE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
DECISION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
CONFIG_KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"
REGISTRY_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$"

TenantPath = Annotated[str, Path(pattern=TENANT_PATTERN)]
InstancePath = Annotated[str, Path(pattern=INSTANCE_PATTERN)]
DecisionPath = Annotated[str, Path(pattern=DECISION_PATTERN)]
ConfigKeyPath = Annotated[str, Path(pattern=CONFIG_KEY_PATTERN)]
RegistryIdPath = Annotated[str, Path(pattern=REGISTRY_ID_PATTERN)]


def feature_disabled(tenant: str) -> ApiError:
    return ApiError(
        403,
        {
            "error": f'Standing agents are not enabled for tenant "{tenant}"',
            "code": "feature_disabled",
            "tenant": tenant,
        },
    )


def agent_not_found(instance_id: str) -> ApiError:
    return ApiError(
        404,
        {
            "error": f'No agent with id "{instance_id}"',
            "code": "agent_not_found",
            "instanceId": instance_id,
        },
    )


async def require_standing_agents(tenant: TenantPath, store: StoreDep) -> str:
    """The tenant feature gate: agent routes of a disabled tenant answer 403."""
    if not await asyncio.to_thread(standing_agents_enabled, store, tenant):
        raise feature_disabled(tenant)
    return tenant


EnabledTenant = Annotated[str, Depends(require_standing_agents)]


def signal_kind_or_400(payload: dict[str, Any]) -> AgentSignalKind:
    """The `payload.signalKind` of an ExternalSignalReceived (spec §3.1), or a 400
    `invalid_signal_kind` naming the allowed kinds."""
    try:
        return signals.signal_kind(payload)
    except signals.InvalidSignalKind as err:
        raise signals.SignalKindRefused(given=err.kind).application_error() from None
