"""An agent's heartbeat (`AgentTick` events `tick/{instanceId}/{generation}/{seq}`): its
id, its delay (runtime/standing_agents/cadence.py), and the one future heartbeat a tick's
completion leaves queued (runtime/standing_agents/ticks.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func
from sqlmodel import Session, col, select

from runtime.settings import Settings
from runtime.standing_agents.cadence import next_heartbeat_delay_ms
from runtime.standing_agents.contracts import EventKind
from runtime.standing_agents.models import AgentEventRow, AgentInstance, AgentLedgerTurn

HEARTBEAT_PREFIX = "tick/"


def heartbeat_event_id(instance_id: str, generation: int, seq: int, retry: int = 0) -> str:
    """Deterministic: one heartbeat per (generation, last ledger seq)."""
    base = f"{HEARTBEAT_PREFIX}{instance_id}/{generation}/{seq}"
    return base if retry == 0 else f"{base}/{retry}"


def heartbeat_delay(settings: Settings, prior_idle_ticks: int) -> timedelta:
    return timedelta(
        milliseconds=next_heartbeat_delay_ms(
            idle_heartbeat_enabled=settings.agent_idle_heartbeat_enabled,
            heartbeat_ms=settings.agent_heartbeat_ms,
            backoff_base_ms=settings.agent_backoff_base_ms,
            backoff_factor=settings.agent_backoff_factor,
            max_backoff_ms=settings.agent_max_backoff_ms,
            prior_idle_ticks=prior_idle_ticks,
        )
    )


def ensure_heartbeat(
    db: Session, settings: Settings, instance: AgentInstance, now: datetime
) -> None:
    pending = db.exec(
        select(AgentEventRow.id).where(
            col(AgentEventRow.instance_id) == instance.instance_id,
            col(AgentEventRow.event_kind) == EventKind.AGENT_TICK.value,
            col(AgentEventRow.consumed_at).is_(None),
            col(AgentEventRow.generation) == instance.generation,
        )
    ).first()
    if pending is not None:
        return
    visible_at = now + heartbeat_delay(settings, instance.consecutive_idle_ticks)
    add_heartbeat(db, instance, last_seq(db, instance.instance_id), visible_at, now)


def add_heartbeat(
    db: Session, instance: AgentInstance, seq: int, visible_at: datetime, now: datetime
) -> None:
    retry = 0
    while True:
        event_id = heartbeat_event_id(instance.instance_id, instance.generation, seq, retry)
        taken = db.exec(
            select(AgentEventRow.id).where(col(AgentEventRow.event_id) == event_id)
        ).first()
        if taken is None:
            break
        retry += 1
    last = db.exec(
        select(func.max(AgentEventRow.sequence_number)).where(
            col(AgentEventRow.instance_id) == instance.instance_id
        )
    ).one()
    db.add(
        AgentEventRow(
            event_id=event_id,
            instance_id=instance.instance_id,
            tenant=instance.tenant,
            sequence_number=(last or 0) + 1,
            event_kind=EventKind.AGENT_TICK.value,
            payload={},
            visible_at=visible_at,
            generation=instance.generation,
            created_at=now,
        )
    )
    instance.next_tick_at = visible_at


def last_seq(db: Session, instance_id: str) -> int:
    last = db.exec(
        select(func.max(AgentLedgerTurn.seq)).where(col(AgentLedgerTurn.instance_id) == instance_id)
    ).one()
    return int(last or 0)


def consume_heartbeats(
    db: Session, instance_id: str, now: datetime, *, ops_too: bool = False
) -> None:
    """Exactly one future heartbeat: the one this write adds replaces any left over. An
    ops incident's tick (`ops/...`, ops_watch.py) is not a heartbeat: it stays, due,
    unless `ops_too` (the agent is closing)."""
    query = select(AgentEventRow).where(
        col(AgentEventRow.instance_id) == instance_id,
        col(AgentEventRow.event_kind) == EventKind.AGENT_TICK.value,
        col(AgentEventRow.consumed_at).is_(None),
    )
    if not ops_too:
        query = query.where(
            col(AgentEventRow.event_id).startswith(HEARTBEAT_PREFIX, autoescape=True)
        )
    rows = db.exec(query).all()
    for row in rows:
        row.consumed_at = now
        db.add(row)
