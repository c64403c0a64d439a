"""The one writer of an agent's mode (spec standing-agents §2.5), and the catalogue seed.

Modes are written only by a human: from the mode route (`source=ui`) or by approving a
`soa_propose_mode_change` request (`source=approval`). Both go through
`apply_mode_change`, which validates the mode against the agent's own catalogue (the
`agent_modes` rows of its type; the code seed when the table has none), writes
`active_mode` and one `agent_mode_change_events` row in one transaction, and journals
`agent.mode_changed`. No tool reaches this module: the agent cannot change its mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlmodel import Session, col, select

from runtime.failures import WireError
from runtime.mcp.grants import pattern_problem
from runtime.standing_agents.agent_journal import MODE_CHANGED, append_agent_event_once
from runtime.standing_agents.catalog import (
    MODES,
    TOOL_SUPERSET,
    control_verbs,
    modes_of,
)
from runtime.standing_agents.contracts import (
    AgentType,
    ModeChangeSource,
    ModeDefinition,
    TickBudget,
)
from runtime.standing_agents.errors import AgentNotFound
from runtime.standing_agents.models import AgentInstance, AgentModeChange, AgentModeRow
from runtime.standing_agents.views import ModeChangeView
from runtime.store.engine import Store
from runtime.store.journal import EventJournal
from runtime.timestamps import aware_utc, iso_ms


class UnknownMode(WireError):
    """A mode asked for an agent (the mode route's body, an approved proposal) that its
    type's catalogue does not hold; `allowed` lists the ones it does: 400."""

    kind: Literal["unknown_mode"] = "unknown_mode"
    mode: str
    allowed: list[str]

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Unknown mode "{self.mode}" for this agent',
            "code": "unknown_mode",
            "allowed": self.allowed,
        }


class ModeNotFound(WireError):
    """A mode the type's catalogue does not hold, named in a route's path: 404."""

    kind: Literal["unknown_mode_path"] = "unknown_mode_path"
    mode: str
    allowed: list[str]

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"Unknown mode {self.mode!r}",
            "code": "unknown_mode",
            "allowed": self.allowed,
        }


class InvalidModeTools(WireError):
    """A toolset with a tool outside the type's superset or a malformed MCP entry: 400."""

    kind: Literal["invalid_mode_tools"] = "invalid_mode_tools"
    message: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.kind}


class UnknownModePreset(WireError):
    """A mode's preset that does not exist (GET /api/v1/llm/presets lists them): 400, the
    body of the LLM configuration's own `unknown_preset`."""

    kind: Literal["unknown_mode_preset"] = "unknown_mode_preset"
    preset_id: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No preset "{self.preset_id}"',
            "code": "unknown_preset",
            "presetId": self.preset_id,
        }


@dataclass(frozen=True)
class ModeChange:
    """One row of the audit trail, as clients read it."""

    change_id: int
    tenant: str
    instance_id: str
    from_mode: str | None
    to_mode: str
    source: str
    actor: str | None
    decision_id: str | None
    created_at: datetime


def seed_modes(store: Store) -> int:
    """Insert the code catalogue's modes missing from `agent_modes`; returns how many.

    Idempotent (run at every API start): rows an operator edited are left as they are.
    Another process seeding at the same moment makes this write lose its race: the run
    again finds that process's rows (the same) and adds none of them.
    """

    def write(db: Session) -> int:
        existing = {(row.agent_type, row.name) for row in db.exec(select(AgentModeRow)).all()}
        missing = [m for m in MODES if (m.agent_type.value, m.name) not in existing]
        for mode in missing:
            db.add(_row_of(mode))
        db.flush()
        return len(missing)

    return store.run_transaction(write)


def catalogue(store: Store, agent_type: AgentType) -> list[ModeDefinition]:
    """The type's modes as stored, or the code seed when the table holds none of them."""
    with store.session() as db:
        rows = db.exec(
            select(AgentModeRow)
            .where(col(AgentModeRow.agent_type) == agent_type.value)
            .order_by(col(AgentModeRow.name))
        ).all()
    if not rows:
        return modes_of(agent_type)
    return [_definition_of(row) for row in rows]


def apply_mode_change(
    store: Store,
    instance_id: str,
    to_mode: str,
    source: ModeChangeSource,
    actor: str | None,
    decision_id: str | None = None,
    *,
    journal: EventJournal | None = None,
) -> ModeChange:
    """Set the agent's mode and record the change; the only path that writes a mode.

    With `decision_id` (an approval), the change is recorded once per decision: a second
    call for the same decision returns the first change and writes nothing (and journals
    it again under the same dedupe key: a journal entry lost to a crash is written then).

    Raises:
        ApplicationError: `AgentNotFound` (404), no such agent; `UnknownMode` (400),
            `to_mode` is not in the agent's catalogue.
    """
    with store.session() as db:
        found = db.get(AgentInstance, instance_id)
    if found is None:
        raise AgentNotFound(instance_id=instance_id).application_error()
    # Read before the write transaction: SQLite allows one writer, and this is a read.
    allowed = allowed_modes(store, AgentType(found.agent_type))
    # The same approval applied concurrently (the decision_id is unique) makes this write
    # lose its race: the run again finds the winner's change and returns it.
    change = store.run_transaction(
        lambda db: apply_mode_change_in(
            db, instance_id, to_mode, source, actor, decision_id, allowed=allowed
        )
    )
    if journal is not None:
        journal_mode_change(journal, change)
    return change


def set_mode_tools(
    store: Store, agent_type: AgentType, name: str, tools: list[str]
) -> ModeDefinition:
    """Replace a mode's toolset in `agent_modes` (every tenant's agents of the type, from
    their next tick): the type's own tools and MCP entries (`mcp__<server>__<tool>`,
    `mcp__<server>__*`, offered only where a tenant's grant names them too). The control
    verbs (phase_complete, phase_blocked, soa_propose_mode_change) are always in it.

    Raises:
        ApplicationError: `ModeNotFound` (404), no such mode in the type's catalogue;
            `InvalidModeTools` (400), a tool outside the type's superset, or a malformed
            MCP entry.
    """
    wanted = sorted(set(tools) | set(control_verbs(foundational=False)))
    outside = [
        t for t in wanted if t not in TOOL_SUPERSET[agent_type] and pattern_problem(t) is not None
    ]
    if outside:
        raise InvalidModeTools(
            message=f"not tools of {agent_type} (its superset) nor MCP entries "
            f"(mcp__<server>__<tool> or mcp__<server>__*): {', '.join(outside)}"
        ).application_error()
    return _update_mode(store, agent_type, name, tools=wanted)


def set_mode_preset(
    store: Store, agent_type: AgentType, name: str, preset_id: str | None
) -> ModeDefinition:
    """Set (or clear, None) the preset a mode's planning calls use: it wins over the type's
    site binding from the agents' next tick (§2.5, §3.7). The caller checks that the
    preset exists; a preset a mode names cannot be deleted (runtime/llm/preset_store).

    Raises:
        ApplicationError: `ModeNotFound` (404), no such mode in the type's catalogue.
    """
    return _update_mode(store, agent_type, name, preset_id=preset_id)


def _update_mode(store: Store, agent_type: AgentType, name: str, **values: Any) -> ModeDefinition:
    """Write `values` on a mode of the type's catalogue (seeded first); the row is no longer
    the code seed's. Refuses a mode the catalogue does not hold (`ModeNotFound`, 404)."""
    seed_modes(store)
    allowed = allowed_modes(store, agent_type)
    if name not in allowed:
        raise ModeNotFound(mode=name, allowed=allowed).application_error()
    with store.transaction() as db:
        row = db.get(AgentModeRow, (agent_type.value, name))
        if row is None:  # deleted meanwhile
            raise ModeNotFound(mode=name, allowed=allowed).application_error()
        for field, value in values.items():
            setattr(row, field, value)
        row.system_seed = False
        db.add(row)
        db.flush()
        db.refresh(row)
        return _definition_of(row)


def allowed_modes(store: Store, agent_type: AgentType) -> list[str]:
    return [mode.name for mode in catalogue(store, agent_type)]


def apply_mode_change_in(
    db: Session,
    instance_id: str,
    to_mode: str,
    source: ModeChangeSource,
    actor: str | None,
    decision_id: str | None = None,
    *,
    allowed: list[str],
) -> ModeChange:
    """`apply_mode_change` inside the caller's transaction (the caller commits), with the
    catalogue's mode names read beforehand (`allowed_modes`).

    The read of the current mode and the write of the new one are atomic, so that each
    audit row's `from` is the `to` of the change before it however many changes race:
    the instance row is read `FOR UPDATE` (PostgreSQL: a concurrent change waits for this
    transaction, then reads what it committed) and afresh (`populate_existing`: not a
    copy the caller's session loaded earlier); on SQLite the transaction holds the
    database's write lock from its first statement (BEGIN IMMEDIATE), which serializes
    the same way.

    Raises:
        ApplicationError: `AgentNotFound`, `UnknownMode`: as `apply_mode_change`.
    """
    instance = db.get(AgentInstance, instance_id, with_for_update=True, populate_existing=True)
    if instance is None:
        raise AgentNotFound(instance_id=instance_id).application_error()
    if decision_id is not None:
        earlier = _change_of_decision(db, decision_id)
        if earlier is not None:
            return earlier
    if to_mode not in allowed:
        raise UnknownMode(mode=to_mode, allowed=allowed).application_error()
    now = datetime.now(UTC)
    change = AgentModeChange(
        instance_id=instance_id,
        tenant=instance.tenant,
        from_mode=instance.active_mode,
        to_mode=to_mode,
        source=source.value,
        actor=actor,
        decision_id=decision_id,
        created_at=now,
    )
    instance.active_mode = to_mode
    instance.updated_at = now
    db.add(instance)
    db.add(change)
    db.flush()  # gives the change its id (the journal's dedupe key)
    return _public(change)


def journal_mode_change(journal: EventJournal, change: ModeChange) -> None:
    """`agent.mode_changed`, once per change row however often it is called."""
    append_agent_event_once(
        journal,
        change.tenant,
        change.instance_id,
        MODE_CHANGED,
        mode_change_view(change).model_dump(mode="json"),
        f"mode-change/{change.change_id}",
    )


def mode_changes(store: Store, instance_id: str) -> list[ModeChange]:
    """The audit trail of one agent, oldest first."""
    with store.session() as db:
        rows = db.exec(
            select(AgentModeChange)
            .where(col(AgentModeChange.instance_id) == instance_id)
            .order_by(col(AgentModeChange.id))
        ).all()
    return [_public(row) for row in rows]


def mode_change_view(change: ModeChange) -> ModeChangeView:
    """A change as every door serves it: the mode routes and the journal."""
    return ModeChangeView(
        from_=change.from_mode,
        to=change.to_mode,
        source=change.source,
        actor=change.actor,
        decision_id=change.decision_id,
        created_at=iso_ms(change.created_at),
    )


def _change_of_decision(db: Any, decision_id: str) -> ModeChange | None:
    row = db.exec(
        select(AgentModeChange).where(col(AgentModeChange.decision_id) == decision_id)
    ).first()
    return None if row is None else _public(row)


def _public(row: AgentModeChange) -> ModeChange:
    return ModeChange(
        change_id=row.id or 0,
        tenant=row.tenant,
        instance_id=row.instance_id,
        from_mode=row.from_mode,
        to_mode=row.to_mode,
        source=row.source,
        actor=row.actor,
        decision_id=row.decision_id,
        created_at=aware_utc(row.created_at),
    )


def _row_of(mode: ModeDefinition) -> AgentModeRow:
    return AgentModeRow(
        agent_type=mode.agent_type.value,
        name=mode.name,
        description=mode.description,
        prompt_fragment=mode.prompt_fragment,
        tools=list(mode.tools),
        preset_id=mode.preset_id,
        budget_override=(
            mode.budget_override.model_dump() if mode.budget_override is not None else None
        ),
        is_default=mode.is_default,
        system_seed=True,
    )


def _definition_of(row: AgentModeRow) -> ModeDefinition:
    return ModeDefinition(
        agent_type=AgentType(row.agent_type),
        name=row.name,
        description=row.description,
        prompt_fragment=row.prompt_fragment,
        tools=list(row.tools),
        budget_override=(
            TickBudget.model_validate(row.budget_override)
            if row.budget_override is not None
            else None
        ),
        preset_id=row.preset_id,
        is_default=row.is_default,
    )
