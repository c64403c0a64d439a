"""Prompt routes of the daemon: submit (202, or `Prefer: wait`), cancel, pending prompts.
router → SessionWorkflow (the FIFO), the journal (waiting for the turn's end).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from temporalio.client import Client
from temporalio.service import RPCError

from api.deps import JournalDep, SettingsDep, StoreDep, TemporalDep
from api.errors import ApiError
from api.openapi import errors, json_body
from api.requests import client_id_of, read_body
from api.sessions.bodies import PromptBody
from api.sessions.models import PendingPrompt, PendingPrompts, PromptAccepted, PromptEnded
from api.sessions.temporal_calls import (
    live_session,
    session_handle,
    session_status,
    signal_session,
    update_result,
    update_session,
)
from runtime.sessions import prompts as prompt_store
from runtime.sessions.contracts import (
    CancelRequest,
    PromptItem,
    SubmitPrompt,
)
from runtime.sessions.errors import PromptTooLarge
from runtime.store import EventJournal
from runtime.streams import session_stream
from workflows.sessions.session import (
    SessionWorkflow,
)

router = APIRouter()

# -- prompts -------------------------------------------------------------------------------


@router.post(
    "/session/{session_id}/prompt",
    status_code=202,
    response_model=None,
    responses={
        202: {"model": PromptAccepted, "description": "Queued: follow it on the event stream."},
        200: {
            "model": PromptEnded,
            "description": "With `Prefer: wait`: the prompt's end (`{stopReason}`).",
        },
        **errors(400, 404, 409, 503),
    },
    openapi_extra=json_body(PromptBody),
)
async def prompt(
    session_id: str,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    journal: JournalDep,
    client: TemporalDep,
) -> Response:
    body = PromptBody.parse(await read_body(request))
    deadline = body.deadline_ms
    if settings.prompt_deadline_ms is not None:
        deadline = min(deadline or settings.prompt_deadline_ms, settings.prompt_deadline_ms)
    text = body.text()
    size = len(text.encode("utf-8"))
    if size > settings.max_prompt_bytes:
        raise ApiError.of(PromptTooLarge(size=size, limit=settings.max_prompt_bytes))
    await live_session(store, session_id)
    originator = client_id_of(request)
    stream = session_stream(session_id)
    _, last_event_id = await asyncio.to_thread(journal.bounds, stream)
    item = PromptItem(
        prompt_id=str(uuid.uuid4()),
        preview=prompt_store.preview(text),
        originator=originator,
        queued_at_ms=int(time.time() * 1000),
        deadline_ms=deadline,
    )
    # The text goes to the store; the workflow gets its id (history never holds it).
    await asyncio.to_thread(prompt_store.save_prompt, store, session_id, item.prompt_id, text)
    try:
        accepted = await update_session(
            client,
            settings,
            store,
            session_id,
            SessionWorkflow.submit_prompt,
            SubmitPrompt(item=item, model_provider=settings.model_provider),
            update_id=item.prompt_id,
            wait_for_result=False,
        )
        # Accepted is queued: when only the `pending_prompt_added` event is late, the
        # prompt is still taken. A refusal (queue full, session closing) is typed and
        # answers for itself (`api.errors.workflow_error`).
        await update_result(accepted, late_ok=True)
    except ApiError:
        await asyncio.to_thread(prompt_store.forget_prompt, store, item.prompt_id)
        raise
    if "wait" not in request.headers.get("prefer", "").lower():
        accepted_body = PromptAccepted(
            prompt_id=item.prompt_id, last_event_id=last_event_id, event_epoch=session_id
        )
        return JSONResponse(accepted_body.model_dump(), status_code=202)
    stop = await _wait_for_turn(request, journal, client, session_id, item.prompt_id, last_event_id)
    return JSONResponse(PromptEnded(stop_reason=stop).model_dump())


async def _wait_for_turn(
    request: Request,
    journal: EventJournal,
    client: Client,
    session_id: str,
    prompt_id: str,
    after: int,
) -> str:
    """`Prefer: wait`: block until the prompt ends; a caller who leaves cancels it."""
    stream = session_stream(session_id)
    cursor = after
    while True:
        if await request.is_disconnected():
            with contextlib.suppress(RPCError):
                await session_handle(client, session_id).signal(
                    SessionWorkflow.cancel, CancelRequest(prompt_id=prompt_id)
                )
            return "cancelled"
        page = await journal.wait(stream, cursor, 0.5)
        for entry in page.entries:
            cursor = entry.seq
            if entry.data.get("promptId") != prompt_id:
                continue
            if entry.type == "turn_complete":
                return str(entry.data.get("data", {}).get("stopReason", "end_turn"))
            if entry.type == "turn_error":
                return "error"


@router.post("/session/{session_id}/cancel", status_code=204, responses=errors(400, 404, 503))
async def cancel(
    session_id: str, request: Request, store: StoreDep, client: TemporalDep
) -> Response:
    await live_session(store, session_id)
    await signal_session(
        client,
        store,
        session_id,
        SessionWorkflow.cancel,
        CancelRequest(originator=client_id_of(request)),
    )
    return Response(status_code=204)


@router.get("/session/{session_id}/pending-prompts", responses=errors(404, 503))
async def pending_prompts(
    session_id: str, settings: SettingsDep, store: StoreDep, client: TemporalDep
) -> PendingPrompts:
    await live_session(store, session_id)
    status = await session_status(client, session_id, store, settings.worker_wait_ms / 1000)
    items = ([status.active_prompt] if status.active_prompt else []) + status.queued
    return PendingPrompts(
        pending_prompts=[
            PendingPrompt(
                prompt_id=p.prompt_id, text=p.text, queued_at=p.queued_at_ms, state=p.state
            )
            for p in items
        ]
    )
