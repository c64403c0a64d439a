"""GET /health: liveness, and `?deep=1` counters (informative, not a readiness check)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from api.deps import ConnectorDep
from api.temporal import count_workflows

router = APIRouter()

_DEEP_VALUES = {"", "1", "true"}


@router.get("/health")
async def health(request: Request, connector: ConnectorDep) -> dict[str, Any]:
    deep = request.query_params.get("deep")
    if deep is None or deep.lower() not in _DEEP_VALUES:
        return {"status": "ok"}
    client = await connector.get()
    # Sessions and their pending permissions are workflows; visibility counts them.
    sessions = await count_workflows(
        client, "AgentrtKind = 'session' AND ExecutionStatus = 'Running'"
    )
    pending = await count_workflows(
        client,
        "AgentrtKind = 'session' AND AgentrtStatus = 'awaiting_permission' "
        "AND ExecutionStatus = 'Running'",
    )
    return {"status": "ok", "sessions": sessions, "pendingPermissions": pending}
