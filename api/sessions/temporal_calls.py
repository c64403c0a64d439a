"""The API's side of SessionWorkflow, as the session-daemon routes (and another feature's
route that answers a session, a standing agent's decision) use it: looking a session up,
starting it, its updates and signals with a bounded wait, and what a route reads of its
status."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.common import TypedSearchAttributes
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from api.errors import (
    ApiError,
    rpc_error,
    temporal_unavailable,
    worker_unavailable,
    workflow_error,
)
from api.sessions.models import ContextState, ModelOption, ModelsState
from api.temporal import ACCEPT_GRACE, query_workflow
from runtime.failures import refusal_of
from runtime.llm.active import active_model, served_model_id
from runtime.llm.config_store import LlmConfigRefusal, load_chain_plan
from runtime.llm.contracts import SESSION_SITE
from runtime.sessions import registry
from runtime.sessions.approval_modes import DEFAULT_APPROVAL_MODE, is_approval_mode
from runtime.sessions.contracts import (
    SessionInput,
    SessionStatus,
    VoteRequest,
    WorkerBound,
    session_search_attributes,
    session_workflow_id,
)
from runtime.sessions.errors import SessionNotFound
from runtime.sessions.views import modes_state
from runtime.settings import Settings
from runtime.store import Store
from runtime.workspace.settings import APPROVAL_MODE, get_setting
from workflows.sessions.session import SessionWorkflow

WAIT_FOR_WORKER = 30.0


# -- helpers -------------------------------------------------------------------------------


def session_not_found(session_id: str) -> ApiError:
    return ApiError.of(SessionNotFound(session_id=session_id))


async def live_session(store: Store, session_id: str) -> registry.SessionRecord:
    record = await asyncio.to_thread(registry.get_live_session, store, session_id)
    if record is None:
        raise session_not_found(session_id)
    return record


def session_handle(client: Client, session_id: str) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(session_workflow_id(session_id))


async def session_status(
    client: Client, session_id: str, store: Store | None = None, wait: float = WAIT_FOR_WORKER
) -> SessionStatus:
    """The session's state, from its workflow; 503 when no worker answers within `wait`."""
    handle = session_handle(client, session_id)
    try:
        return await query_workflow(
            lambda timeout: handle.query(SessionWorkflow.status, rpc_timeout=timeout), wait
        )
    except RPCError as err:
        raise await _rpc_failure(err, store, session_id) from err


def session_input(
    settings: Settings, record: registry.SessionRecord, approval_mode: str | None = None
) -> SessionInput:
    return SessionInput(
        session_id=record.session_id,
        workspace_cwd=record.workspace_cwd,
        policy=settings.permission_policy,
        permission_timeout_ms=settings.permission_response_timeout_ms,
        max_pending_prompts=settings.max_pending_prompts_per_session,
        event_retention=settings.event_ring_size,
        shell_enabled=settings.session_shell,
        model_id=active_model(settings).model_id,
        model_provider=settings.model_provider,
        approval_mode=approval_mode or DEFAULT_APPROVAL_MODE,
    )


async def start_session(
    client: Client, settings: Settings, record: registry.SessionRecord, store: Store | None = None
) -> None:
    """Start the session's workflow (a running one is left alone); with `store`, in the
    workspace's persisted approval mode (`tools.approvalMode`), if any."""
    mode = None
    if store is not None:
        value = await asyncio.to_thread(get_setting, store, record.workspace_cwd, APPROVAL_MODE)
        mode = value if is_approval_mode(value) else None
    request = session_input(settings, record, mode)
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


def current_model_id(store: Store, settings: Settings, status: SessionStatus | None) -> str:
    """The model the session's next prompt asks for: the first of Session:Default's chain
    as bound now, with the session's own choice where it counts (load_chain_plan)."""
    try:
        plan = load_chain_plan(
            store,
            settings,
            SESSION_SITE,
            status.model_id if status else None,
            status.model_binding if status else None,
        )
    except ApplicationError as err:
        if refusal_of(err, LlmConfigRefusal) is None:
            raise
        plan = None
    if plan is None or not plan.entries:
        active = active_model(settings)
        return served_model_id(
            active.provider, active.model_id, status.model_id if status else None
        )
    return plan.entries[0].model


def context_state(current_model: str, status: SessionStatus | None) -> ContextState:
    return ContextState(
        models=ModelsState(
            current_model_id=current_model,
            available_models=[
                ModelOption(model_id=current_model, name=current_model, description=None)
            ],
        ),
        modes=modes_state(status.approval_mode if status else DEFAULT_APPROVAL_MODE),
        config_options=[],
    )


async def update_session(
    client: Client,
    settings: Settings,
    store: Store,
    session_id: str,
    update: Any,
    request: WorkerBound,
    *,
    update_id: str | None = None,
    wait_for_result: bool = True,
) -> Any:
    """Send an update to the session; it is applied entirely, or not at all.

    The update carries `accept_before_ms`: its validator refuses it once that has
    passed. The route waits for acceptance until then plus `ACCEPT_GRACE`, and when
    no worker took it by then it answers 503 `worker_unavailable`, knowing that the
    update will never be applied later (a stalled worker waking up refuses it). Once
    accepted, the update is in history and runs to its end whatever happens next.
    A refusal by the validator (or a failure of the handler) answers as
    `api.errors.workflow_error` maps it: a typed refusal with its own status and body
    (`ApiError.failure` says which), `update_expired` as 503 `worker_unavailable`.
    """
    wait = settings.worker_wait_ms / 1000
    request.accept_before_ms = int(time.time() * 1000) + settings.worker_wait_ms
    handle = session_handle(client, session_id)
    try:
        accepted = await asyncio.wait_for(
            handle.start_update(
                update,
                request,
                id=update_id or str(uuid.uuid4()),
                wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            ),
            wait + ACCEPT_GRACE,
        )
    except WorkflowUpdateFailedError as err:
        raise workflow_error(err) from err
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
        raise worker_unavailable() from err
    except RPCError as err:
        raise await _rpc_failure(err, store, session_id) from err
    if _outcome_known(accepted):
        # Refused by the validator (or already completed): the outcome came with the
        # answer, and result() reads it without another call.
        try:
            result = await accepted.result()
        except WorkflowUpdateFailedError as err:
            raise workflow_error(err) from err
        if not wait_for_result:
            return accepted
        return result
    if not wait_for_result:
        return accepted
    return await update_result(accepted)


async def vote_session(
    client: Client,
    settings: Settings,
    store: Store,
    session_id: str,
    vote: VoteRequest,
    *,
    update_id: str | None = None,
) -> None:
    """Cast `vote` on the session's pending permission request (its `vote` update):
    accepted is enough, the vote is in history and will be applied. `update_id` makes the
    same answer again the same update (applied once). Raises as `update_session` does: a
    request no longer pending is `NotPending` (`ApiError.failure`)."""
    await update_session(
        client,
        settings,
        store,
        session_id,
        SessionWorkflow.vote,
        vote,
        update_id=update_id,
        wait_for_result=False,
    )


def _outcome_known(accepted: WorkflowUpdateHandle[Any]) -> bool:
    # The SDK keeps the outcome that came with UpdateWorkflowExecution's answer here;
    # there is no public accessor (start_update does not raise on a rejection).
    return getattr(accepted, "_known_outcome", None) is not None


async def update_result(accepted: WorkflowUpdateHandle[Any], *, late_ok: bool = False) -> Any:
    """The result of an accepted update; a handler's failure answers like a refusal.

    Accepted means it will be applied: when only its answer is late, `late_ok` callers
    get None (the update is as good as done for them), the others 503.
    """
    try:
        return await asyncio.wait_for(accepted.result(), WAIT_FOR_WORKER)
    except WorkflowUpdateFailedError as err:
        raise workflow_error(err) from err
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
        if late_ok:
            return None
        raise worker_unavailable() from err


async def signal_session(
    client: Client, store: Store, session_id: str, signal: Any, request: Any
) -> None:
    """Signal the session: durable once Temporal took it (a worker applies it when it can)."""
    try:
        await asyncio.wait_for(
            session_handle(client, session_id).signal(signal, request), WAIT_FOR_WORKER
        )
    except TimeoutError as err:
        raise temporal_unavailable() from err
    except RPCError as err:
        raise await _rpc_failure(err, store, session_id) from err


async def _rpc_failure(err: RPCError, store: Store | None, session_id: str) -> ApiError:
    """What a failed call to the session's workflow means for the client.

    NOT_FOUND: the workflow is gone (closed by a DELETE whose registry write never
    happened, or terminated by an operator): the session is closed, as the registry now
    says too; `/load` revives it. Anything else: as every route maps it (api.errors).
    """
    if err.status == RPCStatusCode.NOT_FOUND:
        if store is not None:
            await asyncio.to_thread(registry.close_session, store, session_id)
        return session_not_found(session_id)
    return rpc_error(err)
