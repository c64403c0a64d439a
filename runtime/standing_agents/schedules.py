"""Cron schedules that trigger a standing agent (issue 21, item 11, its schedule half).

A schedule is a cron expression in a time zone, kept as a row of `agent_schedules` and
run as a Temporal Schedule `agent-schedule/{tenant}/{scheduleId}`, so it fires while
agentrt's API and worker are down and catches up when they are back. Each firing starts
`AgentScheduleWorkflow` (workflows/standing_agents/schedule.py), which enqueues one `AgentTick`
whose payload names the schedule and the scheduled time (event id
`schedule/{scheduleId}/{scheduledTime}/{firingId}`: a retried or replayed firing
enqueues once),
wakes the agent, and runs until that tick has completed. The Temporal Schedule's
policies are explicit:
- overlap `skip` (the default): a firing while the previous one's tick is still queued or
  running is skipped; `bufferOne`: one such firing waits and runs after it, any further
  one is skipped (Temporal's SKIP and BUFFER_ONE);
- catch-up: a firing missed while Temporal itself was down is still run if Temporal is
  back within `catchupWindowSeconds` (default one hour), and dropped otherwise.
An agent that is paused or stopped keeps at most one pending firing per schedule: a
firing finds the previous one's tick still queued and adds nothing (`coalesced`).

The row is the source of truth: the API's sweeper recreates a Temporal Schedule that is
missing (a Temporal database wiped, a crash between the row and the create) and
finishes a deletion (`deleted_at` set: the Temporal Schedule first, then the row).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel
from sqlmodel import Session, col, delete, select

from runtime.activity_contract import ActivityContract
from runtime.failures import WireError
from runtime.standing_agents import queue
from runtime.standing_agents.contracts import AgentStatus, EventKind
from runtime.standing_agents.models import AgentEventRow, AgentInstance, AgentSchedule
from runtime.store.engine import Store
from runtime.timestamps import iso_ms

ID_PREFIX: Final = "sch_"
EVENT_PREFIX: Final = "schedule/"
MAX_PER_AGENT: Final = 20
DEFAULT_CATCHUP_WINDOW: Final = 3600
# Temporal's own floor for a catch-up window, and a week.
MIN_CATCHUP_WINDOW: Final = 10
MAX_CATCHUP_WINDOW: Final = 7 * 24 * 3600
WORKFLOW_NAME: Final = "AgentScheduleWorkflow"
# How long a firing holds its overlap slot waiting for its tick, at most: after that the
# firing ends and a later one coalesces onto the still-queued tick.
MAX_WAIT: Final = timedelta(hours=1)


class Overlap(StrEnum):
    SKIP = "skip"
    BUFFER_ONE = "bufferOne"


class AgentScheduleActivity(StrEnum):
    FIRE = "agent_schedule.fire"
    PENDING = "agent_schedule.pending"


class ScheduleFireInput(BaseModel):
    """The Temporal Schedule's argument to each `AgentScheduleWorkflow` it starts."""

    tenant: str
    schedule_id: str


class FireRequest(BaseModel):
    schedule_id: str
    scheduled_time: datetime
    # The firing workflow's run id: two firings of one second (manual triggers) differ.
    firing_id: str


class FireOutcome(StrEnum):
    ENQUEUED = "enqueued"
    DUPLICATE = "duplicate"  # this firing's event was already queued (a retry, a replay)
    COALESCED = "coalesced"  # an earlier firing's tick is still queued
    DELETED = "deleted"  # the schedule is gone or being deleted
    CLOSED = "closed"  # the agent is gone or closed


class FireResult(BaseModel):
    outcome: FireOutcome
    tenant: str = ""
    instance_id: str = ""
    event_id: str | None = None


class PendingRequest(BaseModel):
    schedule_id: str
    event_id: str


TEMPORAL_PREFIX: Final = "agent-schedule/"


def temporal_schedule_id(tenant: str, schedule_id: str) -> str:
    return f"{TEMPORAL_PREFIX}{tenant}/{schedule_id}"


def fire_workflow_id(tenant: str, schedule_id: str) -> str:
    """The id of each firing's workflow (Temporal appends the scheduled time)."""
    return f"agent-schedule-fire/{tenant}/{schedule_id}"


def event_id(request: FireRequest) -> str:
    """`schedule/{scheduleId}/{scheduledTime}/{firingId}`: one per firing, the same for
    each retry of its activity and each replay of its workflow."""
    when = iso_ms(request.scheduled_time)
    return f"{EVENT_PREFIX}{request.schedule_id}/{when}/{request.firing_id}"


# -- refusals -----------------------------------------------------------------------------


class InvalidSchedule(WireError):
    """A cron expression or time zone Temporal does not take: 400 `invalid_schedule`."""

    kind: Literal["invalid_schedule"] = "invalid_schedule"
    reason: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": f"The schedule is not valid: {self.reason}", "code": "invalid_schedule"}


class TooManySchedulesRefusal(WireError):
    kind: Literal["too_many_schedules"] = "too_many_schedules"

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"An agent has at most {MAX_PER_AGENT} schedules",
            "code": "too_many_schedules",
            "limit": MAX_PER_AGENT,
        }


class ScheduleNotFound(WireError):
    kind: Literal["schedule_not_found"] = "schedule_not_found"
    schedule_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {"error": f'No schedule "{self.schedule_id}"', "code": "schedule_not_found"}


# -- rows ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewSchedule:
    cron: str
    time_zone: str
    overlap: Overlap
    catchup_window_s: int
    note: str | None


def create_row(
    store: Store, instance: AgentInstance, spec: NewSchedule, now: datetime
) -> AgentSchedule:
    """The row of a new schedule of `instance` (its Temporal Schedule is created next).

    Raises:
        ApplicationError(TooManySchedulesRefusal): the agent has MAX_PER_AGENT already.
    """
    row = AgentSchedule(
        schedule_id=ID_PREFIX + secrets.token_hex(12),
        tenant=instance.tenant,
        instance_id=instance.instance_id,
        cron=spec.cron,
        time_zone=spec.time_zone,
        overlap=spec.overlap.value,
        catchup_window_s=spec.catchup_window_s,
        note=spec.note,
        created_at=now,
    )
    with store.transaction() as db:
        if len(_of(db, instance.tenant, instance.instance_id)) >= MAX_PER_AGENT:
            raise TooManySchedulesRefusal().application_error()
        db.add(row)
        db.flush()
        db.refresh(row)
    return row


def _of(db: Session, tenant: str, instance_id: str | None) -> list[AgentSchedule]:
    query = select(AgentSchedule).where(
        col(AgentSchedule.tenant) == tenant, col(AgentSchedule.deleted_at).is_(None)
    )
    if instance_id is not None:
        query = query.where(col(AgentSchedule.instance_id) == instance_id)
    order = (col(AgentSchedule.created_at), col(AgentSchedule.schedule_id))
    return list(db.exec(query.order_by(*order)).all())


def list_for(store: Store, tenant: str, instance_id: str | None = None) -> list[AgentSchedule]:
    """The live schedules of one agent, or of the whole tenant."""
    with store.session() as db:
        return _of(db, tenant, instance_id)


def get(store: Store, tenant: str, instance_id: str, schedule_id: str) -> AgentSchedule:
    """Raises ApplicationError(ScheduleNotFound)."""
    with store.session() as db:
        row = db.get(AgentSchedule, schedule_id)
    if row is None or (row.tenant, row.instance_id) != (tenant, instance_id) or row.deleted_at:
        raise ScheduleNotFound(schedule_id=schedule_id).application_error()
    return row


def live_row(store: Store, schedule_id: str) -> AgentSchedule | None:
    with store.session() as db:
        row = db.get(AgentSchedule, schedule_id)
    return row if row is not None and row.deleted_at is None else None


def mark_deleted(store: Store, schedule_id: str, now: datetime) -> None:
    """The first step of a deletion: no firing enqueues anything from now on."""
    with store.transaction() as db:
        row = db.get(AgentSchedule, schedule_id)
        if row is not None and row.deleted_at is None:
            row.deleted_at = now
            db.add(row)


def remove_row(store: Store, schedule_id: str) -> None:
    """The last step of a deletion (or of a create Temporal refused)."""
    with store.transaction() as db:
        db.exec(delete(AgentSchedule).where(col(AgentSchedule.schedule_id) == schedule_id))


def all_rows(store: Store) -> list[AgentSchedule]:
    """Every row, live and being deleted: what the sweeper reconciles with Temporal."""
    with store.session() as db:
        return list(db.exec(select(AgentSchedule).order_by(col(AgentSchedule.created_at))).all())


# -- firing -------------------------------------------------------------------------------


def fire(store: Store, request: FireRequest, now: datetime) -> FireResult:
    """Enqueue the `AgentTick` of one firing, once (its event id is the firing's)."""

    def write(db: Session) -> FireResult:
        # Locked (PostgreSQL): a deletion marked after this read waits for this write, so
        # nothing is enqueued once DELETE has answered.
        row = db.exec(
            select(AgentSchedule)
            .where(col(AgentSchedule.schedule_id) == request.schedule_id)
            .with_for_update()
        ).first()
        if row is None or row.deleted_at is not None:
            return FireResult(outcome=FireOutcome.DELETED)
        instance = db.get(AgentInstance, row.instance_id)
        if instance is None or instance.status == AgentStatus.CLOSED.value:
            return FireResult(outcome=FireOutcome.CLOSED, tenant=row.tenant)
        mine = event_id(request)
        earlier = db.exec(
            select(AgentEventRow.event_id).where(
                col(AgentEventRow.instance_id) == row.instance_id,
                col(AgentEventRow.consumed_at).is_(None),
                col(AgentEventRow.event_id).startswith(
                    f"{EVENT_PREFIX}{row.schedule_id}/", autoescape=True
                ),
                col(AgentEventRow.event_id) != mine,
                # A tick of an earlier generation (a reset raced this firing) is never
                # due: it holds nothing.
                col(AgentEventRow.generation) == instance.generation,
            )
        ).first()
        ids = {"tenant": row.tenant, "instance_id": row.instance_id}
        if earlier is not None:
            return FireResult(outcome=FireOutcome.COALESCED, event_id=earlier, **ids)
        payload: dict[str, Any] = {
            "schedule": {
                "scheduleId": row.schedule_id,
                "scheduledTime": iso_ms(request.scheduled_time),
                "cron": row.cron,
                "timeZone": row.time_zone,
                **({"note": row.note} if row.note else {}),
            }
        }
        event, created = queue.enqueue_in(
            db,
            tenant=row.tenant,
            instance_id=row.instance_id,
            kind=EventKind.AGENT_TICK,
            payload=payload,
            event_id=mine,
            visible_at=now,
            generation=instance.generation,
        )
        if created:
            row.firings += 1
            row.last_fired_at = now
            row.last_event_id = event.event_id
            db.add(row)
        outcome = FireOutcome.ENQUEUED if created else FireOutcome.DUPLICATE
        return FireResult(outcome=outcome, event_id=event.event_id, **ids)

    return store.run_transaction(write)


def pending(store: Store, request: PendingRequest) -> bool:
    """Whether a firing still holds its overlap slot: its tick is queued or running on an
    Active agent, and the schedule lives. A paused or stopped agent's tick stays queued,
    but the slot is given up (later firings coalesce onto it)."""
    with store.session() as db:
        row = db.get(AgentSchedule, request.schedule_id)
        if row is None or row.deleted_at is not None:
            return False
        instance = db.get(AgentInstance, row.instance_id)
        if instance is None or instance.status != AgentStatus.ACTIVE.value:
            return False
        event = db.exec(
            select(AgentEventRow).where(col(AgentEventRow.event_id) == request.event_id)
        ).first()
    return (
        event is not None and event.consumed_at is None and event.generation == instance.generation
    )


class AgentScheduleActivityContracts:
    """Each AgentScheduleActivity with the types of its argument and result."""

    FIRE: Final = ActivityContract(AgentScheduleActivity.FIRE, FireRequest, FireResult)
    PENDING: Final = ActivityContract(AgentScheduleActivity.PENDING, PendingRequest, bool)
