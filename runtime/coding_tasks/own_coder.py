"""agentrt's own coder's slots: at most N coders run per tenant (the store side)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, update
from sqlmodel import Session, col, select

from runtime.coding_tasks.contracts import HELD, OWN_CODER, TaskState
from runtime.coding_tasks.models import CodingTask
from runtime.coding_tasks.store import read_current, transition
from runtime.store import Store
from runtime.store.atomic import serialize


def reserve_coder(
    store: Store, tenant: str, task_id: str, session_id: str, limit: int
) -> CodingTask | None:
    """Give agentrt's coder of `task_id` its session, if the tenant runs fewer than
    `limit` coders: the task's row, or None (the task waits, or is no longer the coder's).
    Under one lock per tenant, so N concurrent spawns never run more than `limit` coders;
    the write is a compare-and-swap (held by agentrt's coder, no session yet), so a task
    cancelled or expired meanwhile is never brought back. Idempotent: a task whose coder
    has its session already answers at once."""
    with store.transaction() as db:
        serialize(db, f"coders/{tenant}")
        row = db.get(CodingTask, task_id)
        if row is None or row.tenant != tenant:
            return None
        if row.session_id is not None:
            return row if row.holder == OWN_CODER and TaskState(row.state) in HELD else None
        running = db.exec(
            select(func.count()).where(
                col(CodingTask.tenant) == tenant,
                col(CodingTask.holder) == OWN_CODER,
                col(CodingTask.state).in_([s.value for s in HELD]),
                col(CodingTask.session_id).is_not(None),
            )
        ).one()
        if int(running) >= limit:
            return None
        taken = db.exec(
            update(CodingTask)
            .where(
                col(CodingTask.task_id) == task_id,
                col(CodingTask.holder) == OWN_CODER,
                col(CodingTask.state).in_([s.value for s in HELD]),
                col(CodingTask.session_id).is_(None),
            )
            .values(
                session_id=session_id,
                state=TaskState.RUNNING.value,
                updated_at=datetime.now(UTC),
            )
        )
        if taken.rowcount != 1:
            return None
        return db.get(CodingTask, task_id, populate_existing=True)


def unclaim_unstarted(store: Store, tenant: str, task_id: str, now: datetime) -> CodingTask:
    """Give back a task claimed for agentrt's coder whose workflow was never told to start
    it (Temporal was down): open again, so the route leaves nothing behind (a task held
    by a coder that never runs). Once its session exists, the claim stays."""

    def decide(db: Session, row: CodingTask) -> CodingTask:
        if row.holder != OWN_CODER or row.session_id is not None:
            return row
        values = {
            "state": TaskState.OPEN.value,
            "holder": None,
            "claimed_at": None,
            "heartbeat_at": None,
            "updated_at": now,
        }
        db.exec(
            update(CodingTask)
            .where(
                col(CodingTask.task_id) == task_id,
                col(CodingTask.holder) == OWN_CODER,
                col(CodingTask.state).in_([s.value for s in HELD]),
                col(CodingTask.session_id).is_(None),
            )
            .values(**values)
        )
        return read_current(db, task_id)

    return transition(store, tenant, task_id, decide)
