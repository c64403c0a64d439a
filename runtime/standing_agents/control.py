"""The control side of standing agents: what the API writes in the store (no HTTP here:
a refusal is a typed `WireError`, raised as `application_error()`, that api/errors.py
answers).

Every function commits its store write before it returns; the caller (api/) then
sends the workflow the `wake` signal. The store is the source of truth for status,
mode, generation and the event queue, so a lost signal only delays an event (the
API's sweeper wakes the agent again), never loses it. Events carry dedupe ids
(`runtime.standing_agents.queue`), so a retried call never doubles one.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import update
from sqlmodel import Session, col, delete, select
from temporalio.exceptions import ApplicationError

from runtime.failures import WireError, refusal_of
from runtime.settings import Settings
from runtime.standing_agents import approvals, budget_pause, configs, queue
from runtime.standing_agents.agent_journal import (
    STATUS,
    append_agent_event_once,
)
from runtime.standing_agents.catalog import default_mode
from runtime.standing_agents.contracts import (
    STANDING_AGENTS_FEATURE,
    AgentStatus,
    AgentType,
    EventKind,
)
from runtime.standing_agents.errors import AgentNotFound
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentInstance,
)
from runtime.standing_agents.tick_budget import (
    FOUNDATIONAL_WINDOW,
    foundational_active,
    foundational_deadline,
)
from runtime.store.engine import Store
from runtime.store.journal import EventJournal
from runtime.store.tenants import feature_enabled, set_feature
from runtime.timestamps import iso_ms

log = logging.getLogger(__name__)
# The foundational phase's length when neither system_configs nor Settings say (24 h).
FOUNDATIONAL_WINDOW_MS = int(FOUNDATIONAL_WINDOW.total_seconds() * 1000)


class SoaAlreadyExists(WireError):
    """A second SOA asked of a tenant, which has one (§2.1: the singleton orchestrator): 409."""

    kind: Literal["soa_already_exists"] = "soa_already_exists"
    instance_id: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "This tenant already has its SOA (one per tenant)",
            "code": "soa_already_exists",
            "instanceId": self.instance_id,
        }


class TickInProgress(WireError):
    """A reset while the workflow holds the tick lease: 409, reset once the tick ends."""

    kind: Literal["tick_in_progress"] = "tick_in_progress"

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {"error": "A tick is running; reset once it ends", "code": "tick_in_progress"}


class _CasLost(Exception):
    """A transition's compare-and-swap found the agent changed meanwhile: raised inside
    its write so that the unit of work rolls back what it wrote before the swap."""


@dataclass(frozen=True)
class Transition:
    """What a start/stop did: the instance after it, and whether it changed anything."""

    instance: AgentInstance
    changed: bool


def now_utc() -> datetime:
    return datetime.now(UTC)


def iso(value: datetime | None) -> str | None:
    """The wire format of every agent timestamp (the ledger chain's: ms, `Z`)."""
    return iso_ms(value) if value is not None else None


def soa_instance_id(tenant: str) -> str:
    """The SOA's id is derived from its tenant, so the primary key makes it a singleton
    even when two requests create it at the same moment."""
    return "soa-" + hashlib.sha256(tenant.encode("utf-8")).hexdigest()[:20]


def is_foundational(instance: AgentInstance, now: datetime) -> bool:
    return foundational_active(
        instance.is_building_starting_workset, instance.workset_deadline_utc, now
    )


# -- instances ------------------------------------------------------------------------------


def find_instance(store: Store, tenant: str, instance_id: str) -> AgentInstance | None:
    """The tenant's agent; None when absent or of another tenant."""
    with store.session() as db:
        row = db.get(AgentInstance, instance_id)
    return row if row is not None and row.tenant == tenant else None


def get_instance(store: Store, tenant: str, instance_id: str) -> AgentInstance:
    """The tenant's agent, refused (`AgentNotFound`, 404) when absent or of another tenant."""
    row = find_instance(store, tenant, instance_id)
    if row is None:
        raise AgentNotFound(instance_id=instance_id).application_error()
    return row


def list_instances(store: Store, tenant: str) -> list[AgentInstance]:
    with store.session() as db:
        return list(
            db.exec(
                select(AgentInstance)
                .where(col(AgentInstance.tenant) == tenant)
                .order_by(col(AgentInstance.created_at), col(AgentInstance.instance_id))
            ).all()
        )


def create_instance(
    store: Store,
    tenant: str,
    agent_type: AgentType,
    status: AgentStatus,
    *,
    foundational_window_ms: int = FOUNDATIONAL_WINDOW_MS,
) -> AgentInstance:
    """Insert a new agent (foundational phase, default mode, generation 0); an Active one
    is seeded with `AgentInitialized`. The foundational phase lasts the tenant's
    `AgentDispatcher:FoundationalWindowHours`, else `foundational_window_ms`.

    Raises:
        ApplicationError: `SoaAlreadyExists` (409), the tenant has its SOA already.
    """
    now = now_utc()
    window = configs.foundational_window_of(store, tenant, foundational_window_ms)
    instance_id = soa_instance_id(tenant) if agent_type is AgentType.SOA else uuid.uuid4().hex

    def write(db: Session) -> AgentInstance:
        # Read first: a concurrent create that took the id makes this write lose its race,
        # and the run again finds the winner's row and refuses.
        if db.get(AgentInstance, instance_id) is not None:
            raise SoaAlreadyExists(instance_id=instance_id).application_error()
        row = AgentInstance(
            instance_id=instance_id,
            tenant=tenant,
            agent_type=agent_type.value,
            status=status.value,
            active_mode=default_mode(agent_type),
            is_building_starting_workset=True,
            workset_deadline_utc=foundational_deadline(now, window),
            generation=0,
            created_at=now,
            updated_at=now,
        )
        db.add(row)
        db.flush()
        if status is AgentStatus.ACTIVE:
            _seed_initialized(db, row, f"init/{instance_id}/0")
        return row

    return store.run_transaction(write)


def delete_instance(store: Store, instance_id: str) -> None:
    """Undo a creation whose workflow could not be started (nothing else refers to it yet)."""
    with store.transaction() as db:
        db.exec(delete(AgentEventRow).where(col(AgentEventRow.instance_id) == instance_id))
        db.exec(delete(AgentInstance).where(col(AgentInstance.instance_id) == instance_id))


def tenant_soa(store: Store, tenant: str) -> AgentInstance | None:
    with store.session() as db:
        return db.get(AgentInstance, soa_instance_id(tenant))


def set_standing_agents(
    store: Store, settings: Settings, tenant: str, enabled: bool
) -> list[AgentInstance]:
    """Set the tenant flag; enabling it (with auto-bootstrap) ensures the tenant's SOA.

    Returns the agents to wake: on enabling, every non-Closed agent of the tenant (the
    SOA created now among them), since their workflows stopped ticking while the tenant
    was off; nothing on disabling.
    """
    set_feature(store, tenant, STANDING_AGENTS_FEATURE, enabled)
    if not enabled:
        return []
    if settings.standing_agents_auto_bootstrap:
        status = (
            AgentStatus.ACTIVE if settings.standing_agents_idle_by_default else AgentStatus.PAUSED
        )
        try:
            create_instance(
                store,
                tenant,
                AgentType.SOA,
                status,
                foundational_window_ms=settings.agent_foundational_window_ms,
            )
        except ApplicationError as err:
            if refusal_of(err, SoaAlreadyExists) is None:
                raise
    return [row for row in list_instances(store, tenant) if row.status != AgentStatus.CLOSED.value]


def standing_agents_enabled(store: Store, tenant: str) -> bool:
    return feature_enabled(store, tenant, STANDING_AGENTS_FEATURE)


def start(store: Store, journal: EventJournal, tenant: str, instance_id: str) -> Transition:
    """Paused or Closed → Active (a Closed agent re-opens with its counters reset), seeded
    with `AgentInitialized` in the same transaction. Already Active: nothing changes."""
    instance = get_instance(store, tenant, instance_id)
    now = now_utc()
    values: dict[str, Any] = {"status": AgentStatus.ACTIVE.value, "updated_at": now}
    if instance.status == AgentStatus.CLOSED.value:
        values.update(
            consecutive_idle_ticks=0,
            consecutive_blocked_turns=0,
            last_decision_hash=None,
            repeated_decision_turns=0,
        )
    seed = f"init/{instance_id}/{instance.generation}/{uuid.uuid4().hex[:12]}"

    def write(db: Session) -> bool:
        if instance.status not in (AgentStatus.PAUSED.value, AgentStatus.CLOSED.value):
            return False
        # The event first, the instance row second (see queue.enqueue_in); a lost CAS
        # takes the seed back with it (`_CasLost` rolls the transaction back).
        _seed_initialized(db, instance, seed)
        if not _cas_status(
            db,
            instance_id,
            {AgentStatus.PAUSED, AgentStatus.CLOSED},
            values,
            instance.status,
            generation=instance.generation,  # a reset meanwhile would orphan the seed
        ):
            raise _CasLost
        budget_pause.clear_in(db, instance_id, now, "started by an operator", undefer=True)
        return True

    try:
        changed = store.run_transaction(write)
    except _CasLost:
        changed = False
    instance = get_instance(store, tenant, instance_id)
    journal_status(journal, instance)
    return Transition(instance, changed)


def stop(store: Store, journal: EventJournal, tenant: str, instance_id: str) -> Transition:
    """Active → Paused. Paused or Closed: nothing changes."""
    instance = get_instance(store, tenant, instance_id)
    now = now_utc()
    values: dict[str, Any] = {"status": AgentStatus.PAUSED.value, "updated_at": now}

    def write(db: Session) -> bool:
        # Paused on a budget: the operator's stop makes the pause theirs (it no longer
        # lifts by itself when the cap is raised or the window regenerates).
        budget_pause.clear_in(db, instance_id, now, "stopped by an operator")
        # Its open requests stand: a stop pauses the agent, whose questions an operator may
        # still answer before starting it again (a reset is what ends them).
        return _cas_status(db, instance_id, {AgentStatus.ACTIVE}, values, instance.status)

    changed = store.run_transaction(write)
    instance = get_instance(store, tenant, instance_id)
    journal_status(journal, instance)
    return Transition(instance, changed)


def reset(
    store: Store,
    journal: EventJournal,
    tenant: str,
    instance_id: str,
    *,
    foundational_window_ms: int = FOUNDATIONAL_WINDOW_MS,
) -> AgentInstance:
    """A new generation: counters and plan hash cleared, foundational phase again, pending
    events drained, `AgentInitialized` seeded, all in one transaction. The older
    generations' ledger stays in the table (audit) but the routes show the current one:
    the agent's memory starts over.

    Raises:
        ApplicationError: `TickInProgress` (409), the workflow holds the tick lease; try
            again when the tick ends.
    """
    get_instance(store, tenant, instance_id)
    now = now_utc()
    window = configs.foundational_window_of(store, tenant, foundational_window_ms)
    statement = (
        update(AgentInstance)
        .where(
            col(AgentInstance.instance_id) == instance_id,
            col(AgentInstance.tick_in_progress).is_(False),
        )
        .values(
            generation=AgentInstance.generation + 1,
            consecutive_idle_ticks=0,
            consecutive_blocked_turns=0,
            last_decision_hash=None,
            repeated_decision_turns=0,
            last_plan_input_hash=None,
            is_building_starting_workset=True,
            workset_deadline_utc=foundational_deadline(now, window),
            updated_at=now,
        )
    )

    def write(db: Session) -> None:
        if db.exec(statement).rowcount != 1:
            raise TickInProgress().application_error()
        queue.drain_in(db, instance_id, now)
        budget_pause.clear_in(db, instance_id, now, "reset by an operator")
        approvals.supersede_agent_requests(db, tenant, instance_id, now, "the agent was reset")
        row = _row(db, instance_id)
        _seed_initialized(db, row, f"init/{instance_id}/{row.generation}")

    store.run_transaction(write)
    instance = get_instance(store, tenant, instance_id)
    journal_status(journal, instance, reset=True)
    return instance


def _row(db: Session, instance_id: str) -> AgentInstance:
    row = db.get(AgentInstance, instance_id, populate_existing=True)
    if row is None:
        raise AgentNotFound(instance_id=instance_id).application_error()
    return row


def _cas_status(
    db: Session,
    instance_id: str,
    from_statuses: set[AgentStatus],
    values: dict[str, Any],
    current: str,
    *,
    generation: int | None = None,
) -> bool:
    if current not in {status.value for status in from_statuses}:
        return False
    statement = update(AgentInstance).where(
        col(AgentInstance.instance_id) == instance_id,
        col(AgentInstance.status) == current,
    )
    if generation is not None:
        statement = statement.where(col(AgentInstance.generation) == generation)
    result = db.exec(statement.values(**values))
    return bool(result.rowcount == 1)


def _seed_initialized(db: Session, instance: AgentInstance, event_id: str) -> None:
    queue.enqueue_in(
        db,
        tenant=instance.tenant,
        instance_id=instance.instance_id,
        kind=EventKind.AGENT_INITIALIZED,
        payload={},
        event_id=event_id,
        generation=instance.generation,
    )


def journal_status(journal: EventJournal, instance: AgentInstance, *, reset: bool = False) -> None:
    """`agent.status` on every call, keyed by the transition it reports (the row's status,
    generation and `updated_at`): a retry after a crash writes the entry that was lost,
    and a repeat of an applied transition writes nothing."""
    key = f"status/{instance.generation}/{instance.status}/{iso(instance.updated_at)}"
    append_agent_event_once(
        journal,
        instance.tenant,
        instance.instance_id,
        STATUS,
        {"status": instance.status, "generation": instance.generation, "reset": reset},
        key,
    )
