"""The event queue of standing agents (`agent_event_queue`), the one place events enter.

The control side (the API) enqueues every event; the workflow consumes them. An
event's `event_id` is its dedupe id: enqueueing the same id again (a retried HTTP
call, a decision answered twice, a crash between the insert and the wake-up
signal) returns the row already there and adds nothing. `sequence_number` is
allocated per instance, contiguous, from 1. `visible_at` is the due gate: the
workflow takes the oldest unconsumed event with `visible_at <= now`, and marks it
consumed (never deleted) when its turn is recorded.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from runtime.standing_agents.contracts import AgentEvent, EventKind
from runtime.standing_agents.models import AgentEventRow
from runtime.store.engine import Store
from runtime.timestamps import aware_utc


def to_event(row: AgentEventRow) -> AgentEvent:
    return AgentEvent(
        event_id=row.event_id,
        sequence_number=row.sequence_number,
        kind=EventKind(row.event_kind),
        payload=row.payload,
        visible_at=aware_utc(row.visible_at),
    )


def enqueue(
    store: Store,
    *,
    tenant: str,
    instance_id: str,
    kind: EventKind,
    payload: dict[str, Any],
    event_id: str,
    visible_at: datetime | None = None,
    generation: int = 0,
) -> tuple[AgentEvent, bool]:
    """Record an event in its own transaction; returns it and whether it is new (False:
    the id was known)."""
    return store.run_transaction(
        lambda db: enqueue_in(
            db,
            tenant=tenant,
            instance_id=instance_id,
            kind=kind,
            payload=payload,
            event_id=event_id,
            visible_at=visible_at,
            generation=generation,
        )
    )


def enqueue_in(
    db: Session,
    *,
    tenant: str,
    instance_id: str,
    kind: EventKind,
    payload: dict[str, Any],
    event_id: str,
    visible_at: datetime | None = None,
    generation: int = 0,
) -> tuple[AgentEvent, bool]:
    """Record an event inside the caller's open transaction (the caller commits), so the
    event and the write it belongs to (a message, a resolved decision) commit together.

    A concurrent writer that took the same sequence number or `event_id` surfaces as an
    IntegrityError (at flush or commit): the caller retries its whole transaction
    (`Store.run_transaction`), and the retry finds the event or the next number. The instance
    row is not locked here: the tick's completion inserts its heartbeat before it
    updates that row, and the opposite order here would deadlock against it. For the
    same reason a caller writes its events before it updates the instance row.
    """
    existing = db.exec(select(AgentEventRow).where(col(AgentEventRow.event_id) == event_id)).first()
    if existing is not None:
        return to_event(existing), False
    last = db.exec(
        select(func.max(AgentEventRow.sequence_number)).where(
            col(AgentEventRow.instance_id) == instance_id
        )
    ).one()
    now = datetime.now(UTC)
    row = AgentEventRow(
        event_id=event_id,
        instance_id=instance_id,
        tenant=tenant,
        sequence_number=(last or 0) + 1,
        event_kind=kind.value,
        payload=payload,
        visible_at=visible_at or now,
        generation=generation,
        created_at=now,
    )
    db.add(row)
    db.flush()
    return to_event(row), True


def next_due(
    store: Store, instance_id: str, now: datetime, *, generation: int | None = None
) -> tuple[AgentEvent | None, datetime | None]:
    """The oldest unconsumed due event, and the `visible_at` of the earliest one not yet due.

    Events of an older generation (before a reset) are never due.
    """
    with store.session() as db:
        base = select(AgentEventRow).where(
            col(AgentEventRow.instance_id) == instance_id,
            col(AgentEventRow.consumed_at).is_(None),
        )
        if generation is not None:
            base = base.where(col(AgentEventRow.generation) == generation)
        due = db.exec(
            base.where(col(AgentEventRow.visible_at) <= now)
            .order_by(col(AgentEventRow.visible_at), col(AgentEventRow.sequence_number))
            .limit(1)
        ).first()
        upcoming = db.exec(
            base.where(col(AgentEventRow.visible_at) > now)
            .order_by(col(AgentEventRow.visible_at))
            .limit(1)
        ).first()
        return (
            to_event(due) if due is not None else None,
            aware_utc(upcoming.visible_at) if upcoming is not None else None,
        )


def drain(store: Store, instance_id: str, now: datetime) -> int:
    """Consume every pending event of an instance (reset, close); returns how many."""
    with store.transaction() as db:
        return drain_in(db, instance_id, now)


def drain_in(db: Session, instance_id: str, now: datetime) -> int:
    """`drain` inside the caller's transaction (the caller commits)."""
    rows = db.exec(
        select(AgentEventRow).where(
            col(AgentEventRow.instance_id) == instance_id,
            col(AgentEventRow.consumed_at).is_(None),
        )
    ).all()
    for row in rows:
        row.consumed_at = now
        db.add(row)
    return len(rows)
