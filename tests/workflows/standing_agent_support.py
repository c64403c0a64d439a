"""Helpers of the standing-agent tests: an instance as the API would create it, store reads."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.llm import ModelProvider, ScriptedModel
from runtime import temporal
from runtime.llm.models import LlmCallAttempt
from runtime.settings import Settings
from runtime.standing_agents.contracts import (
    STANDING_AGENTS_FEATURE,
    AgentStatus,
    AgentType,
    EventKind,
    agent_workflow_id,
)
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentInstance,
    AgentLedgerAction,
    AgentLedgerTurn,
    AgentMessage,
    AttentionRequest,
)
from runtime.standing_agents.queue import enqueue
from runtime.standing_agents.workflow_contracts import (
    MAX_MODEL_TURNS_PER_EPISODE,
    StandingAgentInput,
)
from runtime.store import Store
from runtime.store.tenants import set_feature
from runtime.timestamps import aware_utc
from tests import worker_processes
from tests.history_helpers import pending_timers
from worker import build_worker
from workflows.standing_agents.agent import StandingAgentWorkflow

TENANT = "acme"


@pytest.fixture
async def agent_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server per test: long skips after another test's terminated agent
    workflow broke the shared server's sleep (h2 protocol errors)."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal.test_server_path()),
        data_converter=pydantic_data_converter,
    )
    await temporal.ensure_search_attributes(env.client)
    async with env:
        yield env


@asynccontextmanager
async def running(
    env: WorkflowEnvironment,
    store: Store,
    tmp_path: Path,
    task_queue: str,
    provider: ModelProvider | None = None,
    **settings: Any,
) -> AsyncIterator[Store]:
    """A worker on `store` (the conftest's: SQLite, and PostgreSQL when configured)."""
    config = Settings(task_queue=task_queue, data_dir=tmp_path, workspace=tmp_path, **settings)
    async with build_worker(env.client, config, store, provider or ScriptedModel()):
        yield store


async def stop(handle: WorkflowHandle[Any, Any]) -> None:
    # A workflow left on a queue nobody polls would stop the server from skipping time.
    await handle.terminate("test over")


def create_instance(
    store: Store,
    now: datetime,
    *,
    agent_type: AgentType = AgentType.SOA,
    foundational: bool = False,
    feature: bool = True,
) -> str:
    """The row and the AgentInitialized event, as the API writes them before starting
    (the tenant's `standing-agents` feature on unless `feature` is False)."""
    set_feature(store, TENANT, STANDING_AGENTS_FEATURE, feature)
    instance_id = uuid.uuid4().hex[:12]
    with store.session() as db:
        db.add(
            AgentInstance(
                instance_id=instance_id,
                tenant=TENANT,
                agent_type=agent_type.value,
                status=AgentStatus.ACTIVE.value,
                active_mode=None,
                is_building_starting_workset=foundational,
                workset_deadline_utc=now + timedelta(hours=24),
                created_at=now,
                updated_at=now,
            )
        )
        db.commit()
    enqueue(
        store,
        tenant=TENANT,
        instance_id=instance_id,
        kind=EventKind.AGENT_INITIALIZED,
        payload={},
        event_id=f"init/{instance_id}/0",
        visible_at=now,
    )
    return instance_id


async def start(
    client: Client,
    instance_id: str,
    task_queue: str,
    *,
    agent_type: AgentType = AgentType.SOA,
    max_ticks_per_run: int = 500,
    max_model_turns: int = MAX_MODEL_TURNS_PER_EPISODE,
) -> WorkflowHandle[Any, Any]:
    return await client.start_workflow(
        StandingAgentWorkflow.run,
        StandingAgentInput(
            tenant=TENANT,
            instance_id=instance_id,
            agent_type=agent_type,
            max_ticks_per_run=max_ticks_per_run,
            max_model_turns=max_model_turns,
        ),
        id=agent_workflow_id(TENANT, instance_id),
        task_queue=task_queue,
        # As the API starts it: the agent type in the memo, for the Web UI.
        memo={"agentType": agent_type.value},
    )


async def send(
    store: Store,
    handle: WorkflowHandle[Any, Any],
    instance_id: str,
    kind: EventKind,
    payload: dict[str, Any],
    now: datetime,
) -> str:
    """Enqueue an event then wake the workflow (the API's two steps), once the workflow
    has settled (`settled`)."""
    await settled(handle, now)
    event_id = f"test/{uuid.uuid4().hex}"
    enqueue(
        store,
        tenant=TENANT,
        instance_id=instance_id,
        kind=kind,
        payload=payload,
        event_id=event_id,
        visible_at=now,
    )
    await handle.signal("wake")
    return event_id


# A timer due this soon is let fire before a signal is sent (see `settled`).
TIMER_GUARD = timedelta(seconds=5)


async def settled(handle: WorkflowHandle[Any, Any], now: datetime, timeout: float = 60) -> None:
    """Until the workflow, by its history, has no workflow task outstanding, no activity
    running and no timer due within TIMER_GUARD: it waits on a long timer or a signal.

    A signal sent while the workflow is busy can race a timer. The workflow's loop sets
    a timer until the next event is visible, by the time of its own task: an event the
    test enqueued just after that task started is due a few milliseconds later, and the
    wake signal then cancels a timer that fired meanwhile. Temporal's server accepts that
    cancel; the time-skipping test server refuses the completion ("invalid history
    builder state for action", temporalio/sdk-java#2606) and never sends the task again
    (sdk-java#3088), which stranded the STUCK test under load. Sent once settled, the
    wake's task runs after the event is visible: no short timer, nothing to race.

    `now`: the server's time, read just before (`env.get_current_time()`); the server's
    clock runs at real pace while nothing skips time.
    """
    started = time.monotonic()
    deadline = started + timeout
    while True:
        history = await handle.fetch_history()
        busy, due = _busy_and_due(history.events)
        server_now = now + timedelta(seconds=time.monotonic() - started)
        if not busy and all(at - server_now > TIMER_GUARD for at in due):
            return
        if time.monotonic() > deadline:
            last = [EventType.Name(e.event_type) for e in history.events[-5:]]
            raise AssertionError(f"{handle.id} never settled; its last events: {last}")
        await asyncio.sleep(0.02)


def _busy_and_due(events: Any) -> tuple[bool, list[datetime]]:
    """Whether a workflow task or an activity is outstanding, and when the pending timers
    are due (by the event times the server wrote)."""
    task = False
    activities: set[int] = set()
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            task = True
        elif kind in _TASK_ENDED:
            task = False
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            activities.add(event.event_id)
        elif kind in _ACTIVITY_ENDED:
            activities.discard(_ACTIVITY_ENDED[kind](event).scheduled_event_id)
    due = [
        started.event_time.ToDatetime(tzinfo=UTC)
        + started.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
        for started in pending_timers(events).values()
    ]
    closed = bool(events) and events[-1].event_type in _CLOSED
    return (not closed and (task or bool(activities))), ([] if closed else due)


_TASK_ENDED = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
}
_ACTIVITY_ENDED: dict[int, Callable[[Any], Any]] = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: lambda e: (
        e.activity_task_completed_event_attributes
    ),
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: lambda e: e.activity_task_failed_event_attributes,
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: lambda e: (
        e.activity_task_timed_out_event_attributes
    ),
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: lambda e: (
        e.activity_task_canceled_event_attributes
    ),
}
_CLOSED = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}


def turns(store: Store, instance_id: str) -> list[AgentLedgerTurn]:
    with store.session() as db:
        return list(
            db.exec(
                select(AgentLedgerTurn)
                .where(col(AgentLedgerTurn.instance_id) == instance_id)
                .order_by(col(AgentLedgerTurn.seq))
            ).all()
        )


def actions(store: Store, instance_id: str, seq: int) -> list[AgentLedgerAction]:
    with store.session() as db:
        return list(
            db.exec(
                select(AgentLedgerAction)
                .where(
                    col(AgentLedgerAction.instance_id) == instance_id,
                    col(AgentLedgerAction.ledger_seq) == seq,
                )
                .order_by(col(AgentLedgerAction.ordinal))
            ).all()
        )


def instance(store: Store, instance_id: str) -> AgentInstance:
    with store.session() as db:
        row = db.get(AgentInstance, instance_id)
        assert row is not None
        return row


def pending_ticks(store: Store, instance_id: str) -> list[AgentEventRow]:
    with store.session() as db:
        return list(
            db.exec(
                select(AgentEventRow).where(
                    col(AgentEventRow.instance_id) == instance_id,
                    col(AgentEventRow.event_kind) == EventKind.AGENT_TICK.value,
                    col(AgentEventRow.consumed_at).is_(None),
                )
            ).all()
        )


def llm_attempts(store: Store, instance_id: str) -> list[LlmCallAttempt]:
    with store.session() as db:
        return list(
            db.exec(
                select(LlmCallAttempt)
                .where(col(LlmCallAttempt.owner_id) == instance_id)
                # In the order they were made: a SELECT without ORDER BY has none (on
                # PostgreSQL rows come back in whatever order the heap holds them).
                .order_by(
                    col(LlmCallAttempt.created_at),
                    col(LlmCallAttempt.call_id),
                    col(LlmCallAttempt.ordinal),
                )
            ).all()
        )


def llm_attempts_of_tenant(store: Store, tenant: str) -> list[LlmCallAttempt]:
    """Every attempt of the tenant's agents (what its weekly credit counts)."""
    with store.session() as db:
        return list(
            db.exec(
                select(LlmCallAttempt)
                .where(col(LlmCallAttempt.tenant) == tenant)
                .order_by(col(LlmCallAttempt.created_at), col(LlmCallAttempt.attempt_id))
            ).all()
        )


def messages(store: Store, instance_id: str) -> list[AgentMessage]:
    with store.session() as db:
        return list(
            db.exec(
                select(AgentMessage)
                .where(col(AgentMessage.instance_id) == instance_id)
                .order_by(col(AgentMessage.created_at))
            ).all()
        )


def attention(store: Store, instance_id: str) -> list[AttentionRequest]:
    with store.session() as db:
        return list(
            db.exec(
                select(AttentionRequest).where(col(AttentionRequest.soa_instance_id) == instance_id)
            ).all()
        )


async def wait_turns(
    store: Store,
    instance_id: str,
    count: int,
    timeout: float = 60,
    handle: WorkflowHandle[Any, Any] | None = None,
) -> None:
    """Until the ledger holds `count` turns (real time: the worker is working). When they
    never come, the message says what the agent and, given its `handle`, its workflow
    were doing (the last events of its history)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(turns(store, instance_id)) >= count:
            return
        await asyncio.sleep(0.05)
    got = len(turns(store, instance_id))
    with store.session() as db:
        waiting = db.exec(
            select(AgentEventRow).where(
                col(AgentEventRow.instance_id) == instance_id,
                col(AgentEventRow.consumed_at).is_(None),
            )
        ).all()
    row = instance(store, instance_id)
    history = "" if handle is None else f"; the workflow's last events: {await _tail(handle)}"
    raise AssertionError(
        f"{count} turns never arrived (got {got}); tick_in_progress={row.tick_in_progress}, "
        f"unconsumed: {[(e.event_id, e.event_kind, e.visible_at) for e in waiting]}{history}"
    )


async def _tail(handle: WorkflowHandle[Any, Any], last: int = 20) -> list[str]:
    """The last events of a workflow's history, each as its type (and a failure's message)."""
    events = (await handle.fetch_history()).events[-last:]
    tail = []
    for event in events:
        name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
        failure = event.workflow_task_failed_event_attributes.failure.message
        failure = failure or event.activity_task_failed_event_attributes.failure.message
        tail.append(f"{event.event_id} {name}" + (f" ({failure[:200]})" if failure else ""))
    return tail


aware = aware_utc


def worker_process(
    env: WorkflowEnvironment, task_queue: str, data_dir: Path, **extra_env: str
) -> subprocess.Popen[bytes]:
    """`agentrt worker` as a process of its own (for kill -9), on `task_queue`, its store
    under `data_dir`; `extra_env` adds settings (e.g. the model provider). Workflows started
    before it polls wait for it: nothing here asks a worker to answer within a bound."""
    return worker_processes.worker_process(
        worker_processes.worker_env(env, task_queue, data_dir, data_dir.parent, **extra_env)
    )
