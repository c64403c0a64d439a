"""WindowsLeaseWorkflow: one holder's lease of a Windows machine of the pool.

Id `windows-lease/{tenant}/{holder}`. The first `windows_*` verb starts it (there is no
lease verb) and sends the update `call`; the lease opens a pool session then, renews it
before it expires while it is held, and releases it on `windows_release`, on the
holder's settlement (signal `settle`) and after `idle_ms` without a verb. The pool
session is workflow state: a restart of the worker, the API or Temporal changes nothing,
and the next verb uses the same session. A 404 from the pool abandons it (the call
answers NOT_FOUND with `sessionEvicted: true`); the next verb leases anew. Once nothing
is held the workflow ends: the next verb starts a new run under the same id.

Verbs run one at a time (a lock): a holder drives one machine, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from runtime.search_attributes import STATUS
from workflows import patches
from workflows.activity_calls import call_activity

with workflow.unsafe.imports_passed_through():
    from runtime.failures import UpdateExpired, decode_failure
    from runtime.windows.contracts import (
        CallVerbInput,
        CallVerbResult,
        CloseSessionInput,
        CloseSessionResult,
        OpenSessionInput,
        PoolSession,
        ReleaseResult,
        RenewInput,
        RenewResult,
        WindowsPoolActivityContracts,
    )
    from runtime.windows.errors import WindowsError, WindowsErrorCode
    from runtime.windows.lease_contracts import (
        FIRST_CALL_GRACE_MS,
        RENEW_RETRY_MS,
        LeaseCall,
        LeaseCallResult,
        LeaseInput,
        LeaseState,
        LeaseView,
        SettleRequest,
        holder_settled,
        idle_deadline_ms,
        release_not_held,
    )
    from runtime.windows.verbs import (
        SESSION_ACTIVITY_TIMEOUT,
        WindowsVerb,
        activity_timeout,
        clamp_waits,
        parse_verb,
        renew_after,
        validate_and_clamp,
    )

# A pool call either answers or fails with a typed error the caller must see: the
# activity decides what is retryable (no HTTP answer) and retries it itself; the
# workflow does not add retries of its own to a verb (a click must not be doubled).
_ONE_ATTEMPT = RetryPolicy(maximum_attempts=1)
_SESSION_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=3,
)


@workflow.defn(name="WindowsLeaseWorkflow")
class WindowsLeaseWorkflow:
    @workflow.init
    def __init__(self, request: LeaseInput) -> None:
        self._input = request
        self._session: PoolSession | None = request.session
        self._renewed_at = request.renewed_at_ms
        self._last_verb = request.last_verb_ms
        self._calls = request.calls
        self._busy = 0
        self._settle: SettleRequest | None = None
        self._poked = False
        self._state: LeaseState = "held" if self._session else "leasing"
        self._lock = asyncio.Lock()

    # -- surface -------------------------------------------------------------------------

    @workflow.query
    def lease(self) -> LeaseView:
        session = self._session
        return LeaseView(
            holder=self._input.holder,
            sessionId=session.session_id if session else None,
            host=session.host if session else None,
            expiresAt=session.expires_at.isoformat() if session else None,
            state=self._state,
        )

    # An update, not a signal: the caller waits for the verb's result.
    @workflow.update
    async def call(self, request: LeaseCall) -> LeaseCallResult:
        self._busy += 1
        self._calls += 1
        try:
            async with self._lock:
                return LeaseCallResult(result=await self._call(request))
        finally:
            self._busy -= 1
            self._poked = True

    @call.validator
    def _validate_call(self, request: LeaseCall) -> None:
        if request.accept_before_ms is not None and self._now() > request.accept_before_ms:
            raise UpdateExpired().application_error()
        # VALIDATION_ERROR before any lease: a bad call never enters history.
        verb = parse_verb(request.verb)
        validate_and_clamp(verb, request.args)
        if self._settle is not None and verb != WindowsVerb.RELEASE:
            raise holder_settled(self._input.holder, self._settle.reason).application_error()

    @workflow.signal
    def settle(self, request: SettleRequest) -> None:
        self._settle = request
        self._poked = True

    # -- the lease -----------------------------------------------------------------------

    @workflow.run
    async def run(self, request: LeaseInput) -> LeaseView:
        if self._calls == 0 and self._session is None:
            # Started by a verb whose update follows the start.
            await self._wait(
                lambda: self._calls > 0 or self._settle is not None, FIRST_CALL_GRACE_MS
            )
        while True:
            if self._busy == 0 and self._session is None:
                break  # nothing held: the next verb starts a new run
            if self._settle is not None and self._busy == 0:
                await self._own_release("settled")
                break
            now = self._now()
            if self._session is not None and self._busy == 0 and self._last_verb is not None:
                if now >= idle_deadline_ms(self._last_verb, self._input.idle_ms):
                    await self._own_release("idle_expired")
                    break
            if self._session is not None and self._renewed_at is not None:
                if now >= self._renewed_at + self._renew_after_ms():
                    await self._renew()
                    continue
            if workflow.info().is_continue_as_new_suggested() and self._busy == 0:
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self._carry_over())
            await self._wait(lambda: self._poked, self._next_wake_ms() - now)
            self._poked = False
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.lease()

    def _next_wake_ms(self) -> int:
        wakes = [self._now() + FIRST_CALL_GRACE_MS * 10]
        if self._session is not None and self._renewed_at is not None:
            wakes.append(self._renewed_at + self._renew_after_ms())
        if self._session is not None and self._last_verb is not None:
            wakes.append(idle_deadline_ms(self._last_verb, self._input.idle_ms))
        return min(wakes)

    async def _call(self, request: LeaseCall) -> Any:
        verb = WindowsVerb(request.verb)
        # Validated by `_validate_call` on acceptance (validators do not run on replay):
        # only the clamps here, so a call accepted under older rules replays the same.
        args = clamp_waits(verb, request.args)
        self._last_verb = self._now()
        if self._settle is not None and verb != WindowsVerb.RELEASE:
            # The holder is gone (it settled while this verb waited its turn): a late verb
            # does not lease a machine for nobody. A release still releases.
            raise holder_settled(self._input.holder, self._settle.reason).application_error()
        if verb == WindowsVerb.RELEASE:
            if self._session is None:
                return release_not_held()
            return await self._release("released")
        if self._session is None:
            await self._open()
        session = self._session
        assert session is not None
        try:
            called: CallVerbResult = await call_activity(
                WindowsPoolActivityContracts.CALL_VERB,
                CallVerbInput(
                    tenant=self._input.tenant,
                    holder=self._input.holder,
                    session=session,
                    verb=verb,
                    args=args,
                ),
                start_to_close_timeout=activity_timeout(verb, args),
                retry_policy=_ONE_ATTEMPT,
            )
        except ActivityError as err:
            raise self._failed(err) from err
        self._last_verb = self._now()
        return called.result

    def _failed(self, err: ActivityError) -> ApplicationError:
        """The activity's typed error, re-raised for the caller; an eviction ends the hold."""
        failure = decode_failure(err.cause)
        if not isinstance(failure, WindowsError):
            failure = WindowsError.agentrt(WindowsErrorCode.POOL_ERROR, str(err.cause or err))
        if failure.code == WindowsErrorCode.NOT_FOUND:
            self._abandon()
        return failure.application_error()

    def _abandon(self) -> None:
        self._session = None
        self._renewed_at = None
        self._set_state("evicted")

    async def _open(self) -> None:
        try:
            session: PoolSession = await call_activity(
                WindowsPoolActivityContracts.OPEN_SESSION,
                OpenSessionInput(
                    tenant=self._input.tenant,
                    holder=self._input.holder,
                    lease_ms=self._input.lease_ms,
                ),
                start_to_close_timeout=SESSION_ACTIVITY_TIMEOUT,
                retry_policy=_ONE_ATTEMPT,
            )
        except ActivityError as err:
            raise self._failed(err) from err
        self._session = session
        self._renewed_at = self._now()
        self._set_state("held")

    async def _renew(self) -> None:
        session = self._session
        assert session is not None
        try:
            renewed: RenewResult = await call_activity(
                WindowsPoolActivityContracts.RENEW,
                RenewInput(session_id=session.session_id, lease_ms=self._input.lease_ms),
                start_to_close_timeout=SESSION_ACTIVITY_TIMEOUT,
                retry_policy=_SESSION_RETRY,
            )
        except ActivityError as err:
            failure = decode_failure(err.cause)
            if isinstance(failure, WindowsError) and failure.code == WindowsErrorCode.NOT_FOUND:
                self._abandon()
                return
            # The pool did not answer: keep the session (it is still ours until it
            # expires) and try again shortly.
            assert self._renewed_at is not None
            self._renewed_at += RENEW_RETRY_MS
            return
        if self._session is session:
            self._session = session.model_copy(update={"expires_at": renewed.expires_at})
            self._renewed_at = self._now()

    async def _own_release(self, state: LeaseState) -> None:
        """A release the lease decides itself, serialized with the verbs (which hold the
        lock while they run: none does now, `_busy` is 0)."""
        if not workflow.patched(patches.LEASE_RELEASES_UNDER_THE_VERBS_LOCK):
            await self._release(state)
            return
        async with self._lock:
            await self._release(state)

    async def _release(self, state: LeaseState) -> dict[str, Any]:
        session = self._session
        if session is None:
            return release_not_held()
        outcome = ReleaseResult(released=True, outcome="released")
        try:
            closed: CloseSessionResult = await call_activity(
                WindowsPoolActivityContracts.CLOSE_SESSION,
                CloseSessionInput(session_id=session.session_id),
                start_to_close_timeout=SESSION_ACTIVITY_TIMEOUT,
                retry_policy=_SESSION_RETRY,
            )
            if not closed.closed:
                # The pool no longer knew it (evicted or expired): nothing is held either.
                outcome = ReleaseResult(released=False, outcome="evicted")
        except ActivityError:
            # A pool that does not answer lets the session expire: it is not renewed any
            # more, and the pool closes what it launched before the slot is reused.
            pass
        self._session = None
        self._renewed_at = None
        self._set_state(state)
        return outcome.model_dump()

    def _carry_over(self) -> LeaseInput:
        return self._input.model_copy(
            update={
                "session": self._session,
                "renewed_at_ms": self._renewed_at,
                "last_verb_ms": self._last_verb,
                "calls": self._calls,
            }
        )

    def _renew_after_ms(self) -> int:
        return int(renew_after(self._input.lease_ms).total_seconds() * 1000)

    def _set_state(self, state: LeaseState) -> None:
        self._state = state
        workflow.upsert_search_attributes([STATUS.value_set(state)])

    async def _wait(self, condition: Any, timeout_ms: int) -> None:
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(
                condition, timeout=timedelta(milliseconds=max(timeout_ms, 1))
            )

    @staticmethod
    def _now() -> int:
        return int(workflow.now().timestamp() * 1000)
