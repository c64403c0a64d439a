"""The store side of coding tasks: every transition is a compare-and-swap on `state`.

- `claim`: open → claimed, one holder whatever the races; the same holder claiming again
  gets the same answer (a retried call), anyone else 409 `task_not_open`.
- `update`: the holder's progress note and heartbeat (claimed → running); a note's `key`
  makes a retried update add nothing.
- `complete`: the holder settles it succeeded or failed; the same completion again gets
  the same answer, another 409.
- `cancel` (an operator), `expire` (the workflow's timers: the deadline settles it
  `expired`; a holder silent past the claim timeout loses it and the task is open again).

A settlement enqueues, in the same transaction, the proposing agent's
`DependencyCompleted` event (`task-settled/{taskId}`, deduplicated): exactly once,
whoever settled it and however often.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select
from temporalio.exceptions import ApplicationError

from runtime.coding_tasks import settlement
from runtime.coding_tasks.contracts import (
    HELD,
    OWN_CODER,
    SETTLED,
    InvalidTask,
    TaskConflict,
    TaskNote,
    TaskNotFound,
    TaskState,
    TaskTimers,
    TaskView,
    task_workflow_id,
)
from runtime.coding_tasks.models import CodingTask
from runtime.coding_tasks.settlement import settled_event_id as settled_event_id
from runtime.store import Store
from runtime.timestamps import aware_utc, iso_ms

MAX_NOTES = 200
NOTE_MAX = 4000
SUMMARY_MAX = 20_000
MAX_ARTIFACTS = 100


def task_id_for(op_id: str) -> str:
    """A task's id derived from the operation that created it: a retry finds the same."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"coding-task/{op_id}"))


def view(row: CodingTask) -> TaskView:
    def at(value: datetime | None) -> str | None:
        return iso_ms(aware_utc(value)) if value is not None else None

    return TaskView(
        taskId=row.task_id,
        tenant=row.tenant,
        title=row.title,
        instructions=row.prompt,
        capabilities=list(row.capabilities or []),
        workspace=row.workspace,
        presetId=row.preset_id,
        model=row.model,
        provider=row.provider,
        approvalMode=row.approval_mode,
        proposedBy=row.proposed_by,
        proposingAgent=row.instance_id,
        holder=row.holder,
        state=TaskState(row.state),
        claimedAt=at(row.claimed_at),
        heartbeatAt=at(row.heartbeat_at),
        deadline=at(row.deadline),
        notes=[TaskNote.model_validate(n) for n in row.notes or []],
        outcome=row.outcome,
        summary=row.summary,
        artifacts=list(row.artifacts or []),
        sessionId=row.session_id,
        createdAt=at(row.created_at) or "",
        settledAt=at(row.settled_at),
        settledBy=row.settled_by,
        workflowId=task_workflow_id(row.tenant, row.task_id),
    )


def create(
    store: Store,
    *,
    tenant: str,
    title: str,
    instructions: str,
    proposed_by: str,
    now: datetime,
    op_id: str,
    capabilities: Collection[str] = (),
    instance_id: str | None = None,
    workspace: str | None = None,
    preset_id: str | None = None,
    model: str | None = None,
    provider: str | None = None,
    approval_mode: str | None = None,
    deadline: datetime | None = None,
) -> CodingTask:
    """A new open task, once per `op_id` (a retry returns the first one)."""
    if not title.strip() or not instructions.strip():
        raise InvalidTask(
            message="a coding task needs a title and instructions"
        ).application_error()
    if deadline is not None and deadline <= now:
        raise InvalidTask(message="the deadline is in the past").application_error()

    def write(db: Session) -> CodingTask:
        existing = db.exec(select(CodingTask).where(col(CodingTask.op_id) == op_id)).first()
        if existing is not None:
            return existing
        row = CodingTask(
            task_id=task_id_for(op_id),
            tenant=tenant,
            instance_id=instance_id,
            title=title[:500],
            prompt=instructions,
            status="created",
            op_id=op_id,
            created_at=now,
            state=TaskState.OPEN.value,
            capabilities=sorted(set(capabilities)),
            workspace=workspace,
            preset_id=preset_id,
            model=None if preset_id else model,
            provider=None if preset_id else provider,
            approval_mode=approval_mode,
            proposed_by=proposed_by,
            deadline=deadline,
            updated_at=now,
        )
        db.add(row)
        db.flush()
        return row

    return store.run_transaction(write)


def get(store: Store, tenant: str, task_id: str) -> CodingTask:
    with store.session() as db:
        row = db.get(CodingTask, task_id)
    if row is None or row.tenant != tenant:
        raise TaskNotFound(task_id=task_id).application_error()
    return row


def list_tasks(
    store: Store, tenant: str, states: Collection[TaskState] = (), limit: int = 500
) -> list[CodingTask]:
    """The tenant's latest `limit` tasks (in `states`, when given), oldest first: a list
    past the limit shows the newest tasks, never only the oldest."""
    with store.session() as db:
        statement = select(CodingTask).where(col(CodingTask.tenant) == tenant)
        if states:
            statement = statement.where(col(CodingTask.state).in_([s.value for s in states]))
        statement = statement.order_by(
            col(CodingTask.created_at).desc(), col(CodingTask.task_id).desc()
        )
        return list(reversed(db.exec(statement.limit(limit)).all()))


def _conflict(row: CodingTask, code: Any, message: str) -> ApplicationError:
    failure = TaskConflict(code=code, message=message, task_id=row.task_id, state=row.state)
    return failure.application_error()


def _cas(
    db: Session,
    task_id: str,
    states: Collection[TaskState],
    values: dict[str, Any],
    held: CodingTask | None = None,
) -> bool:
    """`values` if the task is in `states` (and, with `held`, still under the claim that
    row read: the same holder, claimed at the same time; a claim lost and retaken by
    someone else meanwhile does not match)."""
    where = [
        col(CodingTask.task_id) == task_id,
        col(CodingTask.state).in_([s.value for s in states]),
    ]
    if held is not None:
        where += [
            col(CodingTask.holder) == held.holder,
            col(CodingTask.claimed_at) == held.claimed_at,
        ]
    result = db.exec(update(CodingTask).where(*where).values(**values))
    return bool(result.rowcount == 1)


def read_current(db: Session, task_id: str) -> CodingTask:
    row = db.get(CodingTask, task_id, populate_existing=True)
    assert row is not None  # read above; tasks are never deleted
    return row


def transition(
    store: Store,
    tenant: str,
    task_id: str,
    decide: Callable[[Session, CodingTask], CodingTask],
) -> CodingTask:
    get(store, tenant, task_id)  # 404 before any write
    return store.run_transaction(lambda db: decide(db, read_current(db, task_id)))


def claim(
    store: Store,
    tenant: str,
    task_id: str,
    holder: str,
    now: datetime,
    capabilities: Collection[str] | None = None,
    assigned_by: str | None = None,
) -> CodingTask:
    """Take the task (open → claimed). `capabilities`: the claimer's, which must cover
    the task's (None: not checked, an operator assigning it). `assigned_by`: who gave the
    task to `holder` (an operator's identity, an agent), recorded as a note with the claim."""

    def decide(db: Session, row: CodingTask) -> CodingTask:
        if row.holder == holder and TaskState(row.state) in HELD:
            return row  # a retried claim: the same answer
        if capabilities is not None:
            missing = sorted(set(row.capabilities or []) - set(capabilities))
            if missing:
                raise _conflict(row, "capabilities_missing", f"the task needs {', '.join(missing)}")
        values: dict[str, Any] = {
            "state": TaskState.CLAIMED.value,
            "holder": holder,
            "claimed_at": now,
            "heartbeat_at": now,
            "updated_at": now,
        }
        if assigned_by is not None:
            entry = TaskNote(at=iso_ms(now), by=assigned_by, text=f"assigned to {holder}")
            values["notes"] = [*(row.notes or []), entry.model_dump(exclude_none=True)][-MAX_NOTES:]
        if not _cas(db, task_id, [TaskState.OPEN], values):
            current = read_current(db, task_id)
            raise _conflict(current, "task_not_open", f"the task is {current.state}")
        return read_current(db, task_id)

    return transition(store, tenant, task_id, decide)


def _held_by(row: CodingTask, holder: str) -> None:
    state = TaskState(row.state)
    if state in SETTLED:
        raise _conflict(row, "task_settled", f"the task is already {row.state}")
    if state not in HELD:
        raise _conflict(row, "task_not_held", "claim the task first")
    if row.holder != holder:
        raise _conflict(row, "not_task_holder", "another coder holds this task")


def update_progress(
    store: Store,
    tenant: str,
    task_id: str,
    holder: str,
    now: datetime,
    note: str | None = None,
    key: str | None = None,
) -> CodingTask:
    """The holder's heartbeat, and a progress note (claimed → running)."""

    def decide(db: Session, row: CodingTask) -> CodingTask:
        _held_by(row, holder)
        notes = list(row.notes or [])
        if note and not any(key is not None and n.get("key") == key for n in notes):
            entry = TaskNote(at=iso_ms(now), by=holder, text=note[:NOTE_MAX], key=key)
            notes = [*notes, entry.model_dump(exclude_none=True)][-MAX_NOTES:]
        values = {
            "state": TaskState.RUNNING.value,
            "heartbeat_at": now,
            "notes": notes,
            "updated_at": now,
        }
        if not _cas(db, task_id, HELD, values, held=row):
            _held_by(read_current(db, task_id), holder)
            raise _conflict(row, "not_task_holder", "the claim changed meanwhile")
        return read_current(db, task_id)

    return transition(store, tenant, task_id, decide)


def complete(
    store: Store,
    tenant: str,
    task_id: str,
    holder: str,
    outcome: TaskState,
    now: datetime,
    summary: str | None = None,
    artifacts: list[dict[str, Any]] | None = None,
) -> CodingTask:
    """The holder settles the task (succeeded or failed)."""
    if outcome not in (TaskState.SUCCEEDED, TaskState.FAILED):
        raise InvalidTask(message="outcome must be succeeded or failed").application_error()
    if artifacts is not None and len(artifacts) > MAX_ARTIFACTS:
        raise InvalidTask(message=f"at most {MAX_ARTIFACTS} artifacts").application_error()

    def decide(db: Session, row: CodingTask) -> CodingTask:
        if row.state == outcome.value and row.settled_by == holder:
            return row  # a retried completion: the same answer
        _held_by(row, holder)
        values = _settled(outcome, holder, now, summary, artifacts)
        if not _cas(db, task_id, HELD, values, held=row):
            _held_by(read_current(db, task_id), holder)
            raise _conflict(row, "not_task_holder", "the claim changed meanwhile")
        settled = read_current(db, task_id)
        settlement.announce_in(db, settled)
        return settled

    return transition(store, tenant, task_id, decide)


def cancel(store: Store, tenant: str, task_id: str, by: str, now: datetime) -> CodingTask:
    """An operator cancels a task that is not settled; cancelling it again is a no-op."""

    def decide(db: Session, row: CodingTask) -> CodingTask:
        if row.state == TaskState.CANCELLED.value:
            return row
        if TaskState(row.state) in SETTLED:
            raise _conflict(row, "task_settled", f"the task is already {row.state}")
        values = _settled(TaskState.CANCELLED, by, now, None, None)
        if not _cas(db, task_id, [TaskState.OPEN, *HELD], values):
            current = read_current(db, task_id)
            if current.state == TaskState.CANCELLED.value:
                return current
            raise _conflict(current, "task_settled", f"the task is already {current.state}")
        settled = read_current(db, task_id)
        settlement.announce_in(db, settled)
        return settled

    return transition(store, tenant, task_id, decide)


def expire(
    store: Store, tenant: str, task_id: str, claim_timeout: timedelta, now: datetime
) -> tuple[CodingTask, str | None]:
    """The workflow's timers: past its deadline the task settles `expired`; a holder
    silent past `claim_timeout` loses it (the task is open again). Returns the task and
    the holder that lost it, if one did."""
    lost: str | None = None

    def decide(db: Session, row: CodingTask) -> CodingTask:
        nonlocal lost
        # Read before the compare-and-swap: the session's copy is synchronized by it.
        state, holder, beat_at = TaskState(row.state), row.holder, row.heartbeat_at
        if state in SETTLED:
            return row
        deadline = aware_utc(row.deadline) if row.deadline is not None else None
        if deadline is not None and deadline <= now:
            values = _settled(TaskState.EXPIRED, "deadline", now, None, None)
            if _cas(db, task_id, [TaskState.OPEN, *HELD], values):
                settled = read_current(db, task_id)
                settlement.announce_in(db, settled)
                lost = holder
                return settled
            return read_current(db, task_id)
        beat = beat_at or row.claimed_at
        own = holder == OWN_CODER
        if (
            state in HELD
            and not own
            and beat is not None
            and aware_utc(beat) + claim_timeout <= now
        ):
            values = {
                "state": TaskState.OPEN.value,
                "holder": None,
                "claimed_at": None,
                "heartbeat_at": None,
                "updated_at": now,
            }
            moved = db.exec(
                update(CodingTask)
                .where(
                    col(CodingTask.task_id) == task_id,
                    col(CodingTask.state) == state.value,
                    col(CodingTask.heartbeat_at) == beat_at,
                )
                .values(**values)
            )
            if moved.rowcount == 1:
                lost = holder
        return read_current(db, task_id)

    row = transition(store, tenant, task_id, decide)
    return row, lost


def timers(store: Store, tenant: str, task_id: str, claim_timeout: timedelta) -> TaskTimers:
    with store.session() as db:
        row = db.get(CodingTask, task_id)
    if row is None or row.tenant != tenant:
        return TaskTimers(exists=False)
    state = TaskState(row.state)
    beat = row.heartbeat_at or row.claimed_at
    # agentrt's own coder does not heartbeat: its session is durable, and reports its end.
    silent = state in HELD and beat is not None and row.holder != OWN_CODER
    expires = aware_utc(beat) + claim_timeout if silent and beat is not None else None
    return TaskTimers(
        state=state,
        holder=row.holder,
        deadline=aware_utc(row.deadline) if row.deadline is not None else None,
        claim_expires_at=expires,
        session_id=row.session_id if row.holder == OWN_CODER else None,
    )


def _settled(
    state: TaskState,
    by: str,
    now: datetime,
    summary: str | None,
    artifacts: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    values: dict[str, Any] = {
        "state": state.value,
        "outcome": state.value,
        "settled_at": now,
        "settled_by": by,
        "updated_at": now,
    }
    if summary is not None:
        values["summary"] = summary[:SUMMARY_MAX]
    if artifacts is not None:
        values["artifacts"] = artifacts
    return values


def proposing_agent(store: Store, task_id: str) -> tuple[str, str] | None:
    """(tenant, instance id) of the agent to wake after a settlement, if any."""
    with store.session() as db:
        row = db.get(CodingTask, task_id)
    if row is None or row.instance_id is None:
        return None
    return row.tenant, row.instance_id
