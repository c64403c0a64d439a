"""The ops digest: agentrt's own health, as a standing agent sees it (spec §3.4.3).

One probe serves the tick (its bucket feeds `PlanInputHash`, so an unchanged
health keeps an idle tick idle) and the `soa_query_telemetry` tool (the detail).
It reads only agentrt's store: failed model calls, failed tool actions, turns
that ended blocked, agents closed as stuck, and the queue lag (how long the
oldest due event of an Active agent has waited).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.contracts import ActionOutcome, AgentStatus, DecisionKind
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentInstance,
    AgentLedgerAction,
    AgentLedgerTurn,
)
from runtime.store.engine import Store
from runtime.timestamps import aware_utc

WINDOW = timedelta(hours=24)


def probe(store: Store, tenant: str, now: datetime) -> dict[str, Any]:
    """The tenant's health over the last 24 hours (counts only: cheap and bounded)."""
    since = now - WINDOW
    with store.session() as db:
        failed_calls = db.exec(
            select(func.count())
            .select_from(LlmCallAttempt)
            .where(
                col(LlmCallAttempt.tenant) == tenant,
                col(LlmCallAttempt.outcome) != "ok",
                col(LlmCallAttempt.created_at) >= since,
            )
        ).one()
        failed_actions = db.exec(
            select(func.count())
            .select_from(AgentLedgerAction)
            .join(
                AgentLedgerTurn,
                (col(AgentLedgerTurn.instance_id) == col(AgentLedgerAction.instance_id))
                & (col(AgentLedgerTurn.seq) == col(AgentLedgerAction.ledger_seq)),
            )
            .where(
                col(AgentLedgerTurn.tenant) == tenant,
                col(AgentLedgerTurn.created_at) >= since,
                col(AgentLedgerAction.outcome) == ActionOutcome.ERROR.value,
            )
        ).one()
        waiting_turns = db.exec(
            select(func.count())
            .select_from(AgentLedgerTurn)
            .where(
                col(AgentLedgerTurn.tenant) == tenant,
                col(AgentLedgerTurn.decision_kind) == DecisionKind.WAITING_FOR_EVENT.value,
                col(AgentLedgerTurn.created_at) >= since,
            )
        ).one()
        # Queue lag: the oldest event of an Active agent that fell due and is not taken yet.
        oldest_due = db.exec(
            select(func.min(AgentEventRow.visible_at))
            .join(AgentInstance, col(AgentInstance.instance_id) == col(AgentEventRow.instance_id))
            .where(
                col(AgentInstance.tenant) == tenant,
                col(AgentInstance.status) == AgentStatus.ACTIVE.value,
                col(AgentEventRow.consumed_at).is_(None),
                col(AgentEventRow.visible_at) <= now,
            )
        ).one()
        stuck = db.exec(
            select(func.count())
            .select_from(AgentInstance)
            .where(
                col(AgentInstance.tenant) == tenant,
                col(AgentInstance.status) == AgentStatus.CLOSED.value,
            )
        ).one()
    return {
        "windowHours": int(WINDOW.total_seconds() // 3600),
        "failedModelCalls": int(failed_calls),
        "failedToolActions": int(failed_actions),
        "blockedTurns": int(waiting_turns),
        "closedAgents": int(stuck),
        # Not in the bucket: the tick's own event is always due while it runs.
        "queueLagSeconds": (
            round((now - aware_utc(oldest_due)).total_seconds(), 1) if oldest_due else 0.0
        ),
        "bucket": bucket(int(failed_calls) + int(failed_actions), int(stuck)),
    }


def bucket(errors: int, closed: int) -> str:
    """Coarse on purpose: only a change of bucket makes an idle heartbeat plan again."""
    if closed or errors >= 10:
        return "failing"
    if errors:
        return "degraded"
    return "healthy"
