"""A model call that needs a device-flow token pauses on the provider's device flow
(issue 11, "Credentials that arrive by device flow, as a pause inside the work").

Workflow code, called by the model-call chain (workflows/llm/chain.py) when an attempt
reports `device_flow_required`: it starts the provider's `DeviceFlowWorkflow`
(`device-flow/{workspace}/{providerId}`) or attaches to the one running, announces
`auth_device_flow_started` on the caller's session stream, and waits for the flow's end
on durable timers, reading the flow's state between them (an activity), so the
wait spans worker restarts. The chain then makes the attempt again with the new token,
or ends the call with the flow's `errorKind`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from workflows import patches
from workflows.activity_calls import call_activity, call_local_activity_as_recorded

with workflow.unsafe.imports_passed_through():
    from runtime.device_flow.contracts import (
        DeviceFlowActivityContracts,
        DeviceFlowOutcome,
        EmitInput,
        EnsureFlowInput,
        EnsureFlowResult,
        FlowState,
        ReadFlowInput,
        ReadFlowResult,
        started_event_data,
        started_event_scope,
    )

# The flow's state is read at the flow's own polling interval, within these bounds: a
# user who approved sees the call go on within seconds, and a long wait (qwen's codes
# live 15 minutes) stays a few hundred timers in the caller's history.
MIN_READ_INTERVAL = timedelta(seconds=1)
MAX_READ_INTERVAL = timedelta(seconds=5)
# A flow still pending this long after its code expired is stuck (its own expiry timer
# should have ended it): the call stops waiting.
EXPIRY_SLACK = timedelta(minutes=2)
# Starting the flow talks to Temporal only; a Temporal outage this long ends the call.
_ENSURE_DEADLINE = timedelta(minutes=5)
_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10))
# A read that fails (no worker answers the query yet) is tried again at the next timer.
_READ_TIMEOUT = timedelta(seconds=10)
_READ_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=2)
_LEGACY_READ_TIMEOUT = timedelta(seconds=30)
CANCELLED = "cancelled"


async def await_device_flow(
    provider_id: str,
    workspace_cwd: str | None,
    session_id: str | None,
    *,
    event_retention: int | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> DeviceFlowOutcome:
    """Run (or join) the device flow of `provider_id` and wait for its end.

    `workspace_cwd`: the workspace whose flow it is; None for the worker's own (a turn
    or an agent tick, which have no session). `session_id`: the session whose prompt is
    paused, told `auth_device_flow_started`
    (the flow itself tells every live session of the workspace when it starts; a
    session that got that is not told twice). None for a turn or an agent tick.
    `cancelled`: the caller's cancel (a session's prompt cancelled); once it holds, the
    pause raises asyncio.CancelledError at its next step, and a wait between reads ends.
    Returns `authorized`, or the flow's `errorKind` (`cancelled` for a flow cancelled
    or ended from outside, `unsupported_provider` for a provider not configured).
    """
    since_ms = _now_ms()
    # Decided once per pause, so a pause begun before the patch replays as it ran.
    honour_cancel = workflow.patched(patches.DEVICE_FLOW_PAUSE_CANCEL)
    if not honour_cancel:
        cancelled = None
    try:
        ensured: EnsureFlowResult = await call_activity(
            DeviceFlowActivityContracts.ENSURE,
            EnsureFlowInput(
                provider_id=provider_id,
                workspace_cwd=workspace_cwd,
                request_id=str(workflow.uuid4()),
                since_ms=since_ms,
            ),
            start_to_close_timeout=timedelta(seconds=60),
            schedule_to_close_timeout=_ENSURE_DEADLINE,
            retry_policy=_RETRY,
        )
    except ActivityError as err:
        if honour_cancel and isinstance(err.cause, CancelledError):
            raise
        return DeviceFlowOutcome(
            provider_id=provider_id,
            authorized=False,
            error_kind="upstream_error",
            hint=f"the device flow could not be started ({err.cause or err})",
        )
    if ensured.token_ready:
        return DeviceFlowOutcome(provider_id=provider_id, authorized=True)
    if ensured.device_flow_id is None:
        return DeviceFlowOutcome(
            provider_id=provider_id,
            authorized=False,
            error_kind=ensured.error_kind or "upstream_error",
            hint=ensured.hint,
        )
    flow_id = ensured.device_flow_id
    workspace = ensured.workspace_cwd or workspace_cwd or ""
    retention = event_retention if event_retention is not None else ensured.event_retention
    announced = False
    as_activity = workflow.patched(patches.DEVICE_FLOW_READ_ACTIVITY)
    while True:
        read = await _read(
            provider_id, workspace, flow_id, as_activity=as_activity, honour_cancel=honour_cancel
        )
        _check_cancel(cancelled)
        if read is not None and read.state is None:
            return DeviceFlowOutcome(
                provider_id=provider_id,
                device_flow_id=flow_id,
                authorized=False,
                error_kind=CANCELLED,
                hint="the device flow was ended from outside",
            )
        state = read.state if read is not None else None
        if state is not None and state.terminal:
            return _outcome(state)
        if state is not None and state.pending:
            if session_id is not None and not announced:
                await _announce(state, workspace, session_id, retention)
                announced = True
            expires_at = state.expires_at_ms
            if expires_at is not None and _now_ms() > expires_at + _ms(EXPIRY_SLACK):
                return DeviceFlowOutcome(
                    provider_id=provider_id,
                    device_flow_id=flow_id,
                    authorized=False,
                    error_kind="expired_token",
                    hint="the device flow did not end when its code expired",
                )
        interval = MIN_READ_INTERVAL
        if state is not None and state.interval_ms:
            interval = timedelta(milliseconds=state.interval_ms)
        wait = min(max(interval, MIN_READ_INTERVAL), MAX_READ_INTERVAL)
        if cancelled is None:
            await workflow.sleep(wait)
            continue
        # The same timer as a sleep, ended early by the caller's cancel.
        try:
            await workflow.wait_condition(cancelled, timeout=wait)
        except TimeoutError:
            pass
        _check_cancel(cancelled)


def _check_cancel(cancelled: Callable[[], bool] | None) -> None:
    """Raise the caller's cancel."""
    if cancelled is not None and cancelled():
        raise asyncio.CancelledError("the caller cancelled the call")


def _outcome(state: FlowState) -> DeviceFlowOutcome:
    if state.status == "authorized":
        return DeviceFlowOutcome(
            provider_id=state.provider_id, device_flow_id=state.device_flow_id, authorized=True
        )
    return DeviceFlowOutcome(
        provider_id=state.provider_id,
        device_flow_id=state.device_flow_id,
        authorized=False,
        error_kind=state.error_kind or CANCELLED,
        hint=state.hint,
    )


async def _read(
    provider_id: str, workspace_cwd: str, flow_id: str, *, as_activity: bool, honour_cancel: bool
) -> ReadFlowResult | None:
    """The flow's state (`state` None: the run is gone); None when it could not be read."""
    request = ReadFlowInput(
        provider_id=provider_id, workspace_cwd=workspace_cwd, device_flow_id=flow_id
    )
    if as_activity:
        try:
            read: ReadFlowResult = await call_activity(
                DeviceFlowActivityContracts.READ,
                request,
                start_to_close_timeout=_READ_TIMEOUT,
                retry_policy=_READ_RETRY,
            )
        except ActivityError as err:
            if honour_cancel and isinstance(err.cause, CancelledError):
                raise  # the caller's cancel, not a failed read
            return None  # read again after the next timer
        return read
    # Histories recorded before the patch: a TimeoutError here is the replay of a
    # local activity that timed out, an ActivityError when it ran (see the patch).
    try:
        read = await call_local_activity_as_recorded(
            DeviceFlowActivityContracts.READ,
            request,
            start_to_close_timeout=_LEGACY_READ_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=2),
        )
    except (ActivityError, TemporalTimeoutError):
        return None  # read again after the next timer
    return read


async def _announce(
    state: FlowState, workspace_cwd: str, session_id: str, retention: int | None
) -> None:
    await call_activity(
        DeviceFlowActivityContracts.EMIT,
        EmitInput(
            workspace_cwd=workspace_cwd,
            type="auth_device_flow_started",
            data=started_event_data(state),
            dedupe_scope=started_event_scope(state.device_flow_id),
            retention=retention,
            session_id=session_id,
        ),
        start_to_close_timeout=timedelta(seconds=30),
        retry_policy=_RETRY,
    )


def _now_ms() -> int:
    return int(workflow.now().timestamp() * 1000)


def _ms(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1000)
