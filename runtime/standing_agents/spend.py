"""What a tenant's standing agents spend on models, and the gate that reserves before they do
(spec §3.4.9, §3.6; issue 21, item 8).

Spend is the sum of the agents' attempt rows in the rolling credit window: each row's
`cost_usd`, or its `reserved_usd` while its spend is unknown (in flight, or ended as a
timeout: runtime/llm/reservation.py). `AgentSpendGate` is what the model step hands the
gateway: before an attempt is sent, its worst case must fit what is left of the tick's
dollar axis and, under one lock per tenant, of the weekly credit, counting every other
agent's attempts in flight. Ten agents ticking at once against a credit that covers three
calls therefore make at most three; the overshoot is only what a provider bills beyond
the reservation of a call already admitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import and_, case, func, or_
from sqlmodel import Session, col, select

from runtime.llm.models import LlmCallAttempt
from runtime.llm.reservation import UNSETTLED_OUTCOMES, SpendRefusal
from runtime.settings import Settings
from runtime.standing_agents.configs import effective_credit
from runtime.standing_agents.models import SystemConfig
from runtime.standing_agents.tick_budget import CREDIT_AXIS as WEEKLY_CREDIT_AXIS
from runtime.standing_agents.tick_budget import (
    CREDIT_WINDOW,
    TICK_COST_AXIS,
    credit_allows,
)
from runtime.store.atomic import serialize
from runtime.store.engine import Store
from runtime.timestamps import aware_utc

# `llm_call(_attempt).owner_kind` of a standing agent's model calls (spend is their sum).
OWNER_KIND = "agent"
# The refusal axes: the tick's dollar budget (its TickBudget axis) and the weekly credit.
TICK_AXIS: Final = TICK_COST_AXIS
CREDIT_AXIS: Final = WEEKLY_CREDIT_AXIS


@dataclass(frozen=True)
class Spend:
    total_usd: float
    oldest: datetime | None


def configs_in(db: Session, tenant: str) -> dict[str, Any]:
    rows = db.exec(select(SystemConfig).where(col(SystemConfig.tenant) == tenant)).all()
    return {row.key: row.value for row in rows}


_UNSETTLED = and_(
    col(LlmCallAttempt.outcome).in_(UNSETTLED_OUTCOMES),
    col(LlmCallAttempt.reserved_usd) > col(LlmCallAttempt.cost_usd),
)
# What an attempt counts for: its cost, or its reservation while its spend is unknown.
_AMOUNT = case((_UNSETTLED, col(LlmCallAttempt.reserved_usd)), else_=col(LlmCallAttempt.cost_usd))


def window_spend(db: Session, tenant: str, now: datetime, *, excluding: str | None = None) -> Spend:
    """The tenant's agents' spend in the credit window ending at `now`, reservations of
    attempts whose spend is unknown included (`excluding`: an attempt id left out)."""
    query = select(func.sum(_AMOUNT), func.min(LlmCallAttempt.created_at)).where(
        col(LlmCallAttempt.tenant) == tenant,
        col(LlmCallAttempt.owner_kind) == OWNER_KIND,
        col(LlmCallAttempt.created_at) > now - CREDIT_WINDOW,
        or_(col(LlmCallAttempt.cost_usd) > 0, _UNSETTLED),
    )
    if excluding is not None:
        query = query.where(col(LlmCallAttempt.attempt_id) != excluding)
    total, oldest = db.exec(query).one()
    return Spend(float(total or 0.0), aware_utc(oldest) if oldest is not None else None)


def below_cap_at(db: Session, tenant: str, now: datetime, cap_usd: float) -> datetime | None:
    """When the rolling window's spend next drops below `cap_usd` as its oldest attempts
    leave it (None: it is below already, or nothing spent could leave it)."""
    rows = db.exec(
        select(LlmCallAttempt.created_at, _AMOUNT)
        .where(
            col(LlmCallAttempt.tenant) == tenant,
            col(LlmCallAttempt.owner_kind) == OWNER_KIND,
            col(LlmCallAttempt.created_at) > now - CREDIT_WINDOW,
            or_(col(LlmCallAttempt.cost_usd) > 0, _UNSETTLED),
        )
        .order_by(col(LlmCallAttempt.created_at))
    ).all()
    total = sum(float(amount or 0.0) for _at, amount in rows)
    for at, amount in rows:
        if total < cap_usd:
            break
        total -= float(amount or 0.0)
        if total < cap_usd:
            return aware_utc(at) + CREDIT_WINDOW
    return None


def tick_spend(db: Session, call_prefix: str, *, excluding: str) -> float:
    """What a tick's own attempts (call ids under `call_prefix`) cost or hold: a timed-out
    attempt the chain fell back from counts its reservation here too."""
    total = db.exec(
        select(func.sum(_AMOUNT)).where(
            col(LlmCallAttempt.call_id).startswith(call_prefix, autoescape=True),
            col(LlmCallAttempt.attempt_id) != excluding,
        )
    ).one()
    return float(total or 0.0)


def spend_in_window(store: Store, tenant: str, now: datetime) -> Spend:
    with store.session() as db:
        return window_spend(db, tenant, now)


@dataclass(frozen=True)
class CreditGate:
    ok: bool
    # What is left of the weekly cap (None: the credit gate is off).
    remaining_usd: float | None
    regenerates_at: datetime | None


def credit_gate(
    store: Store,
    settings: Settings,
    tenant: str,
    now: datetime,
    configs: Mapping[str, Any] | None = None,
) -> CreditGate:
    """The tenant's weekly credit against what its agents spent (and hold) in the window."""
    with store.session() as db:
        credit = effective_credit(
            configs if configs is not None else configs_in(db, tenant), settings
        )
        spend = window_spend(db, tenant, now)
    ok = credit_allows(
        enabled=credit.enabled,
        weekly_cap_usd=credit.weekly_cap_usd,
        spent_in_window_usd=spend.total_usd,
    )
    regenerates = None
    if not ok and spend.oldest is not None:
        regenerates = spend.oldest + CREDIT_WINDOW
    remaining = max(0.0, credit.weekly_cap_usd - spend.total_usd) if credit.enabled else None
    return CreditGate(ok=ok, remaining_usd=remaining, regenerates_at=regenerates)


@dataclass(frozen=True)
class AgentSpendGate:
    """The `SpendGate` of one model call of a tick (runtime/llm/reservation.py)."""

    settings: Settings
    tenant: str
    now: datetime
    # The tick's dollar axis (None: unlimited) and what the tick spent before this call.
    tick_cap_usd: float | None
    tick_spent_usd: float
    # The call ids of the tick's model calls start with it (agent/{tenant}/{id}/{event}/).
    tick_call_prefix: str | None = None

    def __call__(self, db: Session, reserve_usd: float, attempt_id: str) -> SpendRefusal | None:
        # First in the transaction: concurrent reservations of the tenant's agents queue
        # here, each seeing the ones admitted before it.
        serialize(db, f"credit/{self.tenant}")
        if self.tick_cap_usd is not None:
            spent = self.tick_spent_usd
            if self.tick_call_prefix is not None:
                spent = max(spent, tick_spend(db, self.tick_call_prefix, excluding=attempt_id))
            if spent + reserve_usd > self.tick_cap_usd:
                return SpendRefusal(
                    axis=TICK_AXIS,
                    cap_usd=self.tick_cap_usd,
                    spent_usd=spent,
                    reserve_usd=reserve_usd,
                )
        credit = effective_credit(configs_in(db, self.tenant), self.settings)
        if not credit.enabled:
            return None
        spend = window_spend(db, self.tenant, self.now, excluding=attempt_id)
        cap = credit.weekly_cap_usd
        if spend.total_usd < cap and spend.total_usd + reserve_usd <= cap:
            return None
        return SpendRefusal(
            axis=CREDIT_AXIS,
            cap_usd=cap,
            spent_usd=spend.total_usd,
            reserve_usd=reserve_usd,
            regenerates_at=spend.oldest + CREDIT_WINDOW if spend.oldest is not None else None,
        )
