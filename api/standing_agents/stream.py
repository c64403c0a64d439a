"""GET /api/v1/tenants/{tenant}/agents/{id}/stream: the agent's journal stream as SSE.

The same framing, replay (`Last-Event-ID`) and backpressure as the session stream
(api/sse.py): turns, messages, decisions, mode changes and status, from the journal
stream `agent/{tenant}/{instanceId}`, so a client reconnecting after an API restart
loses nothing.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from starlette.responses import Response

from api.deps import JournalDep, StoreDep
from api.openapi import EventStream, errors
from api.sse import journal_sse_response, max_queued_param, stream_openapi
from api.standing_agents.deps import EnabledTenant, InstancePath
from runtime.standing_agents import control
from runtime.streams import agent_stream

router = APIRouter()


@router.get(
    "/api/v1/tenants/{tenant}/agents/{instance_id}/stream",
    response_model=None,
    response_class=EventStream,
    responses=errors(400, 403, 404, 429),
    openapi_extra=stream_openapi(),
)
async def stream_agent(
    tenant: EnabledTenant,
    instance_id: InstancePath,
    request: Request,
    store: StoreDep,
    journal: JournalDep,
) -> Response:
    max_queued = max_queued_param(request)
    await asyncio.to_thread(control.get_instance, store, tenant, instance_id)

    async def agent_live() -> bool:
        # An agent's stream never closes (a Closed agent can be started again).
        return True

    stream = agent_stream(tenant, instance_id)
    return await journal_sse_response(
        request,
        journal,
        stream=stream,
        subscriber_key=stream,
        session_id=stream,
        max_queued=max_queued,
        live=agent_live,
    )
