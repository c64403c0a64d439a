"""A budget reached is a pause, not a failure (issue 21, item 9).

A tick that stops at one of its budget's axes, or finds the tenant's weekly credit
spent, records it and pauses its agent in the same transaction as the tick's one
passivation write (`pause_in`, from `ticks.complete_tick`): the status becomes Paused,
`budget_pause` says on what (axis, cap, spend, the credit's regeneration), and one
`budget_reached` attention request tells an operator. A paused agent does not tick:
nothing is retried in between, whatever wakes it.

It resumes by itself (`resume_if_lifted`) when what stopped it no longer does:

- an operator raised the cap (a `system_configs` write): the config route resumes at
  once, and the API's sweeper re-checks every paused agent each pass, so an API that
  died between the config write and the resume loses nothing;
- the weekly credit's window regenerated: the workflow sleeps on a durable timer until
  `resumeAt`, then resumes (the sweeper's pass is the backstop here too);
- an operator starts it (`control.start`), stops it (it stays Paused, now the
  operator's), or resets it: the pause is theirs and the request is resolved.

The resume is a compare-and-swap (Paused, same generation, still paused on a budget);
it resolves the attention request and makes the events the credit deferred due again.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import func, update
from sqlmodel import Session, col, select

from runtime.approvals import ledger
from runtime.approvals.ledger import ApprovalKind, ApprovalState
from runtime.settings import Settings
from runtime.standing_agents import approvals, catalog, spend
from runtime.standing_agents.configs import WEEKLY_CREDIT_KEY, effective_credit
from runtime.standing_agents.contracts import (
    AgentStatus,
    AgentType,
    AttentionKind,
    AttentionStatus,
)
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentInstance,
    AttentionRequest,
    SystemConfig,
)
from runtime.standing_agents.modes import catalogue
from runtime.standing_agents.tick_budget import (
    CONFIG_KEYS,
    foundational_active,
    resolve_tick_budget,
    settings_budget,
)
from runtime.standing_agents.workflow_contracts import BudgetReached
from runtime.store.engine import Store
from runtime.timestamps import aware_utc, iso_ms

# How a resume resolves the attention request (`resolution`).
RESUMED = "resumed"
CLEARED = "cleared"
_AXIS_UNITS = {
    "tokens": "tokens",
    "tool_calls": "tool calls",
    "seconds": "seconds",
    "cost_usd": "dollars",
    "turns": "model turns",
    spend.CREDIT_AXIS: "dollars over 7 days",
}


def pause_in(
    db: Session,
    settings: Settings,
    instance: AgentInstance,
    reached: BudgetReached,
    event_id: str,
    now: datetime,
) -> str | None:
    """Inside the tick's write: pause an Active agent on `reached` and raise its one
    `budget_reached` request; returns the request's id (None: the agent was not Active,
    e.g. an operator stopped it during the tick, and their pause stands)."""
    if instance.status != AgentStatus.ACTIVE.value:
        return None
    credit = effective_credit(spend.configs_in(db, instance.tenant), settings)
    spent = spend.window_spend(db, instance.tenant, now)
    if credit.enabled and spent.total_usd >= credit.weekly_cap_usd:
        # The week's credit is spent too: that is what holds the agent (a new tick would
        # have a fresh tick budget, not a fresh credit), and it lifts by itself.
        reached = BudgetReached(axis=spend.CREDIT_AXIS)
    if reached.axis == spend.CREDIT_AXIS:
        # Spent, or too little left for the refused call's worst case: it lifts when the
        # window's spend drops below the cap minus that (None: only an operator lifts it).
        threshold = credit.weekly_cap_usd - (reached.reserve or 0.0)
        if not credit.enabled or spent.total_usd < threshold:
            return None  # not held by the credit after all (a stale foundational snapshot)
        reached = reached.model_copy(
            update={
                "cap": credit.weekly_cap_usd,
                "spent": spent.total_usd,
                "resume_at": spend.below_cap_at(db, instance.tenant, now, threshold),
                "reserve": reached.reserve or 0.0,
            }
        )
    op_id = f"budget/{instance.instance_id}/{event_id}"
    decision_id = str(uuid.uuid5(uuid.NAMESPACE_URL, op_id))
    open_request = db.exec(
        select(AttentionRequest).where(
            col(AttentionRequest.soa_instance_id) == instance.instance_id,
            col(AttentionRequest.kind) == AttentionKind.BUDGET_REACHED.value,
            col(AttentionRequest.status) == AttentionStatus.OPEN.value,
        )
    ).first()
    if open_request is not None:  # one request per pause: the open one says the latest
        decision_id = open_request.decision_id
    payload: dict[str, Any] = {"axis": reached.axis, "cap": reached.cap, "spent": reached.spent}
    if reached.resume_at is not None:
        payload["resumeAt"] = iso_ms(reached.resume_at)
    pause = payload | {
        "decisionId": decision_id,
        "eventId": event_id,
        "since": iso_ms(now),
        "capKey": _config_key(reached.axis),
        "mode": instance.active_mode,
        # Below this the window's spend lifts a credit pause (its cap minus the refused
        # call's worst case).
        "liftsBelow": (reached.cap or 0.0) - (reached.reserve or 0.0)
        if reached.axis == spend.CREDIT_AXIS
        else None,
    }
    # A compare-and-swap, last in the tick's write (events before the instance row, as
    # every writer orders them): an operator's stop committed meanwhile wins, and the
    # agent is not paused on a budget on top of it.
    taken = db.execute(
        update(AgentInstance)
        .where(
            col(AgentInstance.instance_id) == instance.instance_id,
            col(AgentInstance.status) == AgentStatus.ACTIVE.value,
            col(AgentInstance.generation) == instance.generation,
        )
        .values(
            status=AgentStatus.PAUSED.value,
            budget_pause=pause,
            budget_pause_id=decision_id,
            updated_at=now,
        )
    )
    if taken.rowcount != 1:  # type: ignore[attr-defined]
        return None
    body = _describe(reached)
    if open_request is not None:
        open_request.body = body
        open_request.payload = payload
        db.add(open_request)
    elif db.get(AttentionRequest, decision_id) is None:
        db.add(
            AttentionRequest(
                decision_id=decision_id,
                tenant=instance.tenant,
                kind=AttentionKind.BUDGET_REACHED.value,
                source="soa",
                soa_instance_id=instance.instance_id,
                title=f"Budget reached: {reached.axis}",
                body=body,
                payload=payload,
                status=AttentionStatus.OPEN.value,
                op_id=op_id,
                created_at=now,
            )
        )
    db.refresh(instance)
    return decision_id


def _config_key(axis: str) -> str | None:
    """The system_configs key that sets `axis` (a mode's own override may set it too)."""
    if axis == spend.CREDIT_AXIS:
        return WEEKLY_CREDIT_KEY
    return next((k for k, field in CONFIG_KEYS.items() if field == f"max_{axis}"), None)


def _describe(reached: BudgetReached) -> str:
    unit = _AXIS_UNITS.get(reached.axis, reached.axis)
    text = (
        f"The agent stopped at its {reached.axis} budget ({reached.spent:g} of {reached.cap:g}"
        f" {unit}) and is paused: nothing runs until the cap is raised"
        if reached.cap is not None and reached.spent is not None
        else f"The agent stopped at its {reached.axis} budget and is paused"
    )
    key = _config_key(reached.axis)
    if key is not None:
        text += f" ({key}; or, where the agent's mode sets this axis, a move to another mode)"
    if reached.resume_at is not None:
        text += f" or the window regenerates at {iso_ms(reached.resume_at)}"
    return text + ", or an operator starts it."


def resume_at(instance: AgentInstance) -> datetime | None:
    """When a Paused agent's weekly credit regenerates (None: not paused on it)."""
    pause = instance.budget_pause
    if instance.status != AgentStatus.PAUSED.value or pause is None:
        return None
    return _instant(pause.get("resumeAt"))


def _instant(raw: Any) -> datetime | None:
    """An ISO instant of the pause's JSON (None: absent or not one: a hand-edited row)."""
    if not isinstance(raw, str):
        return None
    try:
        return aware_utc(datetime.fromisoformat(raw))
    except ValueError:
        return None


def lifted(store: Store, settings: Settings, instance: AgentInstance, now: datetime) -> str | None:
    """Why what paused `instance` no longer holds (None: it still does)."""
    pause = instance.budget_pause or {}
    axis = str(pause.get("axis", ""))
    cap = pause.get("cap")
    since = _instant(pause.get("since")) or aware_utc(now)
    with store.session() as db:
        configs = spend.configs_in(db, instance.tenant)
        changed = db.exec(
            select(func.max(SystemConfig.updated_at)).where(
                col(SystemConfig.tenant) == instance.tenant
            )
        ).one()
    if axis == spend.CREDIT_AXIS:
        regenerates = resume_at(instance)
        if regenerates is not None and regenerates <= aware_utc(now):
            below = pause.get("liftsBelow")
            with store.session() as db:
                spent = spend.window_spend(db, instance.tenant, now).total_usd
            if not isinstance(below, int | float) or spent < below:
                return "the credit window regenerated"
    # Only an operator's change since the pause lifts it otherwise (a config write, a
    # mode change): the API's settings are not taken for a raise of the worker's.
    operator_changed = (changed is not None and aware_utc(changed) > since) or (
        instance.active_mode != pause.get("mode", instance.active_mode)
    )
    if not operator_changed:
        return None
    if axis == spend.CREDIT_AXIS:
        credit = effective_credit(configs, settings)
        if not credit.enabled:
            return "credit enforcement was turned off"
        if not isinstance(cap, int | float) or credit.weekly_cap_usd > cap:
            return f"the weekly credit was raised to {credit.weekly_cap_usd:g}"
        return None
    if foundational_active(
        instance.is_building_starting_workset, instance.workset_deadline_utc, now
    ):
        return "the foundational phase lifts the tick's budget"
    agent_type = AgentType(instance.agent_type)
    try:
        mode = catalog.resolve_mode(agent_type, instance.active_mode, catalogue(store, agent_type))
        override = mode.budget_override
    except catalog.ModeCatalogError:
        override = None
    budget = resolve_tick_budget(
        configs=configs,
        settings_layer=settings_budget(settings),
        mode_override=override,
        foundational=False,
    )
    now_cap = getattr(budget, f"max_{axis}", None)
    if now_cap is None:
        return f"the {axis} budget is no longer capped"
    if not isinstance(cap, int | float) or now_cap > cap:
        return f"the {axis} budget was raised to {now_cap:g}"
    return None


def resume_if_lifted(
    store: Store, settings: Settings, instance_id: str, now: datetime
) -> AgentInstance | None:
    """Resume the agent if it is paused on a budget that no longer holds; returns the
    resumed row (None: not paused on a budget, or still held)."""
    with store.session() as db:
        instance = db.get(AgentInstance, instance_id)
    if instance is None or instance.budget_pause_id is None:
        return None
    if instance.status != AgentStatus.PAUSED.value:
        return None
    why = lifted(store, settings, instance, now)
    if why is None:
        _refresh_resume_at(store, settings, instance, now)
        return None
    with store.transaction() as db:
        if not _resume_in(db, instance, now, why):
            return None  # the compare-and-swap lost: nothing was written
        return db.get(AgentInstance, instance_id, populate_existing=True)


def _refresh_resume_at(
    store: Store, settings: Settings, instance: AgentInstance, now: datetime
) -> None:
    """A regeneration time past that did not lift the pause (the window still holds the
    cap): the next one, so that the workflow's timer does not fire again at once."""
    regenerates = resume_at(instance)
    if regenerates is None or regenerates > aware_utc(now):
        return
    pause = dict(instance.budget_pause or {})
    below = pause.get("liftsBelow")
    with store.transaction() as db:
        if not isinstance(below, int | float):
            below = effective_credit(spend.configs_in(db, instance.tenant), settings).weekly_cap_usd
        following = spend.below_cap_at(db, instance.tenant, now, float(below))
        if following is not None:
            pause["resumeAt"] = iso_ms(following)
        else:
            pause.pop("resumeAt", None)
        db.execute(
            update(AgentInstance)
            .where(
                col(AgentInstance.instance_id) == instance.instance_id,
                col(AgentInstance.budget_pause_id) == instance.budget_pause_id,
            )
            .values(budget_pause=pause)
        )


def resume_lifted(
    store: Store, settings: Settings, now: datetime, tenant: str | None = None
) -> list[AgentInstance]:
    """Every agent (of `tenant`, or all) paused on a budget that no longer holds, resumed."""
    with store.session() as db:
        query = select(AgentInstance.instance_id).where(
            col(AgentInstance.status) == AgentStatus.PAUSED.value,
            col(AgentInstance.budget_pause_id).is_not(None),
        )
        if tenant is not None:
            query = query.where(col(AgentInstance.tenant) == tenant)
        ids = list(db.exec(query).all())
    resumed = [resume_if_lifted(store, settings, i, now) for i in ids]
    return [row for row in resumed if row is not None]


def _resume_in(db: Session, instance: AgentInstance, now: datetime, why: str) -> bool:
    taken = db.execute(
        update(AgentInstance)
        .where(
            col(AgentInstance.instance_id) == instance.instance_id,
            col(AgentInstance.status) == AgentStatus.PAUSED.value,
            col(AgentInstance.generation) == instance.generation,
            # This pause, not one cleared meanwhile or another taken since.
            col(AgentInstance.budget_pause_id) == instance.budget_pause_id,
        )
        .values(
            status=AgentStatus.ACTIVE.value,
            budget_pause=None,
            budget_pause_id=None,
            updated_at=now,
        )
    )
    if taken.rowcount != 1:  # type: ignore[attr-defined]
        return False
    _resolve(db, instance.budget_pause or {}, now, RESUMED, why)
    _undefer(db, instance, now)
    return True


def _undefer(db: Session, instance: AgentInstance, now: datetime) -> None:
    """The events the spent credit deferred to the window's regeneration are due now."""
    deferred = db.exec(
        select(AgentEventRow).where(
            col(AgentEventRow.instance_id) == instance.instance_id,
            col(AgentEventRow.generation) == instance.generation,
            col(AgentEventRow.consumed_at).is_(None),
            col(AgentEventRow.visible_at) > now,
            # Not the heartbeat (it keeps its time); an ops incident's tick is due too.
            ~col(AgentEventRow.event_id).startswith("tick/", autoescape=True),
        )
    ).all()
    for row in deferred:
        row.visible_at = now
        db.add(row)


def clear_in(
    db: Session, instance_id: str, now: datetime, why: str, *, undefer: bool = False
) -> dict[str, Any] | None:
    """An operator took the agent over (start, stop, reset): the budget pause is no longer
    the agent's to lift, and its request is resolved; a start (`undefer`) also makes the
    events the credit deferred due now. Returns the pause cleared."""
    instance = db.get(AgentInstance, instance_id, populate_existing=True)
    if instance is None or instance.budget_pause_id is None:
        return None
    pause = dict(instance.budget_pause or {})
    db.execute(
        update(AgentInstance)
        .where(col(AgentInstance.instance_id) == instance_id)
        .values(budget_pause=None, budget_pause_id=None)
    )
    _resolve(db, pause, now, CLEARED, why)
    if undefer:
        _undefer(db, instance, now)
    return pause


def _resolve(
    db: Session, pause: dict[str, Any], now: datetime, resolution: str, notes: str
) -> None:
    decision_id = pause.get("decisionId")
    if not decision_id:
        return
    approvals.resolve_by_agentrt(
        db, col(AttentionRequest.decision_id) == decision_id, resolution, notes, now
    )
    # What the request was for is over (the cap raised, the window regenerated, a start):
    # nobody answered it.
    ledger.settle(
        db.connection(),
        ledger.approval_id(ApprovalKind.DECISION, decision_id),
        ApprovalState.SUPERSEDED,
        now=now,
        reason=notes,
        answer=resolution,
    )
