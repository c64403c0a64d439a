"""The store side of coding tasks (runtime/coding_tasks/store.py), on SQLite and
PostgreSQL: every transition a compare-and-swap, one holder whatever the races, and the
proposing agent's `DependencyCompleted` enqueued exactly once by the settling write."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from alembic import command
from sqlalchemy import text
from sqlmodel import col, select
from temporalio.exceptions import ApplicationError

from runtime.coding_tasks import own_coder
from runtime.coding_tasks import store as tasks
from runtime.coding_tasks.contracts import TaskState
from runtime.failures import decode_failure
from runtime.standing_agents import control
from runtime.standing_agents.contracts import AgentStatus, AgentType
from runtime.standing_agents.models import AgentEventRow
from runtime.store import Store
from runtime.store.migrate import alembic_config, current_revision, head_revision

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _task(store: Store, tenant: str = "acme", **extra: object) -> str:
    row = tasks.create(
        store,
        tenant=tenant,
        title="Fix the build",
        instructions="make test passes",
        proposed_by="admin",
        now=T0,
        op_id=f"test/{tenant}/{extra.pop('key', 'k')}",
        **extra,  # type: ignore[arg-type]
    )
    return row.task_id


def _refusal(err: pytest.ExceptionInfo[ApplicationError]) -> dict[str, object]:
    failure = decode_failure(err.value)
    assert failure is not None
    return failure.response_body()


def _settled_events(store: Store, task_id: str) -> list[AgentEventRow]:
    with store.session() as db:
        statement = select(AgentEventRow).where(
            col(AgentEventRow.event_id) == tasks.settled_event_id(task_id)
        )
        return list(db.exec(statement).all())


def test_creation_is_once_per_operation(store: Store) -> None:
    first = _task(store)
    assert _task(store) == first
    view = tasks.view(tasks.get(store, "acme", first))
    assert (view.state, view.proposedBy, view.holder) == (TaskState.OPEN, "admin", None)
    with pytest.raises(ApplicationError) as err:
        tasks.get(store, "other", first)
    assert _refusal(err)["code"] == "coding_task_not_found"


def test_one_holder_whatever_the_races(store: Store) -> None:
    task_id = _task(store)

    def claim(n: int) -> str:
        try:
            return tasks.claim(store, "acme", task_id, f"coder:{n}", T0).holder or ""
        except ApplicationError as err:
            failure = decode_failure(err)
            assert failure is not None
            return str(failure.response_body()["code"])

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(claim, range(8)))
    winners = [o for o in outcomes if o.startswith("coder:")]
    assert len(winners) == 1 and outcomes.count("task_not_open") == 7
    # The holder's retried claim gets the same answer.
    assert tasks.claim(store, "acme", task_id, winners[0], T0).holder == winners[0]


def test_a_claim_needs_the_tasks_capabilities(store: Store) -> None:
    task_id = _task(store, capabilities=["windows", "python"])
    with pytest.raises(ApplicationError) as err:
        tasks.claim(store, "acme", task_id, "coder:a", T0, capabilities=["python"])
    assert _refusal(err)["code"] == "capabilities_missing"
    row = tasks.claim(store, "acme", task_id, "coder:a", T0, capabilities=["python", "windows"])
    assert row.state == TaskState.CLAIMED.value


def test_progress_is_the_holders_and_a_keyed_note_is_added_once(store: Store) -> None:
    task_id = _task(store)
    tasks.claim(store, "acme", task_id, "coder:a", T0)
    later = T0 + timedelta(minutes=1)
    for _ in range(2):
        row = tasks.update_progress(store, "acme", task_id, "coder:a", later, "half way", "n1")
    assert row.state == TaskState.RUNNING.value and len(row.notes) == 1
    assert tasks.view(row).heartbeatAt == "2026-12-02T09:01:00.000Z"
    with pytest.raises(ApplicationError) as err:
        tasks.update_progress(store, "acme", task_id, "coder:b", later, "mine now")
    assert _refusal(err)["code"] == "not_task_holder"


def test_a_settlement_tells_the_proposing_agent_exactly_once(store: Store) -> None:
    agent = control.create_instance(store, "acme", AgentType.SOA, AgentStatus.PAUSED)
    task_id = _task(store, instance_id=agent.instance_id)
    tasks.claim(store, "acme", task_id, "coder:a", T0)
    done = T0 + timedelta(minutes=5)
    artifacts = [{"kind": "commit", "ref": "abc123"}]
    for _ in range(2):  # a retried completion: the same answer, one event
        row = tasks.complete(
            store, "acme", task_id, "coder:a", TaskState.SUCCEEDED, done, "fixed", artifacts
        )
    assert (row.state, row.summary, row.settled_by) == ("succeeded", "fixed", "coder:a")
    (event,) = _settled_events(store, task_id)
    assert event.event_kind == "DependencyCompleted"
    assert event.payload["taskId"] == task_id and event.payload["state"] == "succeeded"
    assert event.payload["artifacts"] == artifacts
    with pytest.raises(ApplicationError) as err:
        tasks.complete(store, "acme", task_id, "coder:a", TaskState.FAILED, done)
    assert _refusal(err)["code"] == "task_settled"
    with pytest.raises(ApplicationError) as err:
        tasks.cancel(store, "acme", task_id, "admin", done)
    assert _refusal(err)["code"] == "task_settled"
    assert len(_settled_events(store, task_id)) == 1


def test_a_silent_holder_loses_the_claim_and_the_deadline_expires_the_task(
    store: Store,
) -> None:
    agent = control.create_instance(store, "acme", AgentType.SOA, AgentStatus.PAUSED)
    task_id = _task(store, instance_id=agent.instance_id, deadline=T0 + timedelta(hours=1))
    tasks.claim(store, "acme", task_id, "coder:a", T0)
    timeout = timedelta(minutes=5)
    row, lost = tasks.expire(store, "acme", task_id, timeout, T0 + timedelta(minutes=4))
    assert (row.state, lost) == ("claimed", None)
    timers = tasks.timers(store, "acme", task_id, timeout)
    assert timers.claim_expires_at == T0 + timeout
    row, lost = tasks.expire(store, "acme", task_id, timeout, T0 + timedelta(minutes=6))
    assert (row.state, row.holder, lost) == ("open", None, "coder:a")
    assert _settled_events(store, task_id) == []
    row, _ = tasks.expire(store, "acme", task_id, timeout, T0 + timedelta(hours=2))
    assert (row.state, row.settled_by) == ("expired", "deadline")
    assert len(_settled_events(store, task_id)) == 1


def test_a_cancel_settles_an_open_task_once(store: Store) -> None:
    task_id = _task(store)
    first = tasks.cancel(store, "acme", task_id, "admin", T0)
    again = tasks.cancel(store, "acme", task_id, "admin", T0)
    assert first.state == again.state == "cancelled"
    with pytest.raises(ApplicationError) as err:
        tasks.claim(store, "acme", task_id, "coder:a", T0)
    assert _refusal(err)["code"] == "task_not_open"


def test_bad_input_is_refused_with_a_typed_body(store: Store) -> None:
    with pytest.raises(ApplicationError) as err:
        tasks.create(
            store,
            tenant="acme",
            title=" ",
            instructions="x",
            proposed_by="admin",
            now=T0,
            op_id="bad",
        )
    assert _refusal(err)["code"] == "invalid_coding_task"
    task_id = _task(store)
    tasks.claim(store, "acme", task_id, "coder:a", T0)
    with pytest.raises(ApplicationError) as err:
        tasks.complete(store, "acme", task_id, "coder:a", TaskState.CANCELLED, T0)
    assert _refusal(err)["code"] == "invalid_coding_task"


def test_a_coder_slot_never_revives_a_cancelled_task(store: Store) -> None:
    """From a second read: the reservation is a compare-and-swap, not a blind write."""
    task_id = _task(store)
    tasks.claim(store, "acme", task_id, "agentrt-coder", T0)
    tasks.cancel(store, "acme", task_id, "admin", T0)
    assert own_coder.reserve_coder(store, "acme", task_id, "s-1", limit=4) is None
    row = tasks.get(store, "acme", task_id)
    assert (row.state, row.session_id) == ("cancelled", None)


def test_a_claim_lost_and_retaken_is_not_the_old_holders_to_complete(store: Store) -> None:
    task_id = _task(store)
    tasks.claim(store, "acme", task_id, "coder:a", T0)
    tasks.expire(store, "acme", task_id, timedelta(minutes=5), T0 + timedelta(minutes=6))
    tasks.claim(store, "acme", task_id, "coder:b", T0 + timedelta(minutes=7))
    with pytest.raises(ApplicationError) as err:
        tasks.complete(store, "acme", task_id, "coder:a", TaskState.SUCCEEDED, T0)
    assert _refusal(err)["code"] == "not_task_holder"
    assert tasks.get(store, "acme", task_id).holder == "coder:b"


def test_coders_slots_are_bounded_per_tenant(store: Store) -> None:
    ids = [_task(store, key=f"slot-{n}") for n in range(3)]
    for task_id in ids:
        tasks.claim(store, "acme", task_id, "agentrt-coder", T0)
    got = [own_coder.reserve_coder(store, "acme", t, f"s-{t}", limit=2) for t in ids]
    assert [g is not None for g in got] == [True, True, False]
    # The same reservation again answers at once (a retried spawn).
    assert own_coder.reserve_coder(store, "acme", ids[0], "s-other", limit=2) is not None


def test_tasks_from_before_coding_tasks_settle_and_free_their_slots(database_url: str) -> None:
    """Migration 0013: a task soa_propose_task ran before coding tasks (0011 made it
    `running` under agentrt's coder, with no workflow) settles `expired` with its session
    as the artifact, so it no longer holds a coder slot; a row written since stays."""
    store = Store(database_url)
    try:
        with store.engine.begin() as connection:
            command.downgrade(alembic_config(connection), "0010")
        with store.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO agent_tasks (task_id, tenant, instance_id, title, prompt,"
                    " session_id, status, op_id, created_at) VALUES ('old-1', 'acme', 'soa-1',"
                    " 'Old', 'Do it', 'sess-old', 'submitted', 'op-old', :at)"
                ),
                {"at": datetime(2026, 11, 1, tzinfo=UTC)},
            )
        with store.engine.begin() as connection:
            command.upgrade(alembic_config(connection), "head")
        assert current_revision(store.engine) == head_revision()
        old = tasks.get(store, "acme", "old-1")
        assert (old.state, old.holder, old.settled_by) == ("expired", "agentrt-coder", "agentrt")
        assert old.artifacts == [
            {
                "kind": "session",
                "ref": "session/sess-old",
                "description": "the session the task ran in",
            }
        ]
        now = datetime.now(UTC)
        fresh = tasks.create(
            store,
            tenant="acme",
            title="New",
            instructions="x",
            proposed_by="admin",
            now=now,
            op_id="new-1",
        )
        tasks.claim(store, "acme", fresh.task_id, "agentrt-coder", now)
        # One slot: the old task no longer takes it.
        assert own_coder.reserve_coder(store, "acme", fresh.task_id, "sess-new", 1) is not None
    finally:
        store.dispose()


def test_a_list_past_its_limit_shows_the_latest_tasks_oldest_first(store: Store) -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    made = [
        tasks.create(
            store,
            tenant="acme",
            title=f"t{i}",
            instructions="x",
            proposed_by="admin",
            now=start + timedelta(minutes=i),
            op_id=f"list-{i}",
        ).title
        for i in range(5)
    ]
    assert [t.title for t in tasks.list_tasks(store, "acme", limit=3)] == made[2:]
    assert [t.title for t in tasks.list_tasks(store, "acme")] == made
