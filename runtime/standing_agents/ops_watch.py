"""An ops incident wakes the SOA (spec §3.4.2, §4.5; issue 21, item 3).

The ops digest's bucket (healthy / degraded / failing, ops_digest.py) used to be read
only at an agent's next tick, up to a day later. The API's sweeper now watches it for
every tenant with standing agents on (`observe`, every OPS_WATCH_INTERVAL): when it
changes, in one transaction under a per-tenant lock, the transition is numbered and one
`AgentTick` is queued, visible now, for each Active SOA of the tenant, its id derived
from the transition (`ops/{instanceId}/{n}`): a second observer, a retried pass or an
API restart finds the transition recorded and queues nothing twice. The event carries
`opsBucket` {from, to, transition}, so the tick's plan hash changes and the SOA plans on
it within seconds. The first observation of a tenant records its bucket and wakes no
one (there is no transition to report). The counts the API reads from Temporal's
visibility (failed and timed-out workflows) are stored here for the digest to show.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from runtime.standing_agents import queue
from runtime.standing_agents.contracts import AgentStatus, AgentType, EventKind
from runtime.standing_agents.models import AgentEventRow, AgentInstance, OpsBucketState
from runtime.standing_agents.ops_digest import probe_in
from runtime.store.atomic import serialize
from runtime.store.engine import Store
from runtime.timestamps import aware_utc

# A bucket must hold this long before a change of it is a transition.
MIN_DWELL = timedelta(seconds=60)


def record_visibility(
    store: Store, tenant: str, now: datetime, *, failed: int, timed_out: int
) -> None:
    """What Temporal's visibility counts for the tenant's last 24 hours (written only when
    the counts changed)."""
    with store.session() as db:
        known = db.get(OpsBucketState, tenant)
        if known is not None and (known.failed_workflows, known.timed_out_workflows) == (
            failed,
            timed_out,
        ):
            return
    with store.transaction() as db:
        serialize(db, f"ops/{tenant}")
        state = db.get(OpsBucketState, tenant)
        if state is None:
            state = OpsBucketState(tenant=tenant, bucket="", transition=0, changed_at=now)
        state.failed_workflows = failed
        state.timed_out_workflows = timed_out
        state.visibility_checked_at = now
        db.add(state)


def observe(store: Store, tenant: str, now: datetime) -> list[AgentInstance]:
    """Probe the tenant's bucket; on a transition, queue the wake-ups of its Active SOAs
    and return them (the caller wakes their workflows)."""

    def write(db: Session) -> list[AgentInstance]:
        serialize(db, f"ops/{tenant}")
        # The state read first takes the lock on SQLite too (its first statement), then the
        # probe: of two observers, the later one sees the later health (an older probe
        # committed last would make a transition that never was).
        state = db.get(OpsBucketState, tenant, populate_existing=True)
        digest: dict[str, Any] = probe_in(db, tenant, now)
        current = str(digest["bucket"])
        if state is None or not state.bucket:
            state = state or OpsBucketState(tenant=tenant, bucket="", changed_at=now)
            state.bucket = current  # the first observation: nothing to report
            state.changed_at = now
            db.add(state)
            return []
        if state.bucket == current:
            return []
        if now - aware_utc(state.changed_at) < MIN_DWELL:
            return []  # damped: a bucket flapping at the edge wakes the SOA once a minute
        previous = state.bucket
        state.transition += 1
        state.bucket = current
        state.changed_at = now
        transition = state.transition
        soas = list(
            db.exec(
                select(AgentInstance).where(
                    col(AgentInstance.tenant) == tenant,
                    col(AgentInstance.agent_type) == AgentType.SOA.value,
                    col(AgentInstance.status) == AgentStatus.ACTIVE.value,
                )
            ).all()
        )
        for soa in soas:
            # The latest transition supersedes an earlier one still queued: one due tick.
            for stale in db.exec(
                select(AgentEventRow).where(
                    col(AgentEventRow.instance_id) == soa.instance_id,
                    col(AgentEventRow.consumed_at).is_(None),
                    col(AgentEventRow.event_id).startswith(f"ops/{soa.instance_id}/"),
                )
            ).all():
                stale.consumed_at = now
                db.add(stale)
            queue.enqueue_in(
                db,
                tenant=tenant,
                instance_id=soa.instance_id,
                kind=EventKind.AGENT_TICK,
                payload={"opsBucket": {"from": previous, "to": current, "transition": transition}},
                event_id=f"ops/{soa.instance_id}/{transition}",
                visible_at=now,
                generation=soa.generation,
            )
        db.add(state)
        return soas

    # Retried whole on a race for a sequence number (Store.run_transaction).
    return store.run_transaction(write)
