"""The approvals' clock (`approvals-clock/<task queue>`, one per deployment): a Temporal
timer until the next warning or expiry of a timed approval (runtime/approvals/clock.py),
woken when a request opens. Deterministic: the `keep_time` activity does every read and
write."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from workflows.activity_calls import call_activity

with workflow.unsafe.imports_passed_through():
    from runtime.approvals.contracts import (
        CLOCK_WAKE_SIGNAL,
        CLOCK_WORKFLOW_NAME,
        KEEP_TIME_CONTRACT,
        ClockResult,
    )


@workflow.defn(name=CLOCK_WORKFLOW_NAME)
class ApprovalClockWorkflow:
    def __init__(self) -> None:
        self._woken = False

    @workflow.signal(name=CLOCK_WAKE_SIGNAL)
    def wake(self) -> None:
        self._woken = True

    @workflow.run
    async def run(self, idle_ms: int) -> None:
        while True:
            self._woken = False
            result: ClockResult = await call_activity(
                KEEP_TIME_CONTRACT,
                None,
                start_to_close_timeout=timedelta(minutes=5),
                retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=30)),
            )
            wait = timedelta(milliseconds=idle_ms)
            if result.next_in_ms is not None:
                wait = min(wait, timedelta(milliseconds=max(result.next_in_ms, 1)))
            if not self._woken:
                try:
                    await workflow.wait_condition(lambda: self._woken, timeout=wait)
                except TimeoutError:
                    pass
            if workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(idle_ms)
