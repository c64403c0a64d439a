"""The API's side of `CodingTaskWorkflow`: start a task's timers, and wake them after a
store write (claimed, progressed, completed, cancelled) and the proposing agent after a
settlement. A write is durable before either: Temporal being silent loses nothing (the
timers read the store when they run; the agents' sweeper wakes an agent whose events
wait)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from temporalio.client import Client
from temporalio.common import TypedSearchAttributes

from api.standing_agents.temporal_calls import Waker
from api.temporal import TemporalConnector, is_unavailable
from runtime.coding_tasks import store as tasks
from runtime.coding_tasks.contracts import (
    SETTLED,
    WAKE_SIGNAL,
    WORKFLOW_NAME,
    CodingTaskInput,
    TaskState,
    task_search_attributes,
    task_workflow_id,
)
from runtime.coding_tasks.models import CodingTask
from runtime.settings import Settings
from runtime.standing_agents import control
from runtime.store import Store

log = logging.getLogger(__name__)
START_TIMEOUT = timedelta(seconds=10)


async def start_timers(
    client: Client, settings: Settings, row: CodingTask, signal: str = WAKE_SIGNAL
) -> None:
    """Signal-with-start `wake` (or `signal`) of the task's workflow (started when not
    running).

    Raises the Temporal error when it does not answer.
    """
    await client.start_workflow(
        WORKFLOW_NAME,
        CodingTaskInput(
            tenant=row.tenant,
            task_id=row.task_id,
            claim_timeout_ms=settings.coding_task_claim_timeout_ms,
        ),
        id=task_workflow_id(row.tenant, row.task_id),
        task_queue=settings.task_queue,
        start_signal=signal,
        search_attributes=TypedSearchAttributes(task_search_attributes(row.tenant, row.state)),
        rpc_timeout=START_TIMEOUT,
    )


async def after_write(
    connector: TemporalConnector,
    settings: Settings,
    store: Store,
    row: CodingTask,
    waker: Waker | None = None,
) -> None:
    """Wake the task's timers (and, once it settled, the proposing agent): best effort."""
    try:
        await start_timers(await connector.get(), settings, row)
    except Exception as err:
        if is_unavailable(err):
            connector.mark_down()
        log.warning("waking coding task %s failed", row.task_id, exc_info=True)
    if waker is None or TaskState(row.state) not in SETTLED:
        return
    target = await asyncio.to_thread(tasks.proposing_agent, store, row.task_id)
    if target is None:
        return
    instance = await asyncio.to_thread(control.find_instance, store, *target)
    if instance is None:
        return
    await waker(instance)
