"""AgentScheduleWorkflow, one firing of an agent's schedule, on the time-skipping
server: it enqueues its tick once and holds the schedule's overlap slot until the tick
is taken, or gives the slot up after MAX_WAIT (a later firing coalesces onto the tick
still queued). The Temporal Schedule itself (overlap, catch-up) is on the dev server:
tests/api/standing_agents/test_agents_schedules.py."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlmodel import col, select
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from activities.llm.scripted import ScriptedModel
from runtime.settings import Settings
from runtime.standing_agents import control, schedules
from runtime.standing_agents.contracts import AgentStatus, AgentType
from runtime.standing_agents.models import AgentEventRow
from runtime.store import Store
from worker import build_worker


def _schedule() -> schedules.NewSchedule:
    return schedules.NewSchedule(
        cron="0 3 * * *",
        time_zone="UTC",
        overlap=schedules.Overlap.SKIP,
        catchup_window_s=3600,
        note=None,
    )


def _pending_ticks(store: Store, instance_id: str) -> list[AgentEventRow]:
    with store.session() as db:
        return list(
            db.exec(
                select(AgentEventRow).where(
                    col(AgentEventRow.instance_id) == instance_id,
                    col(AgentEventRow.event_id).startswith(schedules.EVENT_PREFIX),
                    col(AgentEventRow.consumed_at).is_(None),
                )
            ).all()
        )


async def test_a_firing_holds_its_slot_until_max_wait_then_the_next_coalesces(
    time_env: WorkflowEnvironment, store: Store, tmp_path: Path, task_queue: str
) -> None:
    agent = control.create_instance(store, "acme", AgentType.COMPLIANCE, AgentStatus.ACTIVE)
    row = schedules.create_row(store, agent, _schedule(), datetime.now(UTC))
    settings = Settings(task_queue=task_queue, data_dir=tmp_path, workspace=tmp_path)
    request = schedules.ScheduleFireInput(tenant="acme", schedule_id=row.schedule_id)
    async with build_worker(time_env.client, settings, store, ScriptedModel()):
        first = await time_env.client.start_workflow(
            schedules.WORKFLOW_NAME, request, id=f"fire-1-{task_queue}", task_queue=task_queue
        )
        # Nobody takes the tick (the agent's workflow is not running): an hour of
        # skipped time later the firing ends, its tick still queued.
        assert await first.result() == "enqueued"
        started = (await first.describe()).start_time
        closed = (await first.describe()).close_time
        assert started and closed and closed - started >= schedules.MAX_WAIT
        [pending] = _pending_ticks(store, agent.instance_id)
        second = await time_env.client.start_workflow(
            schedules.WORKFLOW_NAME, request, id=f"fire-2-{task_queue}", task_queue=task_queue
        )
        # The agent is stopped meanwhile: the second firing adds nothing and holds no slot.
        control_row = control.get_instance(store, "acme", agent.instance_id)
        with store.session() as db:
            control_row.status = AgentStatus.PAUSED.value
            db.add(control_row)
            db.commit()
        assert await second.result() == "coalesced"
        assert [e.event_id for e in _pending_ticks(store, agent.instance_id)] == [pending.event_id]
        assert (await second.describe()).status == WorkflowExecutionStatus.COMPLETED
