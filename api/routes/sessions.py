"""The session daemon's routes (spec session-daemon-http-protocol): sessions, prompts,
permissions. router → SessionWorkflow (prompts, votes, settings) or the store (registry).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import re
import time
import uuid
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import TypedSearchAttributes
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from api.deps import JournalDep, SettingsDep, StoreDep, TemporalDep
from api.errors import INVALID_JSON, ApiError
from api.security import require_configured_token
from runtime.policy.approval import AVAILABLE_MODES
from runtime.sessions import registry
from runtime.sessions.contracts import (
    CancelRequest,
    CloseRequest,
    ModelSwitchResult,
    PromptItem,
    SessionInput,
    SessionStatus,
    SetModelRequest,
    SetModeRequest,
    SubmitPrompt,
    VoteRequest,
)
from runtime.sessions.streams import session_event, session_stream
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from workflows.session import (
    APPROVAL_MODES,
    SessionWorkflow,
    session_search_attributes,
    session_workflow_id,
)

router = APIRouter()

CLIENT_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
PROMPT_REQUIRED = "`prompt` is required and must be a non-empty array of content blocks"
WAIT_FOR_WORKER = 30.0


# -- helpers -------------------------------------------------------------------------------


def session_not_found(session_id: str) -> ApiError:
    return ApiError(
        404,
        {
            "error": f'No session with id "{session_id}"',
            "code": "session_not_found",
            "sessionId": session_id,
        },
    )


def _limit_reached(err: registry.SessionLimitReached) -> ApiError:
    return ApiError(
        503,
        {"error": str(err), "code": "session_limit_exceeded", "limit": err.limit},
        {"Retry-After": "5"},
    )


def _workspace_mismatch(bound: str, requested: str) -> ApiError:
    return ApiError(
        400,
        {
            "error": f'Workspace mismatch: daemon is bound to "{bound}" but request asked for '
            f'"{requested}". Omit `cwd` or use a daemon bound to it.',
            "code": "workspace_mismatch",
            "boundWorkspace": bound,
            "requestedWorkspace": requested,
        },
    )


async def _body(request: Request) -> dict[str, Any]:
    """The JSON object body; `{}` when empty; 400 for malformed JSON or a non-object."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as err:
        raise ApiError(400, INVALID_JSON) from err
    if not isinstance(body, dict):
        raise ApiError(400, {"error": "Request body must be a JSON object"})
    return body


def _client_id(request: Request) -> str | None:
    value = request.headers.get("x-qwen-client-id")
    if value is None:
        return None
    if not CLIENT_ID.match(value):
        raise ApiError(400, {"error": "X-Qwen-Client-Id is malformed", "code": "invalid_client_id"})
    return value


def _is_local(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host in ("localhost", "testclient")


async def _live(store: Store, session_id: str) -> registry.SessionRecord:
    record = await asyncio.to_thread(registry.get_live_session, store, session_id)
    if record is None:
        raise session_not_found(session_id)
    return record


def _handle(client: Client, session_id: str) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(session_workflow_id(session_id))


async def _status(client: Client, session_id: str) -> SessionStatus:
    try:
        return await asyncio.wait_for(
            _handle(client, session_id).query(SessionWorkflow.status), WAIT_FOR_WORKER
        )
    except TimeoutError as err:
        raise ApiError(
            503,
            {"error": "No worker answered in time", "code": "worker_unavailable"},
            {"Retry-After": "5"},
        ) from err


def _session_input(settings: Settings, record: registry.SessionRecord) -> SessionInput:
    return SessionInput(
        session_id=record.session_id,
        workspace_cwd=record.workspace_cwd,
        policy=settings.permission_policy,
        permission_timeout_ms=settings.permission_response_timeout_ms,
        max_pending_prompts=settings.max_pending_prompts_per_session,
        event_retention=settings.event_ring_size,
        shell_enabled=settings.session_shell,
        model_id=settings.openai_model if settings.model_provider == "openai" else "scripted",
        model_provider=settings.model_provider,
    )


async def _start(client: Client, settings: Settings, record: registry.SessionRecord) -> None:
    request = _session_input(settings, record)
    with contextlib.suppress(WorkflowAlreadyStartedError):
        await client.start_workflow(
            SessionWorkflow.run,
            request,
            id=session_workflow_id(record.session_id),
            task_queue=settings.task_queue,
            search_attributes=TypedSearchAttributes(session_search_attributes(request)),
        )


async def _register(store: Store, session_id: str, client_id: str) -> None:
    await asyncio.to_thread(
        registry.register_client, store, session_id, client_id, int(time.time() * 1000)
    )


def _context_state(settings: Settings, status: SessionStatus | None) -> dict[str, Any]:
    current_model = status.model_id if status else "scripted"
    models = [current_model] if settings.model_provider == "openai" else ["scripted"]
    return {
        "models": {
            "currentModelId": current_model,
            "availableModels": [{"modelId": m, "name": m, "description": None} for m in models],
        },
        "modes": {
            "currentModeId": status.approval_mode if status else "default",
            "availableModes": list(AVAILABLE_MODES),
        },
        "configOptions": [],
    }


# -- sessions ------------------------------------------------------------------------------


@router.post("/session")
async def create_session(
    request: Request, settings: SettingsDep, store: StoreDep, client: TemporalDep
) -> dict[str, Any]:
    body = await _body(request)
    cwd = body.get("cwd")
    bound = settings.workspace_cwd
    if cwd is not None:
        if not isinstance(cwd, str) or not cwd or not cwd.startswith("/"):
            raise ApiError(400, {"error": "`cwd` must be an absolute path", "code": "invalid_cwd"})
        requested = cwd.rstrip("/") or "/"
        if requested != bound:
            raise _workspace_mismatch(bound, requested)
    scope = body.get("sessionScope", "single")
    if scope not in ("single", "thread"):
        raise ApiError(
            400,
            {
                "error": '`sessionScope` must be "single" or "thread" when provided',
                "code": "invalid_session_scope",
            },
        )
    client_id = _client_id(request) or f"client_{uuid.uuid4()}"
    try:
        record, attached = await asyncio.to_thread(
            registry.create_or_attach, store, bound, scope, settings.max_sessions
        )
    except registry.SessionLimitReached as err:
        raise _limit_reached(err) from err
    if not attached:
        await _start(client, settings, record)
    await _register(store, record.session_id, client_id)
    response: dict[str, Any] = {
        "sessionId": record.session_id,
        "workspaceCwd": record.workspace_cwd,
        "attached": attached,
        "clientId": client_id,
        "createdAt": record.created_at_iso,
    }
    return response


@router.get("/workspace/{workspace_id:path}/sessions")
async def list_sessions(workspace_id: str, store: StoreDep, client: TemporalDep) -> dict[str, Any]:
    workspace = "/" + workspace_id.strip("/") if workspace_id.strip("/") else "/"
    records = await asyncio.to_thread(registry.list_live, store, workspace)
    sessions = []
    for record in records:
        count = await asyncio.to_thread(registry.client_count, store, record.session_id)
        try:
            status = await asyncio.wait_for(_status(client, record.session_id), 5)
            active = status.active_prompt is not None
        except (ApiError, RPCError, TimeoutError):
            active = False
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
    await _live(store, session_id)
    closed_by = _client_id(request)
    with contextlib.suppress(RPCError):
        await asyncio.wait_for(
            _handle(client, session_id).execute_update(
                SessionWorkflow.close, CloseRequest(closed_by=closed_by)
            ),
            WAIT_FOR_WORKER,
        )
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
    body = await _body(request)
    record = await _live(store, session_id)
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
                originator=_client_id(request),
            )
        ],
        retention=settings.event_ring_size,
    )
    return {"sessionId": session_id, "displayName": name}


@router.post("/session/{session_id}/heartbeat")
async def heartbeat(session_id: str, request: Request, store: StoreDep) -> dict[str, Any]:
    client_id = _client_id(request)
    await _live(store, session_id)
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
    body = await _body(request)
    await _live(store, session_id)
    model_id = body.get("modelId")
    if not isinstance(model_id, str) or not model_id:
        raise ApiError(
            400, {"error": "`modelId` must be a non-empty string", "code": "invalid_model_id"}
        )
    result: ModelSwitchResult = await _update(
        client,
        session_id,
        lambda h: h.execute_update(
            SessionWorkflow.set_model,
            SetModelRequest(model_id=model_id, originator=_client_id(request)),
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
    body = await _body(request)
    await _live(store, session_id)
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
    await _update(
        client,
        session_id,
        lambda h: h.execute_update(
            SessionWorkflow.set_approval_mode,
            SetModeRequest(mode=mode, originator=_client_id(request)),
        ),
    )
    return {"sessionId": session_id, "mode": mode}


@router.get("/session/{session_id}/context")
async def context(
    session_id: str, store: StoreDep, client: TemporalDep, settings: SettingsDep
) -> dict[str, Any]:
    record = await _live(store, session_id)
    status = await _status(client, session_id)
    return {
        "v": 1,
        "sessionId": session_id,
        "workspaceCwd": record.workspace_cwd,
        "state": _context_state(settings, status),
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
    body = await _body(request)
    cwd = body.get("cwd")
    if isinstance(cwd, str) and cwd.rstrip("/") != settings.workspace_cwd:
        raise _workspace_mismatch(settings.workspace_cwd, cwd)
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
            raise _limit_reached(err) from err
        if not attached:
            await _start(client, settings, record)
        client_id = _client_id(request) or f"client_{uuid.uuid4()}"
        await _register(store, session_id, client_id)
        status = await _status(client, session_id)
        result = {
            "sessionId": session_id,
            "workspaceCwd": record.workspace_cwd,
            "attached": attached,
            "clientId": client_id,
            "state": _context_state(settings, status),
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


# -- prompts -------------------------------------------------------------------------------


def _prompt_text(prompt: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for block in prompt:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(block.get("resource"), dict) and isinstance(
            block["resource"].get("text"), str
        ):
            parts.append(block["resource"]["text"])
    return "\n".join(parts)


@router.post("/session/{session_id}/prompt")
async def prompt(
    session_id: str,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    journal: JournalDep,
    client: TemporalDep,
) -> Response:
    body = await _body(request)
    blocks = body.get("prompt")
    if not isinstance(blocks, list) or not blocks:
        raise ApiError(400, {"error": PROMPT_REQUIRED})
    if not all(isinstance(block, dict) for block in blocks):
        raise ApiError(400, {"error": "each `prompt` element must be an object (content block)"})
    deadline = body.get("deadlineMs")
    if deadline is not None and (
        not isinstance(deadline, int) or isinstance(deadline, bool) or deadline <= 0
    ):
        raise ApiError(
            400,
            {
                "error": "`deadlineMs` must be a positive integer (milliseconds)",
                "code": "invalid_deadline_ms",
            },
        )
    if settings.prompt_deadline_ms is not None:
        deadline = min(deadline or settings.prompt_deadline_ms, settings.prompt_deadline_ms)
    await _live(store, session_id)
    originator = _client_id(request)
    stream = session_stream(session_id)
    _, last_event_id = await asyncio.to_thread(journal.bounds, stream)
    item = PromptItem(
        prompt_id=str(uuid.uuid4()),
        text=_prompt_text(blocks),
        originator=originator,
        queued_at_ms=int(time.time() * 1000),
        deadline_ms=deadline,
    )
    try:
        await _update(
            client,
            session_id,
            lambda h: h.execute_update(
                SessionWorkflow.submit_prompt, SubmitPrompt(item=item), id=item.prompt_id
            ),
        )
    except ApiError as err:
        if err.body.get("error") == "prompt_queue_full":
            raise ApiError(
                503,
                {
                    "error": f"Prompt queue is full ({settings.max_pending_prompts_per_session} "
                    "prompts, the active one included)",
                    "code": "prompt_queue_full",
                    "limit": settings.max_pending_prompts_per_session,
                    "pendingCount": settings.max_pending_prompts_per_session,
                    "sessionId": session_id,
                },
                {"Retry-After": "5"},
            ) from err
        if err.body.get("error") == "session_closed":
            raise session_not_found(session_id) from err
        raise
    if "wait" not in request.headers.get("prefer", "").lower():
        return JSONResponse(
            {"promptId": item.prompt_id, "lastEventId": last_event_id, "eventEpoch": session_id},
            status_code=202,
        )
    stop = await _wait_for_turn(request, journal, client, session_id, item.prompt_id, last_event_id)
    return JSONResponse({"stopReason": stop})


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
                await _handle(client, session_id).signal(
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


@router.post("/session/{session_id}/cancel", status_code=204)
async def cancel(
    session_id: str, request: Request, store: StoreDep, client: TemporalDep
) -> Response:
    await _live(store, session_id)
    await _handle(client, session_id).signal(
        SessionWorkflow.cancel, CancelRequest(originator=_client_id(request))
    )
    return Response(status_code=204)


@router.get("/session/{session_id}/pending-prompts")
async def pending_prompts(session_id: str, store: StoreDep, client: TemporalDep) -> dict[str, Any]:
    await _live(store, session_id)
    status = await _status(client, session_id)
    items = ([status.active_prompt] if status.active_prompt else []) + status.queued
    return {
        "pendingPrompts": [
            {"promptId": p.prompt_id, "text": p.text, "queuedAt": p.queued_at_ms, "state": p.state}
            for p in items
        ]
    }


# -- permissions -----------------------------------------------------------------------------


def _vote_request(
    body: dict[str, Any], request_id: str, request: Request, voters: int
) -> VoteRequest:
    outcome = body.get("outcome")
    bad = ApiError(
        400,
        {
            "error": '`outcome` must be `{ outcome: "cancelled" }` or '
            '`{ outcome: "selected", optionId: string }`'
        },
    )
    if not isinstance(outcome, dict):
        raise bad
    kind = outcome.get("outcome")
    if kind == "cancelled":
        option = None
    elif kind == "selected" and isinstance(outcome.get("optionId"), str):
        option = outcome["optionId"]
    else:
        raise bad
    return VoteRequest(
        request_id=request_id,
        outcome=kind,
        option_id=option,
        client_id=_client_id(request),
        is_local=_is_local(request),
        eligible_voters=voters,
    )


async def _vote(
    request: Request,
    store: Store,
    client: Client,
    session_id: str,
    request_id: str,
    not_found: dict[str, Any],
) -> dict[str, Any]:
    body = await _body(request)
    voters = await asyncio.to_thread(registry.client_count, store, session_id)
    vote = _vote_request(body, request_id, request, voters)
    try:
        await asyncio.wait_for(
            _handle(client, session_id).execute_update(SessionWorkflow.vote, vote),
            WAIT_FOR_WORKER,
        )
    except WorkflowUpdateFailedError as err:
        error = _vote_error(err, request_id, session_id, vote, not_found)
        if error.status == 404:
            await _already_resolved(request, store, session_id, request_id, vote)
        raise error from err
    except RPCError as err:
        raise ApiError(404, not_found) from err
    return {}


async def _already_resolved(
    request: Request, store: Store, session_id: str, request_id: str, vote: VoteRequest
) -> None:
    """A late vote on a resolved request: tell every client what the outcome was."""
    outcome = await asyncio.to_thread(
        registry.find_permission_outcome, store, session_id, request_id
    )
    if outcome is None:
        return
    journal: EventJournal = request.app.state.journal
    settings: Settings = request.app.state.settings
    await journal.aappend_many(
        session_stream(session_id),
        [
            session_event(
                "permission_already_resolved",
                {"requestId": request_id, "sessionId": session_id, "outcome": outcome},
                originator=vote.client_id,
            )
        ],
        retention=settings.event_ring_size,
    )


def _vote_error(
    err: WorkflowUpdateFailedError,
    request_id: str,
    session_id: str,
    vote: VoteRequest,
    not_found: dict[str, Any],
) -> ApiError:
    try:
        detail = json.loads(str(err.cause.message if err.cause else "") or "{}")  # type: ignore[attr-defined]
    except ValueError:
        detail = {}
    code = detail.get("code")
    if code == "Forbidden":
        return ApiError(
            403,
            {
                "error": "The permission policy rejected this vote",
                "code": "permission_forbidden",
                "reason": detail.get("reason"),
                "requestId": request_id,
                "sessionId": session_id,
            },
        )
    if code == "InvalidOption":
        return ApiError(
            400,
            {
                "error": f'Permission {request_id}: optionId "{vote.option_id}" is not in the set '
                "of options the agent offered.",
                "code": "invalid_option_id",
                "requestId": request_id,
                "optionId": vote.option_id,
            },
        )
    if code == "SentinelCollision":
        return ApiError(
            500,
            {
                "error": "The agent offered the reserved cancel sentinel",
                "code": "cancel_sentinel_collision",
                "requestId": request_id,
            },
        )
    if code == "PolicyNotImplemented":
        return ApiError(
            501,
            {
                "error": "Permission policy not implemented",
                "code": "permission_policy_not_implemented",
                "policy": detail.get("policy"),
            },
        )
    return ApiError(404, not_found)


@router.post("/permission/{request_id}")
async def vote_permission(
    request_id: str, request: Request, store: StoreDep, client: TemporalDep
) -> dict[str, Any]:
    not_found = {"error": "No pending permission request", "requestId": request_id}
    session_id = await asyncio.to_thread(registry.find_permission_session, store, request_id)
    if (
        session_id is None
        or await asyncio.to_thread(registry.get_live_session, store, session_id) is None
    ):
        await _body(request)  # malformed JSON still answers 400 first
        raise ApiError(404, not_found)
    return await _vote(request, store, client, session_id, request_id, not_found)


@router.post("/session/{session_id}/permission/{request_id}")
async def vote_session_permission(
    session_id: str, request_id: str, request: Request, store: StoreDep, client: TemporalDep
) -> dict[str, Any]:
    await _live(store, session_id)
    not_found = {
        "error": "No pending permission request for session",
        "sessionId": session_id,
        "requestId": request_id,
    }
    owner = await asyncio.to_thread(registry.find_permission_session, store, request_id)
    if owner != session_id:
        await _body(request)
        raise ApiError(404, not_found)
    return await _vote(request, store, client, session_id, request_id, not_found)


async def _update(client: Client, session_id: str, call: Any) -> Any:
    """Send an update to the session, bounded in time; validator refusals become 4xx."""
    try:
        return await asyncio.wait_for(call(_handle(client, session_id)), WAIT_FOR_WORKER)
    except WorkflowUpdateFailedError as err:
        message = str(getattr(err.cause, "message", "") or err)
        raise ApiError(409, {"error": message}) from err
    except TimeoutError as err:
        raise ApiError(
            503,
            {"error": "No worker answered in time", "code": "worker_unavailable"},
            {"Retry-After": "5"},
        ) from err
