"""What the session-daemon routes share: error bodies, the JSON body, client ids,
looking a session up, and talking to its SessionWorkflow with a bounded wait."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import time
from typing import Any

from fastapi import Request
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import TypedSearchAttributes
from temporalio.exceptions import WorkflowAlreadyStartedError

from api.errors import INVALID_JSON, ApiError, worker_unavailable
from api.input_bounds import strict_json_loads
from runtime.policy.approval import AVAILABLE_MODES
from runtime.sessions import registry
from runtime.sessions.contracts import (
    SessionInput,
    SessionStatus,
)
from runtime.settings import Settings
from runtime.store import Store
from workflows.session import (
    SessionWorkflow,
    session_search_attributes,
    session_workflow_id,
)

CLIENT_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
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


def limit_reached(err: registry.SessionLimitReached) -> ApiError:
    return ApiError(
        503,
        {"error": str(err), "code": "session_limit_exceeded", "limit": err.limit},
        {"Retry-After": "5"},
    )


def workspace_mismatch(bound: str, requested: str) -> ApiError:
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


async def read_body(request: Request) -> dict[str, Any]:
    """The JSON object body; `{}` when empty; 400 for malformed or non-strict JSON
    (`api.input_bounds`) or a non-object."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = strict_json_loads(raw)
    except ValueError as err:
        raise ApiError(400, INVALID_JSON) from err
    if not isinstance(body, dict):
        raise ApiError(400, {"error": "Request body must be a JSON object"})
    return body


def client_id_of(request: Request) -> str | None:
    value = request.headers.get("x-qwen-client-id")
    if value is None:
        return None
    if not CLIENT_ID.match(value):
        raise ApiError(400, {"error": "X-Qwen-Client-Id is malformed", "code": "invalid_client_id"})
    return value


def is_local(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host in ("localhost", "testclient")


async def live_session(store: Store, session_id: str) -> registry.SessionRecord:
    record = await asyncio.to_thread(registry.get_live_session, store, session_id)
    if record is None:
        raise session_not_found(session_id)
    return record


def session_handle(client: Client, session_id: str) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(session_workflow_id(session_id))


async def session_status(client: Client, session_id: str) -> SessionStatus:
    try:
        return await asyncio.wait_for(
            session_handle(client, session_id).query(SessionWorkflow.status), WAIT_FOR_WORKER
        )
    except TimeoutError as err:
        raise worker_unavailable() from err


def session_input(settings: Settings, record: registry.SessionRecord) -> SessionInput:
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


async def start_session(client: Client, settings: Settings, record: registry.SessionRecord) -> None:
    request = session_input(settings, record)
    with contextlib.suppress(WorkflowAlreadyStartedError):
        await client.start_workflow(
            SessionWorkflow.run,
            request,
            id=session_workflow_id(record.session_id),
            task_queue=settings.task_queue,
            search_attributes=TypedSearchAttributes(session_search_attributes(request)),
            # Shown in the Web UI next to the workflow.
            memo={
                "workspaceCwd": record.workspace_cwd,
                "scope": record.scope,
                "createdAt": record.created_at_iso,
            },
        )


async def register_client(store: Store, session_id: str, client_id: str) -> None:
    await asyncio.to_thread(
        registry.register_client, store, session_id, client_id, int(time.time() * 1000)
    )


def context_state(settings: Settings, status: SessionStatus | None) -> dict[str, Any]:
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


async def update_session(client: Client, session_id: str, call: Any) -> Any:
    """Send an update to the session, bounded in time; validator refusals become 4xx."""
    try:
        return await asyncio.wait_for(call(session_handle(client, session_id)), WAIT_FOR_WORKER)
    except WorkflowUpdateFailedError as err:
        message = str(getattr(err.cause, "message", "") or err)
        raise ApiError(409, {"error": message}) from err
    except TimeoutError as err:
        raise worker_unavailable() from err
