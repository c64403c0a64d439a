"""GET /session/{id}/events: the session's event stream (SSE) with replay and backpressure.

Checks, in the reference daemon's order, before the stream opens: `maxQueued`
(400 invalid_max_queued), the session (404 session_not_found), the per-session
subscriber cap (429 subscriber_limit_exceeded, Retry-After: 5). The stream
itself reads the journal, so a client reconnecting with `Last-Event-ID` after an
API restart loses nothing.
"""

from __future__ import annotations

import asyncio
import uuid

from fastapi import APIRouter, Request
from starlette.responses import Response

from api.deps import JournalDep, StoreDep
from api.errors import ApiError
from api.openapi import EventStream, errors
from api.routes.session_common import session_not_found
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
from runtime.sessions.registry import get_live_session
from runtime.streams import session_stream

router = APIRouter()

INVALID_MAX_QUEUED = {"error": "`maxQueued` must be in [16, 2048]", "code": "invalid_max_queued"}


@router.get(
    "/session/{session_id}/events",
    response_model=None,
    response_class=EventStream,
    responses=errors(400, 404, 429),
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
async def session_events(
    session_id: str, request: Request, store: StoreDep, journal: JournalDep
) -> Response:
    values = request.query_params.getlist("maxQueued")
    try:
        if len(values) > 1:
            raise ValueError(values)
        max_queued = parse_max_queued(values[0] if values else None)
    except ValueError:
        raise ApiError(400, INVALID_MAX_QUEUED) from None

    if await asyncio.to_thread(get_live_session, store, session_id) is None:
        raise session_not_found(session_id)

    stream = session_stream(session_id)
    earliest, last = await asyncio.to_thread(journal.bounds, stream)
    start = StreamStart(
        session_id=session_id,
        stream=stream,
        max_queued=max_queued,
        last_event_id=parse_last_event_id(request.headers.get("last-event-id")),
        earliest=earliest,
        last=last,
    )

    config = sse_config(request.app)
    registry = subscriber_registry(request.app)
    if not registry.acquire(session_id, config.max_subscribers):
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
            registry.release(session_id)

    async def session_live() -> bool:
        return await asyncio.to_thread(get_live_session, store, session_id) is not None

    return EventStreamResponse(
        event_stream(journal, start, config, session_live, release, stream_shutdown(request.app)),
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache, no-transform",
            "Connection": "keep-alive",
            "X-Accel-Buffering": "no",
            "X-Qwen-SSE-Stream-Id": str(uuid.uuid4()),
            # Ids are durable (the journal), so a session's epoch never changes.
            "X-Qwen-Event-Epoch": session_id,
        },
        on_close=release,
    )
