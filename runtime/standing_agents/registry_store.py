"""The coordination registry (spec §2.1b, §2.2, §3.9): who can take which work, per tenant.

Durable in agentrt (table `agent_registry`), where the spec's is in memory: an API
restart keeps the entries, and the TTL (`AGENTRT_REGISTRY_TTL_MS`, 5 min) still
retires the ones that stop heart-beating. Strictly per tenant: every read and write
is keyed by the tenant. The tenant's SOA is listed as registered without a row: its
entry is derived from its `agent_instances` row while it is not Closed (its workflow
is its heartbeat), so it can never expire out of the registry while it lives.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import update
from sqlmodel import Session, col, select

from runtime.failures import WireError
from runtime.standing_agents.contracts import AgentStatus, AgentType
from runtime.standing_agents.models import AgentInstance, RegistryEntry
from runtime.store.engine import Store
from runtime.timestamps import aware_utc

SOA_ROLE = "Coordinator"
# The SOA's id (control.soa_instance_id) starts with it: no client entry may shadow it.
RESERVED_PREFIX = "soa-"
SOA_CAPABILITIES = ("orchestration", "decisions", "planning")
# An entry expired this long ago may be taken by another coder (its owner is gone).
EXPIRED_OWNER_GRACE = timedelta(minutes=5)


@dataclass(frozen=True)
class Registered:
    agent_id: str
    role: str
    capabilities: list[str]
    endpoint: str | None
    last_heartbeat_at: datetime


class ReservedAgentId(Exception):
    """An id that could shadow the SOA's entry: the registry route answers `AgentIdReserved`,
    agentrt's MCP server its own refusal."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(f"agent ids starting with {RESERVED_PREFIX!r} are reserved for the SOA")
        self.agent_id = agent_id

    def refusal(self) -> AgentIdReserved:
        """The answer of the registry route."""
        return AgentIdReserved(agent_id=self.agent_id)


class AgentIdReserved(WireError):
    """A registration whose id starts with the SOA's prefix (`soa-`): 409."""

    kind: Literal["agent_id_reserved"] = "agent_id_reserved"
    agent_id: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Agent ids starting with "{RESERVED_PREFIX}" are reserved for the '
            "tenant's SOA",
            "code": "agent_id_reserved",
            "agentId": self.agent_id,
        }


class NotOwner(Exception):
    """Another coder's entry: only its registrant (or an operator) may touch it."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(f"agent {agent_id!r} is another coder's registry entry")
        self.agent_id = agent_id


def _check_owner(row: RegistryEntry, by: str | None) -> None:
    if by is not None and row.registered_by is not None and row.registered_by != by:
        raise NotOwner(row.agent_id)


class NotRegistered(Exception):
    """No live entry of this id: the registry route answers `AgentNotRegistered`, agentrt's
    MCP server its own refusal (and a coder's call refreshing its entry ignores it)."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(f"agent {agent_id!r} is not registered (or expired)")
        self.agent_id = agent_id

    def refusal(self) -> AgentNotRegistered:
        """The answer of the registry route."""
        return AgentNotRegistered(agent_id=self.agent_id)


class AgentNotRegistered(WireError):
    """A heartbeat for no live entry (never registered, or expired): 404, register again."""

    kind: Literal["agent_not_registered"] = "agent_not_registered"
    agent_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No live registry entry "{self.agent_id}": register it again',
            "code": "agent_not_registered",
            "agentId": self.agent_id,
        }


def register(
    store: Store,
    tenant: str,
    agent_id: str,
    role: str,
    capabilities: list[str],
    endpoint: str | None,
    by: str | None = None,
) -> Registered:
    """Create or replace an entry (registering again is a heartbeat with new details).
    `by`: the MCP coder's verified identity, recorded; another coder's entry is refused
    (an operator, `by=None`, may replace any).

    Raises:
        ReservedAgentId: the id could shadow the tenant's SOA entry.
        NotOwner: `by` is not the coder that registered it.
    """
    if agent_id.startswith(RESERVED_PREFIX):
        raise ReservedAgentId(agent_id)
    now = datetime.now(UTC)

    def write(db: Session) -> Registered:
        # Two first registrations of one id: the loser's insert collides, and its run
        # again finds the winner's entry (to replace, or to refuse as another coder's).
        row = db.get(RegistryEntry, (tenant, agent_id))
        if row is None:
            row = RegistryEntry(tenant=tenant, agent_id=agent_id, role=role, last_heartbeat_at=now)
        elif aware_utc(row.last_heartbeat_at) > now - EXPIRED_OWNER_GRACE:
            _check_owner(row, by)
        row.registered_by = by
        row.role = role
        row.capabilities = sorted(set(capabilities))
        row.endpoint = endpoint
        row.last_heartbeat_at = now
        db.add(row)
        db.flush()
        return _public(row)

    return store.run_transaction(write)


def heartbeat(
    store: Store, tenant: str, agent_id: str, ttl: timedelta, by: str | None = None
) -> Registered:
    """Refresh an entry; an expired one must register again.

    Raises:
        NotRegistered: no live entry of that id in this tenant.
        NotOwner: `by` is not the coder that registered it.
    """
    now = datetime.now(UTC)
    with store.transaction() as db:
        row = db.get(RegistryEntry, (tenant, agent_id))
        if row is None or aware_utc(row.last_heartbeat_at) <= now - ttl:
            raise NotRegistered(agent_id)
        _check_owner(row, by)
        row.last_heartbeat_at = now
        db.add(row)
    return _public(row)


def refresh_by(store: Store, tenant: str, by: str, ttl: timedelta) -> int:
    """Refresh every live entry `by` registered in the tenant (a coder's call is its
    heartbeat); an expired one stays expired (it must register again). Returns how many."""
    now = datetime.now(UTC)
    with store.transaction() as db:
        result = db.exec(
            update(RegistryEntry)
            .where(
                col(RegistryEntry.tenant) == tenant,
                col(RegistryEntry.registered_by) == by,
                col(RegistryEntry.last_heartbeat_at) > now - ttl,
            )
            .values(last_heartbeat_at=now)
        )
    return int(result.rowcount or 0)


def unregister(store: Store, tenant: str, agent_id: str, by: str | None = None) -> bool:
    """Remove an entry; False when there was none.

    Raises:
        NotOwner: `by` is not the coder that registered it.
    """
    with store.transaction() as db:
        row = db.get(RegistryEntry, (tenant, agent_id))
        if row is None:
            return False
        _check_owner(row, by)
        db.delete(row)
    return True


def live_entry(
    store: Store, tenant: str, agent_id: str, ttl: timedelta, by: str | None = None
) -> Registered | None:
    """One live entry (the SOA's included) — with `by`, only one that coder registered
    (or an operator did) — or None."""
    with store.session() as db:
        row = db.get(RegistryEntry, (tenant, agent_id))
    if by is not None and row is not None and row.registered_by not in (None, by):
        return None
    return next((e for e in live_entries(store, tenant, ttl) if e.agent_id == agent_id), None)


def live_entries(
    store: Store, tenant: str, ttl: timedelta, capability: str | None = None
) -> list[Registered]:
    """The tenant's entries heart-beaten within the TTL, the SOA's first; expired rows are
    deleted on the way (the table holds only what could still be listed)."""
    now = datetime.now(UTC)
    cutoff = now - ttl
    with store.transaction() as db:
        rows = db.exec(select(RegistryEntry).where(col(RegistryEntry.tenant) == tenant)).all()
        expired = [row for row in rows if aware_utc(row.last_heartbeat_at) <= cutoff]
        for row in expired:
            db.delete(row)
        soa = db.exec(
            select(AgentInstance).where(
                col(AgentInstance.tenant) == tenant,
                col(AgentInstance.agent_type) == AgentType.SOA.value,
                col(AgentInstance.status) != AgentStatus.CLOSED.value,
            )
        ).first()
    entries = [_public(row) for row in rows if aware_utc(row.last_heartbeat_at) > cutoff]
    entries.sort(key=lambda entry: entry.agent_id)
    if soa is not None and all(entry.agent_id != soa.instance_id for entry in entries):
        entries.insert(0, _soa_entry(soa, now))
    if capability is not None:
        entries = [entry for entry in entries if capability in entry.capabilities]
    return entries


def _soa_entry(soa: AgentInstance, now: datetime) -> Registered:
    """The SOA's derived entry. Its heartbeat is its workflow: `now` while it is Active
    (it ticks, or waits for its next heartbeat), else its last tick (its creation when it
    never ticked), so a paused SOA shows since when it has been quiet."""
    if soa.status == AgentStatus.ACTIVE.value:
        beat = now
    else:
        beat = aware_utc(soa.last_tick_at or soa.created_at)
    return Registered(
        agent_id=soa.instance_id,
        role=SOA_ROLE,
        capabilities=list(SOA_CAPABILITIES),
        endpoint=None,
        last_heartbeat_at=beat,
    )


def _public(row: RegistryEntry) -> Registered:
    return Registered(
        agent_id=row.agent_id,
        role=row.role,
        capabilities=list(row.capabilities),
        endpoint=row.endpoint,
        last_heartbeat_at=aware_utc(row.last_heartbeat_at),
    )
