"""Session lifecycle routes of the daemon (spec session-daemon-http-protocol): create or
attach, list, close, metadata, heartbeat, model, approval mode, context, load and resume.
router → SessionWorkflow (settings, close) or the store (the registry).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from temporalio.client import Client
from temporalio.service import RPCError

from api.deps import ConnectorDep, JournalDep, SettingsDep, StoreDep, TemporalDep
from api.errors import ApiError
from api.routes.session_common import (
    WAIT_FOR_WORKER,
    client_id_of,
    context_state,
    limit_reached,
    live_session,
    read_body,
    register_client,
    session_handle,
    session_not_found,
    session_status,
    start_session,
    update_session,
    workspace_mismatch,
)
from api.security import require_configured_token
from api.temporal import is_unavailable
from runtime.sessions import registry
from runtime.sessions.contracts import (
    CloseRequest,
    ModelSwitchResult,
    SetModelRequest,
    SetModeRequest,
)
from runtime.sessions.streams import session_event, session_stream
from runtime.settings import Settings
from runtime.store import Store
from workflows.session import (
    APPROVAL_MODES,
    SessionWorkflow,
)

router = APIRouter()

# -- sessions ------------------------------------------------------------------------------


@router.post("/session")
async def create_session(
    request: Request, settings: SettingsDep, store: StoreDep, connector: ConnectorDep
) -> dict[str, Any]:
    body = await read_body(request)
    cwd = body.get("cwd")
    bound = settings.workspace_cwd
    if cwd is not None:
        if not isinstance(cwd, str) or not cwd or not cwd.startswith("/"):
            raise ApiError(400, {"error": "`cwd` must be an absolute path", "code": "invalid_cwd"})
        requested = cwd.rstrip("/") or "/"
        if requested != bound:
            raise workspace_mismatch(bound, requested)
    scope = body.get("sessionScope", "single")
    if scope not in ("single", "thread"):
        raise ApiError(
            400,
            {
                "error": '`sessionScope` must be "single" or "thread" when provided',
                "code": "invalid_session_scope",
            },
        )
    client_id = client_id_of(request) or f"client_{uuid.uuid4()}"
    try:
        record, attached = await asyncio.to_thread(
            registry.create_or_attach, store, bound, scope, settings.max_sessions
        )
    except registry.SessionLimitReached as err:
        raise limit_reached(err) from err
    if not attached:
        try:
            # Attaching to a live session is a store operation: only a new one needs Temporal.
            await start_session(await connector.get(), settings, record)
        except (ApiError, RPCError, RuntimeError) as err:
            # No workflow, no session: free the slot rather than leave a husk behind.
            await asyncio.to_thread(registry.close_session, store, record.session_id)
            raise ApiError(
                503,
                {
                    "error": "Temporal is not reachable; the session was not created",
                    "code": "temporal_unavailable",
                },
                {"Retry-After": "5"},
            ) from err
    await register_client(store, record.session_id, client_id)
    response: dict[str, Any] = {
        "sessionId": record.session_id,
        "workspaceCwd": record.workspace_cwd,
        "attached": attached,
        "clientId": client_id,
        "createdAt": record.created_at_iso,
    }
    return response


@router.get("/workspace/{workspace_id:path}/sessions")
async def list_sessions(
    workspace_id: str, store: StoreDep, connector: ConnectorDep
) -> dict[str, Any]:
    workspace = "/" + workspace_id.strip("/") if workspace_id.strip("/") else "/"
    records = await asyncio.to_thread(registry.list_live, store, workspace)
    # A store read: with Temporal down, the list is still there (no active prompt known).
    client: Client | None
    try:
        client = await connector.get()
    except ApiError:
        client = None
    sessions = []
    for record in records:
        count = await asyncio.to_thread(registry.client_count, store, record.session_id)
        active = False
        if client is not None:
            try:
                status = await asyncio.wait_for(session_status(client, record.session_id), 5)
                active = status.active_prompt is not None
            except (ApiError, RPCError, TimeoutError) as err:
                if is_unavailable(err):
                    connector.mark_down()
                    client = None  # no point asking about the others
        entry: dict[str, Any] = {
            "sessionId": record.session_id,
            "workspaceCwd": record.workspace_cwd,
            "createdAt": record.created_at_iso,
            "clientCount": count,
            "hasActivePrompt": active,
        }
        if record.display_name is not None:
            entry["displayName"] = record.display_name
        sessions.append(entry)
    return {"sessions": sessions}


@router.delete("/session/{session_id}", status_code=204)
async def delete_session(
    session_id: str, request: Request, store: StoreDep, client: TemporalDep
) -> Response:
    await live_session(store, session_id)
    closed_by = client_id_of(request)
    try:
        await asyncio.wait_for(
            session_handle(client, session_id).execute_update(
                SessionWorkflow.close, CloseRequest(closed_by=closed_by)
            ),
            WAIT_FOR_WORKER,
        )
    except RPCError as err:
        if is_unavailable(err):
            raise  # Temporal is down: a 503, and the session stays as it is
    await asyncio.to_thread(registry.close_session, store, session_id)
    return Response(status_code=204)


@router.patch("/session/{session_id}/metadata")
async def patch_metadata(
    session_id: str,
    request: Request,
    store: StoreDep,
    journal: JournalDep,
    settings: SettingsDep,
) -> dict[str, Any]:
    body = await read_body(request)
    record = await live_session(store, session_id)
    if "displayName" not in body:
        return {"sessionId": session_id, "displayName": record.display_name}
    name = body["displayName"]
    if not isinstance(name, str):
        raise ApiError(
            400,
            {
                "error": "`displayName` must be a string",
                "code": "invalid_metadata",
                "field": "displayName",
            },
        )
    await asyncio.to_thread(registry.rename_session, store, session_id, name)
    await journal.aappend_many(
        session_stream(session_id),
        [
            session_event(
                "session_metadata_updated",
                {"sessionId": session_id, "displayName": name, "titleSource": "manual"},
                originator=client_id_of(request),
            )
        ],
        retention=settings.event_ring_size,
    )
    return {"sessionId": session_id, "displayName": name}


@router.post("/session/{session_id}/heartbeat")
async def heartbeat(session_id: str, request: Request, store: StoreDep) -> dict[str, Any]:
    client_id = client_id_of(request)
    await live_session(store, session_id)
    now = int(time.time() * 1000)
    if client_id is None:
        return {"sessionId": session_id, "lastSeenAt": now}
    known = await asyncio.to_thread(registry.heartbeat_client, store, session_id, client_id, now)
    if not known:
        raise ApiError(
            400,
            {
                "error": f'Client "{client_id}" is not registered for this session',
                "code": "invalid_client_id",
            },
        )
    return {"sessionId": session_id, "clientId": client_id, "lastSeenAt": now}


@router.post("/session/{session_id}/model")
async def set_model(
    session_id: str, request: Request, store: StoreDep, client: TemporalDep
) -> dict[str, Any]:
    body = await read_body(request)
    await live_session(store, session_id)
    model_id = body.get("modelId")
    if not isinstance(model_id, str) or not model_id:
        raise ApiError(
            400, {"error": "`modelId` must be a non-empty string", "code": "invalid_model_id"}
        )
    result: ModelSwitchResult = await update_session(
        client,
        session_id,
        lambda h: h.execute_update(
            SessionWorkflow.set_model,
            SetModelRequest(model_id=model_id, originator=client_id_of(request)),
        ),
    )
    if not result.ok:
        raise ApiError(
            400,
            {
                "error": result.error or "model switch failed",
                "code": "model_switch_failed",
                "modelId": model_id,
            },
        )
    return {"modelId": model_id}


@router.post(
    "/session/{session_id}/approval-mode", dependencies=[Depends(require_configured_token)]
)
async def set_approval_mode(
    session_id: str,
    request: Request,
    store: StoreDep,
    client: TemporalDep,
    settings: SettingsDep,
) -> dict[str, Any]:
    body = await read_body(request)
    await live_session(store, session_id)
    mode = body.get("mode")
    if mode not in APPROVAL_MODES:
        raise ApiError(
            400,
            {
                "error": "`mode` is required and must be one of the allowed values",
                "code": "invalid_approval_mode",
                "allowed": list(APPROVAL_MODES),
            },
        )
    await update_session(
        client,
        session_id,
        lambda h: h.execute_update(
            SessionWorkflow.set_approval_mode,
            SetModeRequest(mode=mode, originator=client_id_of(request)),
        ),
    )
    return {"sessionId": session_id, "mode": mode}


@router.get("/session/{session_id}/context")
async def context(
    session_id: str, store: StoreDep, client: TemporalDep, settings: SettingsDep
) -> dict[str, Any]:
    record = await live_session(store, session_id)
    status = await session_status(client, session_id)
    return {
        "v": 1,
        "sessionId": session_id,
        "workspaceCwd": record.workspace_cwd,
        "state": context_state(settings, status),
    }


# In-process restores in flight: same action coalesces, the other one gets 409.
_RESTORES: dict[str, tuple[str, asyncio.Future[dict[str, Any]]]] = {}


async def _restore(
    action: str,
    session_id: str,
    request: Request,
    settings: Settings,
    store: Store,
    client: Client,
) -> dict[str, Any]:
    body = await read_body(request)
    cwd = body.get("cwd")
    if isinstance(cwd, str) and cwd.rstrip("/") != settings.workspace_cwd:
        raise workspace_mismatch(settings.workspace_cwd, cwd)
    in_flight = _RESTORES.get(session_id)
    if in_flight is not None:
        active, future = in_flight
        if active != action:
            raise ApiError(
                409,
                {
                    "error": f'Session "{session_id}" is already being restored via session/'
                    f"{active}; retry session/{action} after it completes",
                    "code": "restore_in_progress",
                    "sessionId": session_id,
                    "activeAction": active,
                    "requestedAction": action,
                },
                {"Retry-After": "5"},
            )
        return {**(await asyncio.shield(future)), "attached": True}
    mine: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    _RESTORES[session_id] = (action, mine)
    try:
        try:
            record, attached = await asyncio.to_thread(
                registry.revive_session, store, session_id, settings.max_sessions
            )
        except LookupError as err:
            raise session_not_found(session_id) from err
        except registry.SessionLimitReached as err:
            raise limit_reached(err) from err
        # Also when attached: a session whose workflow is gone (a crash between the
        # registry write and the start) is healed here; a running one is left alone.
        await start_session(client, settings, record)
        client_id = client_id_of(request) or f"client_{uuid.uuid4()}"
        await register_client(store, session_id, client_id)
        status = await session_status(client, session_id)
        result = {
            "sessionId": session_id,
            "workspaceCwd": record.workspace_cwd,
            "attached": attached,
            "clientId": client_id,
            "state": context_state(settings, status),
        }
        mine.set_result(result)
        return result
    except BaseException as err:
        if not mine.done():
            mine.set_exception(err)
            mine.exception()  # retrieved: coalesced callers re-raise it themselves
        raise
    finally:
        _RESTORES.pop(session_id, None)


@router.post("/session/{session_id}/load")
async def load_session(
    session_id: str,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    client: TemporalDep,
) -> dict[str, Any]:
    """Restore a persisted session; its history is in the journal (replay with
    `Last-Event-ID: 0`)."""
    return await _restore("load", session_id, request, settings, store, client)


@router.post("/session/{session_id}/resume")
async def resume_session(
    session_id: str,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    client: TemporalDep,
) -> dict[str, Any]:
    return await _restore("resume", session_id, request, settings, store, client)
