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
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from api.deps import ConnectorDep, JournalDep, SettingsDep, StoreDep, TemporalDep
from api.errors import ApiError, temporal_unavailable
from api.input_bounds import MAX_DISPLAY_NAME_CHARS
from api.openapi import errors, json_body
from api.requests import client_id_of, read_body
from api.security import require_configured_token
from api.sessions.bodies import (
    ApprovalModeBody,
    CreateSessionBody,
    MetadataBody,
    ModelBody,
    RestoreBody,
)
from api.sessions.models import (
    ApprovalModeSet,
    Heartbeat,
    ModelSwitched,
    SessionContext,
    SessionCreated,
    SessionList,
    SessionMetadata,
    SessionRestored,
    SessionSummary,
)
from api.sessions.temporal_calls import (
    context_state,
    current_model_id,
    live_session,
    register_client,
    session_not_found,
    session_status,
    start_session,
    update_session,
)
from api.temporal import is_unavailable
from runtime.failures import InvalidRequest, RelayedRefusal, refusal_of
from runtime.llm.config_store import LlmConfigRefusal, session_binding
from runtime.llm.contracts import SESSION_SITE
from runtime.sessions import registry
from runtime.sessions.approval_modes import InvalidApprovalMode, is_approval_mode
from runtime.sessions.contracts import (
    CloseRequest,
    ModelSwitchResult,
    ModeSwitchResult,
    SetModelRequest,
    SetModeRequest,
)
from runtime.sessions.errors import (
    ModelSwitchFailed,
    RestoreInProgress,
    SessionLimitExceeded,
    WorkspaceMismatch,
)
from runtime.sessions.streams import session_event
from runtime.settings import Settings
from runtime.store import Store
from runtime.streams import session_stream
from workflows.sessions.session import (
    SessionWorkflow,
)

router = APIRouter()

# The fields PATCH /session/:id/metadata edits (spec 002: only displayName for now).
METADATA_FIELDS = frozenset({"displayName"})

# -- sessions ------------------------------------------------------------------------------


@router.post(
    "/session",
    responses=errors(400, 503),
    openapi_extra=json_body(CreateSessionBody, required=False),
)
async def create_session(
    request: Request, settings: SettingsDep, store: StoreDep, connector: ConnectorDep
) -> SessionCreated:
    bound = settings.workspace_cwd
    body = CreateSessionBody.parse(await read_body(request), context={"workspace": bound})
    scope = body.session_scope
    client_id = client_id_of(request) or f"client_{uuid.uuid4()}"
    try:
        record, attached = await asyncio.to_thread(
            registry.create_or_attach, store, bound, scope, settings.max_sessions
        )
    except registry.SessionLimitReached as err:
        raise ApiError.of(SessionLimitExceeded(limit=err.limit)) from err
    if not attached:
        try:
            # Attaching to a live session is a store operation: only a new one needs Temporal.
            await start_session(await connector.get(), settings, record, store)
        except (ApiError, RPCError, RuntimeError) as err:
            # No workflow, no session: free the slot rather than leave a husk behind.
            await asyncio.to_thread(registry.close_session, store, record.session_id)
            raise temporal_unavailable(
                "Temporal is not reachable; the session was not created"
            ) from err
    await register_client(store, record.session_id, client_id)
    return SessionCreated(
        session_id=record.session_id,
        workspace_cwd=record.workspace_cwd,
        attached=attached,
        client_id=client_id,
        created_at=record.created_at_iso,
    )


@router.get(
    "/workspace/{workspace_id:path}/sessions",
    responses=errors(503),
    response_model_exclude_none=True,
)
async def list_sessions(workspace_id: str, store: StoreDep, connector: ConnectorDep) -> SessionList:
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
                down = isinstance(err, ApiError) and err.body.get("code") == "temporal_unavailable"
                if down or is_unavailable(err):
                    connector.mark_down()
                    client = None  # no point asking about the others
        sessions.append(
            SessionSummary(
                session_id=record.session_id,
                workspace_cwd=record.workspace_cwd,
                created_at=record.created_at_iso,
                client_count=count,
                has_active_prompt=active,
                display_name=record.display_name,
            )
        )
    return SessionList(sessions=sessions)


@router.delete("/session/{session_id}", status_code=204, responses=errors(400, 404, 503))
async def delete_session(
    session_id: str, request: Request, settings: SettingsDep, store: StoreDep, client: TemporalDep
) -> Response:
    await live_session(store, session_id)
    closed_by = client_id_of(request)
    # Accepted means closing: the update is in history and cancels the active prompt;
    # the registry follows. Not accepted in time: 503, and the session stays open.
    await update_session(
        client,
        settings,
        store,
        session_id,
        SessionWorkflow.close,
        CloseRequest(closed_by=closed_by),
        wait_for_result=False,
    )
    await asyncio.to_thread(registry.close_session, store, session_id)
    return Response(status_code=204)


@router.patch(
    "/session/{session_id}/metadata",
    responses=errors(400, 404),
    openapi_extra=json_body(MetadataBody, required=False),
)
async def patch_metadata(
    session_id: str,
    request: Request,
    store: StoreDep,
    journal: JournalDep,
    settings: SettingsDep,
) -> SessionMetadata:
    body = await read_body(request)
    record = await live_session(store, session_id)
    unknown = sorted(set(body) - METADATA_FIELDS)
    if unknown:
        # Spec 002: displayName is the only editable field; anything else (`title`) would
        # otherwise be accepted and silently do nothing.
        raise ApiError.of(
            InvalidRequest(
                message=f"unknown metadata field(s) {', '.join(unknown)}; the only editable "
                f"field is {', '.join(sorted(METADATA_FIELDS))}",
                code="invalid_metadata",
                details={"field": unknown[0], "allowedFields": sorted(METADATA_FIELDS)},
            )
        )
    if "displayName" not in body:
        return SessionMetadata(session_id=session_id, display_name=record.display_name)
    name = body["displayName"]
    if not isinstance(name, str) or len(name) > MAX_DISPLAY_NAME_CHARS:
        raise ApiError.of(
            InvalidRequest(
                message=f"`displayName` must be a string of at most {MAX_DISPLAY_NAME_CHARS} "
                "characters",
                code="invalid_metadata",
                details={"field": "displayName"},
            )
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
    return SessionMetadata(session_id=session_id, display_name=name)


@router.post(
    "/session/{session_id}/heartbeat",
    responses=errors(400, 404),
    response_model_exclude_none=True,
)
async def heartbeat(session_id: str, request: Request, store: StoreDep) -> Heartbeat:
    client_id = client_id_of(request)
    await live_session(store, session_id)
    now = int(time.time() * 1000)
    if client_id is None:
        return Heartbeat(session_id=session_id, last_seen_at=now)
    known = await asyncio.to_thread(registry.heartbeat_client, store, session_id, client_id, now)
    if not known:
        raise ApiError.of(
            InvalidRequest(
                message=f'Client "{client_id}" is not registered for this session',
                code="invalid_client_id",
            )
        )
    return Heartbeat(session_id=session_id, client_id=client_id, last_seen_at=now)


@router.post(
    "/session/{session_id}/model",
    responses=errors(400, 404, 409, 503),
    openapi_extra=json_body(ModelBody),
)
async def set_model(
    session_id: str, request: Request, settings: SettingsDep, store: StoreDep, client: TemporalDep
) -> ModelSwitched:
    raw = await read_body(request)
    await live_session(store, session_id)
    model_id = ModelBody.parse(raw).model_id
    # Validated against, and recorded with, what Session:Default resolves to now.
    try:
        binding, scripted = await asyncio.to_thread(session_binding, store, settings, SESSION_SITE)
    except ApplicationError as err:
        refused = refusal_of(err, LlmConfigRefusal)
        if refused is None:
            raise
        raise ApiError.of(
            RelayedRefusal(
                status=refused.http_status, code=refused.kind_name, message=refused.message
            )
        ) from err
    result: ModelSwitchResult = await update_session(
        client,
        settings,
        store,
        session_id,
        SessionWorkflow.set_model,
        SetModelRequest(
            model_id=model_id,
            originator=client_id_of(request),
            model_provider=settings.model_provider,
            binding=binding,
            binding_scripted=scripted,
        ),
    )
    if not result.ok:
        raise ApiError.of(ModelSwitchFailed(model_id=model_id, reason=result.error))
    return ModelSwitched(model_id=model_id)


@router.post(
    "/session/{session_id}/approval-mode",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 404, 409, 503),
    openapi_extra=json_body(ApprovalModeBody),
)
async def set_approval_mode(
    session_id: str,
    request: Request,
    store: StoreDep,
    client: TemporalDep,
    settings: SettingsDep,
) -> ApprovalModeSet:
    body = await read_body(request)
    await live_session(store, session_id)
    mode = body.get("mode")
    if not is_approval_mode(mode):
        raise ApiError.of(InvalidApprovalMode())
    persist = ApprovalModeBody.parse(body).persist
    result: ModeSwitchResult = await update_session(
        client,
        settings,
        store,
        session_id,
        SessionWorkflow.set_approval_mode,
        SetModeRequest(mode=mode, originator=client_id_of(request), persist=persist),
    )
    return ApprovalModeSet(
        session_id=session_id,
        mode=mode,
        previous=result.previous,
        persisted=result.persisted,
    )


@router.get("/session/{session_id}/context", responses=errors(404, 503))
async def context(
    session_id: str, store: StoreDep, client: TemporalDep, settings: SettingsDep
) -> SessionContext:
    record = await live_session(store, session_id)
    status = await session_status(client, session_id, store, settings.worker_wait_ms / 1000)
    return SessionContext(
        v=1,
        session_id=session_id,
        workspace_cwd=record.workspace_cwd,
        state=context_state(
            await asyncio.to_thread(current_model_id, store, settings, status), status
        ),
    )


RESTORE_DOC: dict[str, Any] = {
    "responses": errors(400, 404, 409, 503),
    "openapi_extra": json_body(RestoreBody, required=False),
}

# In-process restores in flight: same action coalesces, the other one gets 409.
_RESTORES: dict[str, tuple[str, asyncio.Future[SessionRestored]]] = {}


async def _restore(
    action: str,
    session_id: str,
    request: Request,
    settings: Settings,
    store: Store,
    client: Client,
) -> SessionRestored:
    cwd = RestoreBody.parse(await read_body(request)).cwd
    if cwd is not None and cwd.rstrip("/") != settings.workspace_cwd:
        raise ApiError.of(WorkspaceMismatch(bound=settings.workspace_cwd, requested=cwd))
    in_flight = _RESTORES.get(session_id)
    if in_flight is not None:
        active, future = in_flight
        if active != action:
            raise ApiError.of(
                RestoreInProgress(
                    session_id=session_id, active_action=active, requested_action=action
                )
            )
        restored = await asyncio.shield(future)
        return restored.model_copy(update={"attached": True})
    mine: asyncio.Future[SessionRestored] = asyncio.get_running_loop().create_future()
    _RESTORES[session_id] = (action, mine)
    try:
        try:
            record, attached = await asyncio.to_thread(
                registry.revive_session, store, session_id, settings.max_sessions
            )
        except LookupError as err:
            raise session_not_found(session_id) from err
        except registry.SessionLimitReached as err:
            raise ApiError.of(SessionLimitExceeded(limit=err.limit)) from err
        # Also when attached: a session whose workflow is gone (a crash between the
        # registry write and the start) is healed here; a running one is left alone.
        await start_session(client, settings, record, store)
        client_id = client_id_of(request) or f"client_{uuid.uuid4()}"
        await register_client(store, session_id, client_id)
        status = await session_status(client, session_id, store, settings.worker_wait_ms / 1000)
        result = SessionRestored(
            session_id=session_id,
            workspace_cwd=record.workspace_cwd,
            attached=attached,
            client_id=client_id,
            state=context_state(
                await asyncio.to_thread(current_model_id, store, settings, status), status
            ),
        )
        mine.set_result(result)
        return result
    except BaseException as err:
        if not mine.done():
            mine.set_exception(err)
            mine.exception()  # retrieved: coalesced callers re-raise it themselves
        raise
    finally:
        _RESTORES.pop(session_id, None)


@router.post("/session/{session_id}/load", **RESTORE_DOC)
async def load_session(
    session_id: str,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    client: TemporalDep,
) -> SessionRestored:
    """Restore a persisted session; its history is in the journal (replay with
    `Last-Event-ID: 0`)."""
    return await _restore("load", session_id, request, settings, store, client)


@router.post("/session/{session_id}/resume", **RESTORE_DOC)
async def resume_session(
    session_id: str,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    client: TemporalDep,
) -> SessionRestored:
    return await _restore("resume", session_id, request, settings, store, client)
