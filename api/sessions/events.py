"""GET /session/{id}/events: the session's event stream (SSE) with replay and backpressure.

Checks, in the reference daemon's order, before the stream opens: `maxQueued`
(400 invalid_max_queued), the session (404 session_not_found), the per-session
subscriber cap (429 subscriber_limit_exceeded, Retry-After: 5). The stream
itself reads the journal, so a client reconnecting with `Last-Event-ID` after an
API restart loses nothing.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from starlette.responses import Response

from api.deps import JournalDep, StoreDep
from api.openapi import EventStream, errors
from api.sessions.temporal_calls import session_not_found
from api.sse import journal_sse_response, max_queued_param, stream_openapi
from runtime.sessions.registry import get_live_session
from runtime.streams import session_stream

router = APIRouter()


@router.get(
    "/session/{session_id}/events",
    response_model=None,
    response_class=EventStream,
    responses=errors(400, 404, 429),
    openapi_extra=stream_openapi(),
)
async def session_events(
    session_id: str, request: Request, store: StoreDep, journal: JournalDep
) -> Response:
    max_queued = max_queued_param(request)
    if await asyncio.to_thread(get_live_session, store, session_id) is None:
        raise session_not_found(session_id)

    async def session_live() -> bool:
        return await asyncio.to_thread(get_live_session, store, session_id) is not None

    return await journal_sse_response(
        request,
        journal,
        stream=session_stream(session_id),
        subscriber_key=session_id,
        session_id=session_id,
        max_queued=max_queued,
        live=session_live,
    )
