"""The activities of CodingTaskWorkflow: read its timers, apply an expiry, wake the
proposing agent after a settlement (runtime/coding_tasks/store.py does the writes)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from temporalio import activity
from temporalio.service import RPCError

from runtime.coding_tasks import store as tasks
from runtime.coding_tasks.contracts import (
    SETTLED,
    CodingTaskActivity,
    ExpireInput,
    ExpireResult,
    SettleInput,
    TaskState,
    TaskTimers,
)
from runtime.settings import Settings
from runtime.standing_agents.contracts import agent_workflow_id
from runtime.standing_agents.workflow_contracts import WAKE_SIGNAL as AGENT_WAKE
from runtime.store import Store

log = logging.getLogger(__name__)


class CodingTaskActivities:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    @activity.defn(name=CodingTaskActivity.TIMERS)
    async def timers(self, request: SettleInput) -> TaskTimers:
        timeout = timedelta(milliseconds=self.settings.coding_task_claim_timeout_ms)
        return await asyncio.to_thread(
            tasks.timers, self.store, request.tenant, request.task_id, timeout
        )

    @activity.defn(name=CodingTaskActivity.EXPIRE)
    async def expire(self, request: ExpireInput) -> ExpireResult:
        row, lost = await asyncio.to_thread(
            tasks.expire,
            self.store,
            request.tenant,
            request.task_id,
            timedelta(milliseconds=request.claim_timeout_ms),
            request.now,
        )
        return ExpireResult(lost_holder=lost, settled=TaskState(row.state) in SETTLED)

    @activity.defn(name=CodingTaskActivity.WAKE_AGENT)
    async def wake_agent(self, request: SettleInput) -> None:
        """Signal the proposing agent's workflow: its `DependencyCompleted` is queued. An
        agent whose workflow is not running is woken by the API's sweeper (due events)."""
        target = await asyncio.to_thread(tasks.proposing_agent, self.store, request.task_id)
        if target is None:
            return
        handle = activity.client().get_workflow_handle(agent_workflow_id(*target))
        try:
            await handle.signal(AGENT_WAKE)
        except RPCError:
            log.info("agent %s is not running; the sweeper wakes it", target[1])
