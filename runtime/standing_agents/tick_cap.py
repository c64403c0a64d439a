"""The tenant's tick cap (spec §3.2 MaxConcurrentInstancesPerTenant): how many of a
tenant's agents hold a live tick lease, and the refresh that keeps a working tick's lease
live. `ticks.begin_tick` counts and leases under one lock per tenant."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, update
from sqlmodel import Session, col, select

from runtime.settings import Settings
from runtime.standing_agents.models import AgentInstance
from runtime.standing_agents.workflow_contracts import BeginTickInput
from runtime.store.engine import Store


def ticking_elsewhere(db: Session, settings: Settings, request: BeginTickInput) -> int:
    """How many other agents of the tenant hold a live tick lease: one refreshed (by a
    model call of its tick) within the stale time; an older one belongs to a workflow that
    died mid-tick, or to a tick paused on a human (a device-flow login): it does not count."""
    stale = request.now - timedelta(milliseconds=settings.agent_tick_lease_stale_ms)
    count = db.exec(
        select(func.count()).where(
            col(AgentInstance.tenant) == request.tenant,
            col(AgentInstance.instance_id) != request.instance_id,
            # Whatever its status: an agent stopped mid-tick still runs its episode.
            col(AgentInstance.tick_in_progress).is_(True),
            col(AgentInstance.tick_started_at) > stale,
        )
    ).one()
    return int(count)


def refresh_tick_lease(store: Store, instance_id: str, generation: int, now: datetime) -> None:
    """A tick at work (each of its model calls) keeps its lease fresh: only a tick that
    stopped working (its workflow died) outlives the stale time and stops counting."""
    with store.transaction() as db:
        db.execute(
            update(AgentInstance)
            .where(
                col(AgentInstance.instance_id) == instance_id,
                col(AgentInstance.generation) == generation,
                col(AgentInstance.tick_in_progress).is_(True),
            )
            .values(tick_started_at=now)
        )
