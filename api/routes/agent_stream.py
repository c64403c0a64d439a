"""GET /api/v1/tenants/{tenant}/agents/{id}/stream: the agent's journal stream as SSE.

The same framing, replay (`Last-Event-ID`) and backpressure as the session stream
(api/sse.py): turns, messages, decisions, mode changes and status, from the journal
stream `agent/{tenant}/{instanceId}`, so a client reconnecting after an API restart
loses nothing.
"""

from __future__ import annotations

import asyncio
import uuid

from fastapi import APIRouter, Request
from starlette.responses import Response

from api.deps import JournalDep, StoreDep
from api.errors import ApiError
from api.openapi import EventStream, errors
from api.routes.agents import run_control
from api.routes.session_events import INVALID_MAX_QUEUED
from api.routes.standing_common import EnabledTenant, InstancePath
from api.sse import (
    SUBSCRIBER_LIMIT_RETRY_AFTER,
    EventStreamResponse,
    StreamStart,
    event_stream,
    parse_last_event_id,
    sse_config,
    stream_shutdown,
    subscriber_registry,
)
from runtime.policy.backpressure import parse_max_queued
from runtime.standing_agents import control
from runtime.streams import agent_stream

router = APIRouter()


@router.get(
    "/api/v1/tenants/{tenant}/agents/{instance_id}/stream",
    response_model=None,
    response_class=EventStream,
    responses=errors(400, 403, 404, 429),
    openapi_extra={
        "parameters": [
            {
                "name": "maxQueued",
                "in": "query",
                "schema": {"type": "integer", "minimum": 16, "maximum": 2048, "default": 256},
                "description": "Live frames queued for this subscriber before eviction.",
            },
            {
                "name": "Last-Event-ID",
                "in": "header",
                "schema": {"type": "string", "pattern": "^[0-9]+$"},
                "description": "Replay the journal after this id (`0`: from the start).",
            },
        ]
    },
)
async def stream_agent(
    tenant: EnabledTenant,
    instance_id: InstancePath,
    request: Request,
    store: StoreDep,
    journal: JournalDep,
) -> Response:
    values = request.query_params.getlist("maxQueued")
    try:
        if len(values) > 1:
            raise ValueError(values)
        max_queued = parse_max_queued(values[0] if values else None)
    except ValueError:
        raise ApiError(400, INVALID_MAX_QUEUED) from None
    await run_control(control.get_instance, store, tenant, instance_id)

    stream = agent_stream(tenant, instance_id)
    earliest, last = await asyncio.to_thread(journal.bounds, stream)
    start = StreamStart(
        session_id=stream,
        stream=stream,
        max_queued=max_queued,
        last_event_id=parse_last_event_id(request.headers.get("last-event-id")),
        earliest=earliest,
        last=last,
    )
    config = sse_config(request.app)
    registry = subscriber_registry(request.app)
    if not registry.acquire(stream, config.max_subscribers):
        raise ApiError(
            429,
            {
                "error": f"EventBus subscriber limit reached ({config.max_subscribers})",
                "code": "subscriber_limit_exceeded",
                "limit": config.max_subscribers,
            },
            {"Retry-After": SUBSCRIBER_LIMIT_RETRY_AFTER},
        )
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            registry.release(stream)

    async def agent_live() -> bool:
        # An agent's stream never closes (a Closed agent can be started again).
        return True

    return EventStreamResponse(
        event_stream(journal, start, config, agent_live, release, stream_shutdown(request.app)),
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache, no-transform",
            "Connection": "keep-alive",
            "X-Accel-Buffering": "no",
            "X-Qwen-SSE-Stream-Id": str(uuid.uuid4()),
            "X-Qwen-Event-Epoch": stream,
        },
        on_close=release,
    )
