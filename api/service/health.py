"""GET /health: liveness, and `?deep=1` counters (informative, not a readiness check)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request

from api.deps import ConnectorDep, SettingsDep, StoreDep
from api.openapi import errors, query
from api.service.models import Health
from api.temporal import count_pending_permissions
from runtime.sessions.registry import count_live

router = APIRouter()

_DEEP_VALUES = {"", "1", "true"}


@router.get(
    "/health",
    responses=errors(503),
    openapi_extra=query(
        "deep", {"type": "string", "enum": ["", "1", "true"]}, "Add live counters."
    ),
    response_model_exclude_none=True,
)
async def health(
    request: Request, connector: ConnectorDep, store: StoreDep, settings: SettingsDep
) -> Health:
    deep = request.query_params.get("deep")
    if deep is None or deep.lower() not in _DEEP_VALUES:
        return Health(status="ok")
    client = await connector.get()
    sessions = await asyncio.to_thread(count_live, store)
    pending = await count_pending_permissions(client, settings.workspace_cwd)
    return Health(status="ok", sessions=sessions, pending_permissions=pending)
