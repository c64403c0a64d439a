"""OAuth device-flow routes (RFC 8628; spec "Routes de flux d'authentification par
appareil"): start or attach, read, cancel, and the workspace's auth status.
router → DeviceFlowWorkflow (`device-flow/{workspace}/{providerId}`) →
activities/device_flow/provider.

The flow's `deviceFlowId` is its workflow run id: a read looks for that run under each
provider's workflow id, so an entry stays readable through its grace even after a new
POST for the same provider started the next run.

The approvals' inbox denies a login by `answer_login_approval`, the same cancel.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import (
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.service import RPCError, RPCStatusCode

from api.approvals.contracts import AnswerBody, Answering
from api.deps import SettingsDep, TemporalDep
from api.device_flow.models import (
    AuthStatus,
    DeviceFlowBody,
    DeviceFlowEntry,
    PendingDeviceFlow,
)
from api.errors import ApiError, rpc_error, worker_unavailable, workflow_error
from api.openapi import errors, json_body
from api.requests import read_body
from api.security import require_configured_token
from api.temporal import ACCEPT_GRACE, query_workflow
from runtime.approvals.answers import DENY_LOGIN, ApprovalAnsweredElsewhere, InvalidAnswer
from runtime.approvals.models import Approval
from runtime.device_flow.contracts import (
    GRACE_MS,
    MAX_ACTIVE_FLOWS,
    CancelRequest,
    DeviceFlowInput,
    FlowState,
    device_flow_search_attributes,
    device_flow_workflow_id,
)
from runtime.device_flow.errors import (
    DeviceFlowNotFound,
    DeviceFlowUpstreamError,
    TooManyActiveFlows,
    UnsupportedProvider,
)
from runtime.failures import InvalidRequest
from runtime.settings import Settings
from workflows.device_flow.flow import (
    DeviceFlowWorkflow,
)

router = APIRouter()

RUN_ID = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
# The IdP's device authorization request runs in an activity: how long a POST waits
# for it (its HTTP timeout is 20 s), on top of the wait for a worker.
IDP_WAIT = 30.0
_OPEN = WorkflowExecutionStatus.RUNNING


def _handle(
    client: Client, settings: Settings, provider_id: str, run_id: str | None = None
) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(
        device_flow_workflow_id(settings.workspace_cwd, provider_id), run_id=run_id
    )


def _not_found(flow_id: str) -> ApiError:
    return ApiError.of(DeviceFlowNotFound(device_flow_id=flow_id))


async def _state(handle: WorkflowHandle[Any, Any], settings: Settings) -> FlowState:
    return await query_workflow(
        lambda timeout: handle.query(DeviceFlowWorkflow.state, rpc_timeout=timeout),
        settings.worker_wait_ms / 1000,
    )


async def _describe_open(handle: WorkflowHandle[Any, Any]) -> tuple[bool, datetime | None] | None:
    """(running, close time) of the run, or None when there is none."""
    try:
        described = await handle.describe()
    except RPCError as err:
        if err.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
            return None
        raise rpc_error(err) from err
    return described.status == _OPEN, described.close_time


def _visible(state: FlowState) -> bool:
    """Readable: pending, or terminal within the grace (a POST answered 502 never was)."""
    if state.status == "failed" and state.expires_at_ms is None:
        return False
    if state.terminal and state.terminal_at_ms is not None:
        return time.time() * 1000 < state.terminal_at_ms + GRACE_MS
    return True


async def _latest(client: Client, settings: Settings, provider_id: str) -> FlowState | None:
    """The provider's running flow (pending or in its grace), if any."""
    handle = _handle(client, settings, provider_id)
    described = await _describe_open(handle)
    if described is None or not described[0]:
        return None
    return await _state(handle, settings)


async def _find(client: Client, settings: Settings, flow_id: str) -> FlowState:
    if not RUN_ID.match(flow_id):
        raise _not_found(flow_id)
    for provider_id in settings.device_flow_provider_map:
        handle = _handle(client, settings, provider_id, flow_id)
        described = await _describe_open(handle)
        if described is None:
            continue
        running, closed_at = described
        if not running and (
            closed_at is None or (datetime.now(UTC) - closed_at).total_seconds() * 1000 > GRACE_MS
        ):
            raise _not_found(flow_id)
        state = await _state(handle, settings)
        if not _visible(state):
            raise _not_found(flow_id)
        return state
    raise _not_found(flow_id)


async def _pending(client: Client, settings: Settings) -> list[FlowState]:
    states = await asyncio.gather(
        *(_latest(client, settings, p) for p in settings.device_flow_provider_map)
    )
    return [s for s in states if s is not None and not s.terminal]


async def _wait_for_code(handle: WorkflowHandle[Any, Any], settings: Settings) -> FlowState:
    """The run's state once the IdP answered the device authorization request."""
    deadline = time.monotonic() + settings.worker_wait_ms / 1000 + IDP_WAIT
    while True:
        state = await _state(handle, settings)
        if state.status != "requesting":
            return state
        if time.monotonic() > deadline:
            raise worker_unavailable()
        await asyncio.sleep(0.1)


@router.post(
    "/workspace/auth/device-flow",
    dependencies=[Depends(require_configured_token)],
    status_code=201,
    response_model=None,
    responses={
        201: {"model": DeviceFlowEntry, "description": "A new flow, pending."},
        200: {"model": DeviceFlowEntry, "description": "Attached to the pending flow."},
        **errors(400, 401, 409, 502, 503),
    },
    openapi_extra=json_body(DeviceFlowBody),
)
async def start_device_flow(
    request: Request, client: TemporalDep, settings: SettingsDep
) -> JSONResponse:
    body = await read_body(request)
    provider_id = body.get("providerId")
    if not isinstance(provider_id, str) or not provider_id:
        raise ApiError.of(
            InvalidRequest(
                message="`providerId` must be a non-empty string", code="invalid_request"
            )
        )
    providers = settings.device_flow_provider_map
    if provider_id not in providers:
        raise ApiError.of(UnsupportedProvider(provider_id=provider_id, supported=list(providers)))
    handle = _handle(client, settings, provider_id)
    current = await _latest(client, settings, provider_id)
    if current is not None and current.terminal:
        # Its grace only keeps it readable: release it, then start the next run.
        await handle.signal(DeviceFlowWorkflow.release)
        try:
            await asyncio.wait_for(handle.result(), settings.worker_wait_ms / 1000)
        except TimeoutError as err:
            raise worker_unavailable() from err
        except WorkflowFailureError:
            pass  # ended all the same: the next run may start
        current = None
    if current is None and len(await _pending(client, settings)) >= MAX_ACTIVE_FLOWS:
        raise ApiError.of(TooManyActiveFlows())
    flow = DeviceFlowInput(
        workspace_cwd=settings.workspace_cwd,
        provider=providers[provider_id],
        request_id=str(uuid.uuid4()),
        event_retention=settings.event_ring_size,
    )
    started = await client.start_workflow(
        DeviceFlowWorkflow.run,
        flow,
        id=device_flow_workflow_id(settings.workspace_cwd, provider_id),
        task_queue=settings.task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        search_attributes=TypedSearchAttributes(device_flow_search_attributes(flow)),
        memo={"workspaceCwd": settings.workspace_cwd, "providerId": provider_id},
    )
    state = await _wait_for_code(started, settings)
    if state.status == "failed" and state.expires_at_ms is None:
        raise ApiError.of(DeviceFlowUpstreamError(hint=state.hint))
    attached = state.request_id != flow.request_id
    entry = DeviceFlowEntry.of(state, attached=attached)
    return JSONResponse(entry.model_dump(exclude_none=True), status_code=200 if attached else 201)


@router.get(
    "/workspace/auth/device-flow/{device_flow_id}",
    response_model_exclude_none=True,
    responses=errors(404, 503),
)
async def read_device_flow(
    device_flow_id: str, client: TemporalDep, settings: SettingsDep
) -> DeviceFlowEntry:
    return DeviceFlowEntry.of(await _find(client, settings, device_flow_id))


@router.delete(
    "/workspace/auth/device-flow/{device_flow_id}",
    status_code=204,
    responses=errors(404, 503),
)
async def cancel_device_flow(
    device_flow_id: str, client: TemporalDep, settings: SettingsDep
) -> Response:
    await cancel_flow(client, settings, device_flow_id)
    return Response(status_code=204)


async def cancel_flow(client: Client, settings: Settings, device_flow_id: str) -> None:
    """The one way a device flow is cancelled: this route's and the approvals' inbox's
    (a login denied there, `answer_login_approval`). A flow already ended is left as it
    is; 404 for no flow."""
    state = await _find(client, settings, device_flow_id)
    if state.terminal:
        return
    handle = _handle(client, settings, state.provider_id, device_flow_id)
    bound = CancelRequest(accept_before_ms=int(time.time() * 1000) + settings.worker_wait_ms)
    try:
        await asyncio.wait_for(
            handle.execute_update(DeviceFlowWorkflow.cancel, bound, id=str(uuid.uuid4())),
            settings.worker_wait_ms / 1000 + ACCEPT_GRACE,
        )
    except WorkflowUpdateFailedError as err:
        raise workflow_error(err) from err
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
        raise worker_unavailable() from err


async def answer_login_approval(answering: Answering, row: Approval, body: AnswerBody) -> None:
    """The inbox's answer to a device login (an `Answerer`, api/approvals/contracts.py): a
    login is approved only at its identity provider (`approve` here is 409
    `approval_answered_elsewhere`); `deny` cancels the flow, as this route does."""
    if body.answer == "approve":
        raise ApiError.of(ApprovalAnsweredElsewhere(approval_id=row.approval_id, link=row.link))
    if body.answer != DENY_LOGIN:
        raise ApiError.of(InvalidAnswer(approval_id=row.approval_id, expected=[DENY_LOGIN]))
    await cancel_flow(await answering.connector.get(), answering.settings, row.ref)


@router.get("/workspace/auth/status", responses=errors(503))
async def auth_status(client: TemporalDep, settings: SettingsDep) -> AuthStatus:
    pending = await _pending(client, settings)
    return AuthStatus(
        workspace_cwd=settings.workspace_cwd,
        providers=[],
        pending_device_flows=[
            PendingDeviceFlow(
                device_flow_id=s.device_flow_id,
                provider_id=s.provider_id,
                expires_at=s.expires_at_ms,
            )
            for s in pending
            if s.pending
        ],
        supported_device_flow_providers=list(settings.device_flow_provider_map),
    )
