"""The store side of a tick: the lease, what a tick reads, and its one passivation write.

`begin_tick` takes the lease with a compare-and-swap (`tick_in_progress`, same
generation, status Active) and reads what the tick decides on. `complete_tick`
writes everything a tick leaves behind in ONE transaction, idempotent by the
event id (`uq_agent_ledger_event`): the ledger turn (hash-chained), its
actions, the consumed event, the instance's counters, the next heartbeat, and
on STUCK the close and its attention request. A retried or replayed complete
finds its turn and writes nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from runtime.settings import Settings
from runtime.standing_agents import (
    budget_pause,
    catalog,
    heartbeats,
    mcp_calls,
    tick_cap,
    tick_guards,
)
from runtime.standing_agents.contracts import (
    STANDING_AGENTS_FEATURE,
    AgentStatus,
    ModeDefinition,
)
from runtime.standing_agents.ledger_chain import turn_hash
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentInstance,
    AgentLedgerAction,
    AgentLedgerTurn,
    AttentionRequest,
    SystemConfig,
)
from runtime.standing_agents.modes import catalogue
from runtime.standing_agents.ops_digest import probe
from runtime.standing_agents.plan_hash import plan_input_hash
from runtime.standing_agents.queue import next_due
from runtime.standing_agents.spend import credit_gate
from runtime.standing_agents.tick_budget import (
    foundational_active,
    foundational_output_tokens,
    resolve_tick_budget,
    settings_budget,
)
from runtime.standing_agents.workflow_contracts import (
    BeginTickInput,
    BeginTickResult,
    CompleteTickInput,
    CompleteTickResult,
    EventRef,
    InstanceView,
    NextEventResult,
)
from runtime.store.atomic import serialize
from runtime.store.engine import Store
from runtime.store.tenants import feature_enabled
from runtime.timestamps import iso_ms


def load_instance(store: Store, settings: Settings, instance_id: str) -> InstanceView:
    with store.session() as db:
        row = db.get(AgentInstance, instance_id)
        if row is None:
            return InstanceView(exists=False)
        view = InstanceView(
            status=row.status,
            active_mode=row.active_mode,
            generation=row.generation,
            budget_resume_at=budget_pause.resume_at(row),
        )
        tenant = row.tenant
    # Spec §3.2: an agent does not tick while standing agents are off for the deployment
    # (AGENTRT_STANDING_AGENTS_ENABLED; a restart with it on lets the sweeper wake them)
    # or for its tenant (the API wakes the tenant's agents when the flag is turned on).
    view.feature_enabled = dispatching(store, settings, tenant)
    return view


def dispatching(store: Store, settings: Settings, tenant: str) -> bool:
    """Spec §3.2's two levels: the deployment's switch, then the tenant's flag."""
    return settings.standing_agents_enabled and feature_enabled(store, tenant, FEATURE)


FEATURE = STANDING_AGENTS_FEATURE


def event_row(store: Store, event_id: str) -> AgentEventRow | None:
    """The stored event (its payload never crosses workflow history)."""
    with store.session() as db:
        return db.exec(select(AgentEventRow).where(col(AgentEventRow.event_id) == event_id)).first()


def event_payload(store: Store, event_id: str) -> dict[str, Any]:
    row = event_row(store, event_id)
    return dict(row.payload) if row is not None else {}


def next_event(
    store: Store, settings: Settings, tenant: str, instance_id: str, generation: int, now: datetime
) -> NextEventResult:
    """The next due event; first makes sure an Active instance has its one future heartbeat."""
    with store.transaction() as db:
        instance = db.get(AgentInstance, instance_id)
        if instance is None or instance.generation != generation:
            return NextEventResult()
        if instance.status == AgentStatus.ACTIVE.value:
            heartbeats.ensure_heartbeat(db, settings, instance, now)
    event, upcoming = next_due(store, instance_id, now, generation=generation)
    ref = None
    if event is not None:
        ref = EventRef(
            event_id=event.event_id, sequence_number=event.sequence_number, kind=event.kind
        )
    return NextEventResult(event=ref, wake_at=upcoming)


def tenant_configs(store: Store, tenant: str) -> dict[str, Any]:
    with store.session() as db:
        rows = db.exec(select(SystemConfig).where(col(SystemConfig.tenant) == tenant)).all()
        return {row.key: row.value for row in rows}


def begin_tick(store: Store, settings: Settings, request: BeginTickInput) -> BeginTickResult:
    """The lease CAS, then everything the tick decides on (no transcript: the episode's)."""
    if not dispatching(store, settings, request.tenant):
        return BeginTickResult(leased=False)  # spec §3.2: the agents do not tick
    with store.transaction() as db:
        # Spec §3.2: at most N of the tenant's agents tick at once. Counted and taken under
        # one lock per tenant, so N concurrent begins never lease more than N.
        serialize(db, f"ticks/{request.tenant}")
        if (
            tick_cap.ticking_elsewhere(db, settings, request)
            >= settings.max_concurrent_instances_per_tenant
        ):
            return BeginTickResult(leased=False, throttled=True)  # nothing was written
        taken = db.execute(
            update(AgentInstance)
            .where(
                col(AgentInstance.instance_id) == request.instance_id,
                col(AgentInstance.generation) == request.generation,
                col(AgentInstance.status) == AgentStatus.ACTIVE.value,
            )
            .values(tick_in_progress=True, tick_started_at=request.now)
        )
    if taken.rowcount != 1:  # type: ignore[attr-defined]
        return BeginTickResult(leased=False)
    with store.session() as db:
        instance = db.get(AgentInstance, request.instance_id)
    assert instance is not None
    configs = tenant_configs(store, request.tenant)
    ops = probe(store, request.tenant, request.now)
    payload = event_payload(store, request.event.event_id)
    digest = plan_input_hash(request.event.kind.value, payload, str(ops["bucket"]))
    mode: ModeDefinition | None = None
    mode_error: str | None = None
    try:
        mode = catalog.resolve_mode(
            request.agent_type, instance.active_mode, catalogue(store, request.agent_type)
        )
    except catalog.ModeCatalogError as err:
        mode_error = str(err)
    foundational = foundational_active(
        instance.is_building_starting_workset, instance.workset_deadline_utc, request.now
    )
    if mode is not None:  # every mode carries the control verbs (a stored row too)
        mode = catalog.with_control_verbs(mode, foundational)
    budget = resolve_tick_budget(
        configs=configs,
        settings_layer=settings_budget(settings),
        mode_override=mode.budget_override if mode is not None else None,
        foundational=foundational,
        foundational_output_cap=foundational_output_tokens(
            configs, settings.agent_foundational_max_output_tokens_per_turn
        ),
    )
    gate = credit_gate(store, settings, request.tenant, request.now, configs)
    if foundational and gate.remaining_usd is not None and budget.max_cost_usd is None:
        # The foundational phase has no per-tick limit but the week's credit: its cost
        # axis is what is left of it (re-checked before every model call as well).
        budget = budget.model_copy(update={"max_cost_usd": gate.remaining_usd})
    return BeginTickResult(
        leased=True,
        plan_hash=digest,
        previous_hash=instance.last_plan_input_hash,
        consecutive_idle_ticks=instance.consecutive_idle_ticks,
        consecutive_blocked_turns=instance.consecutive_blocked_turns,
        forced_replan_every=settings.forced_replan_every_n_idle_ticks,
        max_blocked_turns=settings.max_consecutive_blocked_turns,
        enforce_stuck_guard=settings.enforce_stuck_guard,
        mode=mode,
        mode_error=mode_error,
        budget=budget,
        foundational=foundational,
        credit_ok=gate.ok,
        credit_regenerates_at=gate.regenerates_at,
        approved_mcp_call=mcp_calls.approved_call(
            store, request.tenant, request.event.kind, payload
        ),
    )


def chained_turn(row: AgentLedgerTurn) -> dict[str, Any]:
    """The fields of a ledger turn its hash chains, plus the hash (ledger_chain.turn_hash
    hashes this dict, so its shape is fixed: a change would break every stored chain).
    A client reads a turn as `reads.turn_view`, which also carries its active mode."""
    return {
        "seq": row.seq,
        "eventId": row.event_id,
        "eventKind": row.event_kind,
        "decisionKind": row.decision_kind,
        "decision": row.decision,
        "planInputHash": row.plan_input_hash,
        "llmCallId": row.llm_call_id,
        "servedModel": row.served_model,
        "costUsd": float(row.cost_usd),
        "createdAt": iso_ms(row.created_at),
        "prevHash": row.prev_hash,
        "hash": row.hash,
    }


@dataclass(frozen=True)
class Completed:
    result: CompleteTickResult
    turn: dict[str, Any]
    stuck_decision_id: str | None
    # The `budget_reached` request of the pause this tick wrote (issue 21, item 9).
    budget_decision_id: str | None = None
    # What the agent paused on (the credit, when it was spent as well as the tick's axis).
    budget_axis: str | None = None


def _paused_axis(instance: AgentInstance | None, paused: str | None) -> str | None:
    pause = instance.budget_pause if instance is not None and paused is not None else None
    return str(pause.get("axis")) if pause else None


def _paused_by(instance: AgentInstance | None, event_id: str) -> str | None:
    """The budget pause `event_id`'s tick wrote, if the agent is still in it (a retry)."""
    pause = instance.budget_pause if instance is not None else None
    if pause is None or pause.get("eventId") != event_id:
        return None
    return str(pause.get("decisionId") or "") or None


def complete_tick(
    store: Store,
    settings: Settings,
    request: CompleteTickInput,
    stored_actions: Mapping[str, Mapping[str, Any]] | None = None,
) -> Completed:
    """The passivation write (one transaction); a second call returns the first's result.

    `stored_actions` are the full tool results the tool activities wrote (by op id):
    the ledger's actions are recorded from them, never from workflow history.
    """
    stored_actions = stored_actions or {}
    with store.transaction() as db:
        existing = db.exec(
            select(AgentLedgerTurn).where(
                col(AgentLedgerTurn.instance_id) == request.instance_id,
                col(AgentLedgerTurn.event_id) == request.event.event_id,
            )
        ).first()
        instance = db.get(AgentInstance, request.instance_id)
        if existing is not None or instance is None:
            # A retry after the commit: the same answer, so its journal events (deduped)
            # are appended if the first attempt died before appending them.
            seq = existing.seq if existing is not None else 0
            next_at = instance.next_tick_at if instance is not None else None
            stuck = db.exec(
                select(AttentionRequest.decision_id).where(
                    col(AttentionRequest.op_id) == tick_guards.stuck_op_id(request)
                )
            ).first()
            paused = _paused_by(instance, request.event.event_id)
            return Completed(
                CompleteTickResult(
                    seq=seq,
                    next_tick_at=next_at,
                    closed=stuck is not None,
                    paused_on_budget=paused is not None,
                ),
                chained_turn(existing) if existing is not None else {},
                stuck,
                paused,
                _paused_axis(instance, paused),
            )
        if instance.generation != request.generation:
            # Reset meanwhile: the reset won, this tick records nothing.
            instance.tick_in_progress = False
            db.add(instance)
            return Completed(
                CompleteTickResult(seq=0, next_tick_at=instance.next_tick_at), {}, None
            )
        event = db.exec(
            select(AgentEventRow).where(col(AgentEventRow.event_id) == request.event.event_id)
        ).first()
        if request.defer:
            # Credit spent: the event stays unconsumed until the window regenerates; no
            # turn is recorded for the deferral (the answer's turn comes when it is read).
            visible_at = request.not_before or request.now + heartbeats.heartbeat_delay(
                settings, instance.consecutive_idle_ticks
            )
            if event is not None and event.consumed_at is None:
                event.visible_at = visible_at
                db.add(event)
            instance.tick_in_progress = False
            paused = _pause(db, settings, instance, request)
            if paused is None:
                # A retry of this write: the pause it wrote stands.
                paused = _paused_by(instance, request.event.event_id)
            db.add(instance)
            return Completed(
                CompleteTickResult(
                    seq=0, next_tick_at=instance.next_tick_at, paused_on_budget=paused is not None
                ),
                {},
                None,
                paused,
                _paused_axis(instance, paused),
            )
        seq = heartbeats.last_seq(db, request.instance_id) + 1
        previous = db.exec(
            select(AgentLedgerTurn)
            .where(
                col(AgentLedgerTurn.instance_id) == request.instance_id,
                col(AgentLedgerTurn.generation) == request.generation,
            )
            .order_by(col(AgentLedgerTurn.seq).desc())
            .limit(1)
        ).first()
        prev_hash = previous.hash if previous is not None else None
        reasoning = _full_summary(request, stored_actions) or request.reasoning_summary
        decision = {
            "actions": [_action_summary(a.model_dump(mode="json")) for a in request.actions],
            "waitCondition": request.wait_condition,
            "reasoningSummary": reasoning,
            "activeMode": request.active_mode,
        }
        row = AgentLedgerTurn(
            instance_id=request.instance_id,
            tenant=request.tenant,
            seq=seq,
            event_id=request.event.event_id,
            event_kind=request.event.kind.value,
            event_payload=dict(event.payload) if event is not None else {},
            decision_kind=request.decision_kind.value,
            decision=decision,
            wait_condition=_bounded(request.wait_condition, 200),
            reasoning_summary=reasoning,
            plan_input_hash=request.plan_hash,
            llm_call_id=request.llm_call_id,
            served_model=request.served_model,
            cost_usd=float(request.cost_usd),
            active_mode=request.active_mode,
            generation=request.generation,
            created_at=request.now,
            prev_hash=prev_hash,
            hash="",
        )
        row.hash = turn_hash(prev_hash, chained_turn(row))
        db.add(row)
        for ordinal, action in enumerate(request.actions):
            full = stored_actions.get(action.op_id or "") or {}
            db.add(
                AgentLedgerAction(
                    instance_id=request.instance_id,
                    ledger_seq=seq,
                    ordinal=ordinal,
                    tool=action.tool[:120],  # the model may invent any name
                    arguments=action.arguments,
                    outcome=action.outcome.value,
                    blocked_reason=_bounded(action.blocked_reason, 400),
                    violations=list(action.violations),
                    result=_action_result(action.summary, full),
                )
            )
        if event is not None and event.consumed_at is None:
            event.consumed_at = request.now
            db.add(event)
        instance.consecutive_idle_ticks = request.consecutive_idle_ticks
        instance.consecutive_blocked_turns = request.consecutive_blocked_turns
        instance.last_plan_input_hash = request.plan_hash
        instance.last_tick_at = request.now
        instance.tick_in_progress = False
        instance.updated_at = request.now
        loop = tick_guards.loop_verdict(db, settings, instance, request, reasoning)
        instance.last_decision_hash = loop.last_decision_hash
        instance.repeated_decision_turns = loop.repeated_decisions
        closing = request.close_stuck or (settings.enforce_stuck_guard and loop.rule is not None)
        stuck_id: str | None = None
        if closing:
            instance.status = AgentStatus.CLOSED.value
            instance.next_tick_at = None
            # Closed: no tick of any origin is left (a reopened agent starts afresh).
            heartbeats.consume_heartbeats(db, request.instance_id, request.now, ops_too=True)
            rule = None if request.close_stuck else loop
            stuck_id = tick_guards.raise_stuck(db, request, rule)
        else:
            heartbeats.consume_heartbeats(db, request.instance_id, request.now)
            visible_at = request.now + heartbeats.heartbeat_delay(
                settings, request.consecutive_idle_ticks
            )
            if request.not_before is not None and request.not_before > visible_at:
                visible_at = request.not_before
            heartbeats.add_heartbeat(db, instance, seq, visible_at, request.now)
        paused = None if closing else _pause(db, settings, instance, request)
        db.add(instance)
        return Completed(
            CompleteTickResult(
                seq=seq,
                next_tick_at=instance.next_tick_at,
                closed=closing,
                paused_on_budget=paused is not None,
            ),
            chained_turn(row),
            stuck_id,
            paused,
            _paused_axis(instance, paused),
        )


def _pause(
    db: Session, settings: Settings, instance: AgentInstance, request: CompleteTickInput
) -> str | None:
    if request.budget_reached is None:
        return None
    return budget_pause.pause_in(
        db, settings, instance, request.budget_reached, request.event.event_id, request.now
    )


def _bounded(text: str | None, limit: int) -> str | None:
    # Column widths (PostgreSQL enforces them): the full text stays in the decision JSON.
    return text[:limit] if text is not None else None


def _action_result(summary: str | None, full: Mapping[str, Any]) -> dict[str, Any] | None:
    """The full result the tool activity stored; else the bounded summary history carried."""
    result = full.get("result")
    if isinstance(result, dict):
        return result
    return {"summary": summary} if summary is not None else None


def _full_summary(
    request: CompleteTickInput, stored_actions: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """A phase tool's full summary or reason (history carries it bounded)."""
    for action in reversed(request.actions):
        if action.outcome.value != "ok" or action.tool not in (
            catalog.PHASE_COMPLETE,
            catalog.PHASE_BLOCKED,
        ):
            continue
        result = (stored_actions.get(action.op_id or "") or {}).get("result")
        if isinstance(result, dict):
            text = result.get("summary") or result.get("reason")
            if text:
                return str(text)
    return None


def _action_summary(action: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "tool": action["tool"],
        "outcome": action["outcome"],
        "blockedReason": action.get("blocked_reason"),
        "violations": action.get("violations") or [],
    }
