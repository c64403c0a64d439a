"""One firing of an agent's schedule (runtime/standing_agents/schedules.py).

The Temporal Schedule `agent-schedule/{tenant}/{scheduleId}` starts this workflow at
each scheduled time. It enqueues the firing's `AgentTick` (an activity; the event id is
the firing's, so a retry or a replay enqueues once), wakes the agent's workflow, and
then stays running until that tick has completed: while it runs, the schedule's overlap
policy (skip, or buffer one) applies to the next firing. It gives the slot up when the
agent is paused or stopped, when the schedule is deleted, or after `MAX_WAIT`.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey

from workflows.activity_calls import call_activity

with workflow.unsafe.imports_passed_through():
    from runtime.standing_agents.contracts import agent_workflow_id
    from runtime.standing_agents.schedules import (
        MAX_WAIT,
        WORKFLOW_NAME,
        AgentScheduleActivityContracts,
        FireOutcome,
        FireRequest,
        FireResult,
        PendingRequest,
        ScheduleFireInput,
    )
    from runtime.standing_agents.workflow_contracts import WAKE_SIGNAL

SCHEDULED_START = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
STORE_CALL = timedelta(seconds=30)
RETRY = RetryPolicy(maximum_interval=timedelta(seconds=30))
FIRST_POLL = timedelta(seconds=1)
LAST_POLL = timedelta(seconds=10)


@workflow.defn(name=WORKFLOW_NAME)
class AgentScheduleWorkflow:
    @workflow.run
    async def run(self, request: ScheduleFireInput) -> str:
        info = workflow.info()
        # Set by the Temporal Schedule on what it starts (a manual trigger: its time).
        scheduled = info.typed_search_attributes.get(SCHEDULED_START) or info.start_time
        fired: FireResult = await call_activity(
            AgentScheduleActivityContracts.FIRE,
            FireRequest(
                schedule_id=request.schedule_id,
                scheduled_time=scheduled,
                firing_id=info.run_id,
            ),
            start_to_close_timeout=STORE_CALL,
            retry_policy=RETRY,
        )
        if fired.event_id is None:
            return fired.outcome.value
        # A retry whose first attempt enqueued (its answer lost) wakes the agent too.
        if fired.outcome in (FireOutcome.ENQUEUED, FireOutcome.DUPLICATE):
            agent = workflow.get_external_workflow_handle(
                agent_workflow_id(fired.tenant, fired.instance_id)
            )
            try:
                await agent.signal(WAKE_SIGNAL)
            except Exception:
                # Not running: the API's sweeper starts it (the event is due and queued).
                workflow.logger.info("agent %s is not running", fired.instance_id)
        poll = FIRST_POLL
        waited = timedelta(0)
        check = PendingRequest(schedule_id=request.schedule_id, event_id=fired.event_id)
        while waited < MAX_WAIT:
            await workflow.sleep(poll)
            waited += poll
            still: bool = await call_activity(
                AgentScheduleActivityContracts.PENDING,
                check,
                start_to_close_timeout=STORE_CALL,
                retry_policy=RETRY,
            )
            if not still:
                break
            poll = min(poll * 2, LAST_POLL)
        return fired.outcome.value
