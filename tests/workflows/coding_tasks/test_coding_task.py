"""CodingTaskWorkflow on the time-skipping server: a silent holder loses its claim after
the claim timeout, the deadline expires the task, and a settlement ends the run after
waking the proposing agent (whose `DependencyCompleted` the settling write queued)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlmodel import col, select
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.llm.scripted import ScriptedModel
from runtime.coding_tasks import store as tasks
from runtime.coding_tasks.contracts import (
    WORKFLOW_NAME,
    CodingTaskInput,
    TaskState,
    task_workflow_id,
)
from runtime.settings import Settings
from runtime.standing_agents import control
from runtime.standing_agents.contracts import AgentStatus, AgentType
from runtime.standing_agents.models import AgentEventRow
from runtime.store import Store
from worker import build_worker

TIMEOUT_MS = 60_000


async def _start(env: WorkflowEnvironment, task_queue: str, task_id: str) -> None:
    await env.client.start_workflow(
        WORKFLOW_NAME,
        CodingTaskInput(tenant="acme", task_id=task_id, claim_timeout_ms=TIMEOUT_MS),
        id=task_workflow_id("acme", task_id),
        task_queue=task_queue,
    )


def _worker(env: WorkflowEnvironment, store: Store, tmp_path: Path, task_queue: str) -> Worker:
    settings = Settings(
        task_queue=task_queue,
        data_dir=tmp_path,
        workspace=tmp_path,
        coding_task_claim_timeout_ms=TIMEOUT_MS,
    )
    return build_worker(env.client, settings, store, ScriptedModel())


async def test_a_silent_holder_loses_the_claim_then_the_deadline_expires_the_task(
    time_env: WorkflowEnvironment, store: Store, tmp_path: Path, task_queue: str
) -> None:
    now = await time_env.get_current_time()
    agent = control.create_instance(store, "acme", AgentType.SOA, AgentStatus.PAUSED)
    row = tasks.create(
        store,
        tenant="acme",
        title="t",
        instructions="i",
        proposed_by="admin",
        now=now,
        op_id="wf/1",
        instance_id=agent.instance_id,
        deadline=now + timedelta(hours=2),
    )
    tasks.claim(store, "acme", row.task_id, "coder:a", now)
    async with _worker(time_env, store, tmp_path, task_queue):
        await _start(time_env, task_queue, row.task_id)
        await time_env.sleep(timedelta(seconds=61))
        reopened = tasks.get(store, "acme", row.task_id)
        assert (reopened.state, reopened.holder) == (TaskState.OPEN.value, None)
        handle = time_env.client.get_workflow_handle(task_workflow_id("acme", row.task_id))
        await time_env.sleep(timedelta(hours=2))
        await handle.result()
        expired = tasks.get(store, "acme", row.task_id)
        assert (expired.state, expired.settled_by) == (TaskState.EXPIRED.value, "deadline")
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
    with store.session() as db:
        statement = select(AgentEventRow).where(
            col(AgentEventRow.event_id) == tasks.settled_event_id(row.task_id)
        )
        (event,) = db.exec(statement).all()
    assert event.payload["state"] == "expired"


async def test_a_completion_ends_the_run(
    time_env: WorkflowEnvironment, store: Store, tmp_path: Path, task_queue: str
) -> None:
    now = datetime.now(UTC)
    row = tasks.create(
        store,
        tenant="acme",
        title="t",
        instructions="i",
        proposed_by="admin",
        now=now,
        op_id="wf/2",
    )
    async with _worker(time_env, store, tmp_path, task_queue):
        await _start(time_env, task_queue, row.task_id)
        tasks.claim(store, "acme", row.task_id, "coder:a", now)
        tasks.complete(store, "acme", row.task_id, "coder:a", TaskState.SUCCEEDED, now, "done")
        handle = time_env.client.get_workflow_handle(task_workflow_id("acme", row.task_id))
        await handle.signal("wake")
        await handle.result()
    assert tasks.get(store, "acme", row.task_id).state == TaskState.SUCCEEDED.value
