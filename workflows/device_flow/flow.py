"""DeviceFlowWorkflow: one OAuth device authorization grant (RFC 8628) of a workspace.

The workflow id `device-flow/{workspace}/{providerId}` makes it a singleton per provider:
a second POST while it runs attaches to it. It asks the IdP for a device code, then
polls the token endpoint on a durable timer at the IdP's `interval` (plus 5 s per
`slow_down`) until approval, a terminal error, `DELETE`, or `expires_in`. The poll is an
activity that stores the credentials itself, so tokens never enter history; nor do the
device code and the PKCE verifier: the code request keeps them on the daemon's disk under
the flow id, the poll reads them there, and they are deleted when the flow ends. A terminal
flow stays readable for the spec's 5-minute grace, then the workflow ends; a new POST in
that grace releases it early. The run id is the flow's `deviceFlowId`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from runtime.search_attributes import STATUS
from workflows.activity_calls import call_activity

with workflow.unsafe.imports_passed_through():
    from runtime.device_flow.contracts import (
        GRACE_MS,
        SLOW_DOWN_STEP_S,
        CancelRequest,
        CancelResult,
        DeviceCode,
        DeviceFlowActivityContracts,
        DeviceFlowInput,
        EmitInput,
        FlowState,
        ForgetInput,
        PollInput,
        PollOutcome,
        RequestCodeResult,
        started_event_data,
        started_event_scope,
    )
    from runtime.failures import UpdateExpired

_IDP_TIMEOUT = timedelta(seconds=60)
# Network failures and 5xx of the IdP retry (a worker or IdP restart in the middle of a
# flow is ordinary); what the IdP refuses is a result, not a retry.
_IDP_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
)
_EMIT_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200))


async def _wait(condition: Callable[[], bool], timeout_ms: int) -> None:
    """Until `condition` holds or a durable timer of `timeout_ms` fires."""
    with contextlib.suppress(TimeoutError):
        await workflow.wait_condition(condition, timeout=timedelta(milliseconds=timeout_ms))


@workflow.defn(name="DeviceFlowWorkflow")
class DeviceFlowWorkflow:
    @workflow.init
    def __init__(self, request: DeviceFlowInput) -> None:
        self._input = request
        self._state = FlowState(
            device_flow_id=workflow.info().run_id,
            provider_id=request.provider.provider_id,
            request_id=request.request_id,
        )
        self._events = 0
        self._released = False

    @workflow.query
    def state(self) -> FlowState:
        return self._state

    @workflow.update
    async def cancel(self, request: CancelRequest) -> CancelResult:
        if self._state.terminal:
            return CancelResult(cancelled=False)
        await self._finish("cancelled")
        await self._emit("auth_device_flow_cancelled", {"deviceFlowId": self._state.device_flow_id})
        return CancelResult(cancelled=True)

    @cancel.validator
    def _check_cancel(self, request: CancelRequest) -> None:
        if request.accept_before_ms is not None:
            if int(workflow.now().timestamp() * 1000) > request.accept_before_ms:
                raise UpdateExpired().application_error()

    @workflow.signal
    def release(self) -> None:
        """A new POST for this provider: end a terminal flow's grace now."""
        if self._state.terminal:
            self._released = True

    @workflow.run
    async def run(self, request: DeviceFlowInput) -> FlowState:
        asked: RequestCodeResult = await call_activity(
            DeviceFlowActivityContracts.REQUEST_CODE,
            request.provider,
            start_to_close_timeout=_IDP_TIMEOUT,
            schedule_to_close_timeout=timedelta(minutes=2),
            retry_policy=_IDP_RETRY,
        )
        if asked.code is None:
            # The POST answers 502 upstream_error: there is no flow to read back.
            self._state.error_kind = "upstream_error"
            self._state.hint = asked.hint
            self._state.status = "failed"
            self._state.terminal_at_ms = self._now_ms()
            return self._state
        if not self._state.terminal:  # not cancelled while the IdP was asked
            await self._poll(asked.code)
        # Authorized, failed, expired or cancelled: the device code is of no more use.
        await call_activity(
            DeviceFlowActivityContracts.FORGET,
            ForgetInput(flow_id=self._state.device_flow_id),
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=_EMIT_RETRY,
        )
        await _wait(lambda: self._released, GRACE_MS)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self._state

    async def _poll(self, code: DeviceCode) -> None:
        state = self._state
        expires_at_ms = self._now_ms() + code.expires_in * 1000
        interval_s = max(code.interval, 1)
        state.user_code = code.user_code
        state.verification_uri = code.verification_uri
        state.verification_uri_complete = code.verification_uri_complete
        state.expires_at_ms = expires_at_ms
        state.interval_ms = interval_s * 1000
        state.status = "pending"
        await self._emit(
            "auth_device_flow_started",
            started_event_data(state),
            scope=started_event_scope(state.device_flow_id),
        )
        while not state.terminal:
            remaining_ms = expires_at_ms - self._now_ms()
            if remaining_ms <= 0:
                await self._fail("expired_token", "The device code expired before approval")
                return
            # The expiry is a durable timer: it fires even if the worker was down then.
            wait_ms = min(interval_s * 1000, remaining_ms)
            await _wait(lambda: state.terminal, wait_ms)
            if state.terminal or self._now_ms() >= expires_at_ms:
                continue
            try:
                outcome: PollOutcome = await call_activity(
                    DeviceFlowActivityContracts.POLL_TOKEN,
                    PollInput(provider=self._input.provider, flow_id=state.device_flow_id),
                    start_to_close_timeout=_IDP_TIMEOUT,
                    # An IdP that stays unreachable is retried until the code expires.
                    schedule_to_close_timeout=timedelta(
                        milliseconds=max(expires_at_ms - self._now_ms(), 1000)
                    ),
                    retry_policy=_IDP_RETRY,
                )
            except ActivityError:
                if not state.terminal:
                    await self._fail("expired_token", "The identity provider did not answer")
                return
            if state.terminal:
                return  # cancelled while the poll was in flight
            if outcome.outcome == "slow_down":
                interval_s += SLOW_DOWN_STEP_S
                state.interval_ms = interval_s * 1000
                await self._emit(
                    "auth_device_flow_throttled",
                    {"deviceFlowId": state.device_flow_id, "intervalMs": state.interval_ms},
                )
            elif outcome.outcome == "authorized":
                await self._finish("authorized")
                data: dict[str, Any] = {
                    "deviceFlowId": state.device_flow_id,
                    "providerId": state.provider_id,
                }
                if outcome.expires_at_ms is not None:
                    data["expiresAt"] = outcome.expires_at_ms
                if outcome.account_alias:
                    data["accountAlias"] = outcome.account_alias
                await self._emit("auth_device_flow_authorized", data)
            elif outcome.outcome == "failed":
                await self._fail(outcome.error_kind or "upstream_error", outcome.hint)

    async def _fail(self, error_kind: str, hint: str | None) -> None:
        self._state.error_kind = error_kind
        self._state.hint = hint
        await self._finish("failed")
        data: dict[str, Any] = {"deviceFlowId": self._state.device_flow_id, "errorKind": error_kind}
        if hint:
            data["hint"] = hint
        await self._emit("auth_device_flow_failed", data)

    async def _finish(self, status: str) -> None:
        state = self._state
        state.status = status  # type: ignore[assignment]
        state.terminal_at_ms = self._now_ms()
        # A terminal entry hides what only a pending one needs.
        state.user_code = None
        state.verification_uri = None
        state.verification_uri_complete = None
        state.interval_ms = None
        workflow.upsert_search_attributes([STATUS.value_set(status)])

    async def _emit(self, event_type: str, data: dict[str, Any], scope: str | None = None) -> None:
        self._events += 1
        await call_activity(
            DeviceFlowActivityContracts.EMIT,
            EmitInput(
                workspace_cwd=self._input.workspace_cwd,
                type=event_type,
                data=data,
                dedupe_scope=scope or f"device-flow/{workflow.info().run_id}/{self._events}",
                retention=self._input.event_retention,
            ),
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=_EMIT_RETRY,
        )

    @staticmethod
    def _now_ms() -> int:
        return int(workflow.now().timestamp() * 1000)
