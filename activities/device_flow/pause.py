"""A model call paused on a device flow (workflows/device_flow/pause.py): start the
provider's `DeviceFlowWorkflow` or attach to the one running, and read its state.

Starting goes through the Temporal client, as `POST /workspace/auth/device-flow` does,
rather than as a child workflow: the flow is a singleton per provider that the API, a
session, a turn or an agent may have started first, and a child cannot attach to a run
it did not start; nor does a child's result help, since the flow returns only after its
5-minute grace. So the paused call reads the flow's state (a query) between durable
timers, whoever started it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.common import (
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from runtime.device_flow.contracts import (
    DeviceFlowActivityContracts,
    DeviceFlowInput,
    EnsureFlowInput,
    EnsureFlowResult,
    FlowState,
    ReadFlowInput,
    ReadFlowResult,
    device_flow_search_attributes,
    device_flow_workflow_id,
)
from runtime.device_flow.tokens import usable_token
from runtime.settings import Settings

FLOW_WORKFLOW = "DeviceFlowWorkflow"
STATE_QUERY = "state"
RELEASE_SIGNAL = "release"
# How long a released terminal run may take to close before the start is retried.
RELEASE_WAIT_S = 30.0


async def _running(handle: WorkflowHandle[Any, Any]) -> bool | None:
    """Whether the run is open; None when there is no such workflow."""
    try:
        described = await handle.describe()
    except RPCError as err:
        if err.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
            return None
        raise
    return described.status == WorkflowExecutionStatus.RUNNING


async def _state(handle: WorkflowHandle[Any, Any]) -> FlowState:
    state: FlowState = await handle.query(STATE_QUERY, result_type=FlowState)
    return state


class DeviceFlowPauseActivities:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @DeviceFlowActivityContracts.ENSURE.defn
    async def ensure_flow(self, request: EnsureFlowInput) -> EnsureFlowResult:
        """The provider's flow a paused call waits on: the running one, or a new one.

        Idempotent: the start attaches to a running run (USE_EXISTING), so a retry, or
        two calls pausing at once, converge on one flow. A run still in its grace that
        ended before the pause began is released first, as a new POST does. The
        workspace's limit of pending flows is the API's (a client starting flows); a
        model call only ever runs the flows of providers the operator configured."""
        provider = self.settings.device_flow_provider_map.get(request.provider_id)
        if provider is None:
            return EnsureFlowResult(
                error_kind="unsupported_provider",
                hint=f"no device-flow provider {request.provider_id!r} is configured",
            )
        workspace = request.workspace_cwd or self.settings.workspace_cwd
        # Between the attempt that found no token and this pause, another call's flow
        # may have ended with one: then there is nothing to ask the user.
        data_dir = self.settings.resolved_data_dir
        if await usable_token(data_dir, self.settings, request.provider_id) is not None:
            return EnsureFlowResult(token_ready=True, workspace_cwd=workspace)
        client = activity.client()
        workflow_id = device_flow_workflow_id(workspace, request.provider_id)
        handle = client.get_workflow_handle(workflow_id)
        if await _running(handle):
            state = await _state(handle)
            fresh = state.terminal_at_ms is None or state.terminal_at_ms >= request.since_ms
            if not state.terminal or fresh or state.request_id == request.request_id:
                return self._found(state, workspace)
            await self._release(handle)
        flow = DeviceFlowInput(
            workspace_cwd=workspace,
            provider=provider,
            request_id=request.request_id,
            event_retention=self.settings.event_ring_size,
        )
        started = await client.start_workflow(
            FLOW_WORKFLOW,
            flow,
            id=workflow_id,
            task_queue=self.settings.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            search_attributes=TypedSearchAttributes(device_flow_search_attributes(flow)),
            memo={"workspaceCwd": workspace, "providerId": request.provider_id},
        )
        state = await _state(client.get_workflow_handle(workflow_id, run_id=started.run_id))
        return self._found(state, workspace)

    def _found(self, state: FlowState, workspace: str) -> EnsureFlowResult:
        return EnsureFlowResult(
            device_flow_id=state.device_flow_id,
            workspace_cwd=workspace,
            event_retention=self.settings.event_ring_size,
        )

    @staticmethod
    async def _release(handle: WorkflowHandle[Any, Any]) -> None:
        """End a terminal run's grace and wait until it closed (then a start makes a new
        run instead of attaching to the old one)."""
        await handle.signal(RELEASE_SIGNAL)
        try:
            await asyncio.wait_for(handle.result(), RELEASE_WAIT_S)
        except WorkflowFailureError:
            pass  # ended all the same
        except TimeoutError as err:
            raise ApplicationError("the ended device flow did not close in time") from err

    @DeviceFlowActivityContracts.READ.defn
    async def read_flow(self, request: ReadFlowInput) -> ReadFlowResult:
        """The flow's state (a query, answered by a worker, closed runs included)."""
        client: Client = activity.client()
        workflow_id = device_flow_workflow_id(request.workspace_cwd, request.provider_id)
        handle = client.get_workflow_handle(workflow_id, run_id=request.device_flow_id)
        if await _running(handle) is None:
            return ReadFlowResult()
        return ReadFlowResult(state=await _state(handle))
