"""One workflow per outbound-webhook endpoint (`notifications/{endpoint_id}`): it delivers
what the outbox owes the endpoint, in order per subject, retrying with backoff, and sleeps
until the next delivery falls due or a `wake` says new ones were written.

Deterministic: every delivery, its HTTP call and its record in the store, is the
`deliver_due` activity's; the workflow only decides when to run it.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from workflows.activity_calls import call_activity

with workflow.unsafe.imports_passed_through():
    from runtime.notifications.contracts import (
        DELIVER_DUE_CONTRACT,
        WAKE_SIGNAL,
        WORKFLOW_NAME,
        DeliverResult,
        EndpointRun,
    )

# With nothing pending, look again this often anyway (a wake lost with its process).
IDLE = timedelta(minutes=5)


@workflow.defn(name=WORKFLOW_NAME)
class NotificationEndpointWorkflow:
    def __init__(self) -> None:
        self._woken = False

    @workflow.signal(name=WAKE_SIGNAL)
    def wake(self) -> None:
        self._woken = True

    @workflow.run
    async def run(self, request: EndpointRun) -> None:
        woken = True  # started by a wake, or by a sweep of what is owed
        while True:
            result: DeliverResult = await call_activity(
                DELIVER_DUE_CONTRACT,
                request.model_copy(update={"woken": woken}),
                start_to_close_timeout=timedelta(minutes=10),
                heartbeat_timeout=timedelta(minutes=1),
                retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=30)),
            )
            if result.gone:
                return
            wait = IDLE
            if result.next_due_ms is not None:
                wait = timedelta(milliseconds=max(result.next_due_ms, 1))
            if not self._woken:
                try:
                    await workflow.wait_condition(lambda: self._woken, timeout=wait)
                except TimeoutError:
                    pass
            woken, self._woken = self._woken, False
            if workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(request)
