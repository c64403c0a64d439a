"""How a process wakes the workflows that act on what its transactions wrote: an outbound
webhook endpoint's (`notifications/{endpoint_id}`: the outbox owes it something) and the
approvals' clock (`approvals-clock`: a request opened). A signal-with-start (started if it
is not running), sent from the process's event loop whatever thread wrote the rows."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy

from runtime.approvals.contracts import (
    CLOCK_WAKE_SIGNAL,
    CLOCK_WORKFLOW_ID,
    CLOCK_WORKFLOW_NAME,
    clock_workflow_id,
)
from runtime.notifications.contracts import (
    WAKE_SIGNAL,
    WORKFLOW_NAME,
    EndpointRun,
    endpoint_workflow_id,
)

log = logging.getLogger(__name__)


class Waker:
    """Installed with `outbox.install_waker(waker)`; `client` gives the Temporal client."""

    def __init__(
        self,
        client: Callable[[], Awaitable[Client]],
        task_queue: str,
        clock_idle_ms: int,
        *,
        clock: bool = True,
    ) -> None:
        """`clock`: the deployment times some approvals (a kind's timeout is not 0); else
        wakes of the approvals' clock are dropped (it has nothing to do)."""
        self._client = client
        self._task_queue = task_queue
        self._clock_idle_ms = clock_idle_ms
        self._clock = clock
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, endpoint_ids: Sequence[str]) -> None:
        def schedule() -> None:
            for endpoint_id in endpoint_ids:
                task = self._loop.create_task(self.wake(endpoint_id))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

        if self._loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            schedule()
        else:
            self._loop.call_soon_threadsafe(schedule)

    async def wake(self, endpoint_id: str) -> None:
        """Wake (or start) the endpoint's workflow. A failure is only logged: the workflow's
        own timer, and the worker's sweep at start, deliver what a lost wake announced."""
        try:
            client = await self._client()
            if endpoint_id == CLOCK_WORKFLOW_ID:
                if not self._clock:
                    return
                await client.start_workflow(
                    CLOCK_WORKFLOW_NAME,
                    self._clock_idle_ms,
                    id=clock_workflow_id(self._task_queue),
                    task_queue=self._task_queue,
                    id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                    start_signal=CLOCK_WAKE_SIGNAL,
                )
                return
            await client.start_workflow(
                WORKFLOW_NAME,
                EndpointRun(endpoint_id=endpoint_id),
                id=endpoint_workflow_id(endpoint_id),
                task_queue=self._task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                start_signal=WAKE_SIGNAL,
            )
        except Exception as err:  # best effort: Temporal away, the API's 503, a shutdown
            log.warning("could not wake the deliveries of %s: %s", endpoint_id, err)
