"""The ops digest: agentrt's own health, as a standing agent sees it (spec §3.4.3).

One probe serves the tick (its bucket feeds `PlanInputHash`, so an unchanged
health keeps an idle tick idle), the `soa_query_telemetry` tool (the detail) and the
API's ops watch, which wakes the SOAs when the bucket changes (ops_watch.py). It reads
only agentrt's store: failed model calls, failed tool actions, turns that ended
blocked, agents closed as stuck, the queue lag (how long the oldest due event of an
Active agent has waited), an error spike (the last 15 minutes against the hour before),
the journal lag (turns whose stream entry is missing), and the failed and timed-out
workflows of the last 24 hours that the API last read from Temporal's visibility.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, literal
from sqlmodel import Session, col, select

from runtime.llm.attempt_log import IN_FLIGHT
from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.contracts import ActionOutcome, AgentStatus, DecisionKind
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentInstance,
    AgentLedgerAction,
    AgentLedgerTurn,
    OpsBucketState,
)
from runtime.store.engine import Store
from runtime.store.models import JournalEvent
from runtime.timestamps import aware_utc

WINDOW = timedelta(hours=24)
SPIKE_WINDOW = timedelta(minutes=15)
# A spike: at least this many errors in SPIKE_WINDOW, and 3x the rate of the hour before.
SPIKE_MIN_ERRORS = 5
# A turn whose `agent.turn` entry is still missing this long after it is journal lag.
JOURNAL_GRACE = timedelta(seconds=60)
JOURNAL_LAG_DEGRADED_S = 300


def probe(store: Store, tenant: str, now: datetime) -> dict[str, Any]:
    """The tenant's health over the last 24 hours (counts only: cheap and bounded)."""
    with store.session() as db:
        return probe_in(db, tenant, now)


def probe_in(db: Session, tenant: str, now: datetime) -> dict[str, Any]:
    """`probe` inside the caller's transaction (the ops watch's, under its lock)."""
    since = now - WINDOW
    failed_calls = _failed_calls(db, tenant, since)
    failed_actions = _failed_actions(db, tenant, since)
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
    recent = _errors_between(db, tenant, now - SPIKE_WINDOW, now)
    before = _errors_between(
        db, tenant, now - SPIKE_WINDOW - timedelta(hours=1), now - SPIKE_WINDOW
    )
    journal_lag = _journal_lag(db, tenant, now)
    visibility = db.get(OpsBucketState, tenant)
    # The hour before holds four spike windows: three times its rate per window.
    spike = recent >= SPIKE_MIN_ERRORS and recent * 4 >= 3 * before
    failed_workflows = visibility.failed_workflows if visibility is not None else None
    timed_out = visibility.timed_out_workflows if visibility is not None else None
    workflow_failures = (failed_workflows or 0) + (timed_out or 0)
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
        "recentErrors": recent,
        "errorSpike": spike,
        "journalLagSeconds": journal_lag,
        # From Temporal's visibility, as the API last read it (None: not read yet).
        "failedWorkflows": failed_workflows,
        "timedOutWorkflows": timed_out,
        "bucket": bucket(
            int(failed_calls) + int(failed_actions),
            int(stuck),
            workflow_failures=workflow_failures,
            spike=spike,
            journal_lag_s=journal_lag,
        ),
    }


def bucket(
    errors: int,
    closed: int,
    *,
    workflow_failures: int = 0,
    spike: bool = False,
    journal_lag_s: float = 0.0,
) -> str:
    """Coarse on purpose: only a change of bucket makes an idle heartbeat plan again (and
    wakes the SOAs: ops_watch.py)."""
    if closed or errors >= 10 or spike or workflow_failures >= 5:
        return "failing"
    if errors or workflow_failures or journal_lag_s >= JOURNAL_LAG_DEGRADED_S:
        return "degraded"
    return "healthy"


def _errors_between(db: Session, tenant: str, start: datetime, end: datetime) -> int:
    """Failed model attempts and failed tool actions of the tenant in [start, end)."""
    return _failed_calls(db, tenant, start, end) + _failed_actions(db, tenant, start, end)


def _failed_calls(db: Session, tenant: str, start: datetime, end: datetime | None = None) -> int:
    """The tenant's model attempts that failed from `start` (to `end`); one in flight has
    not failed."""
    query = (
        select(func.count())
        .select_from(LlmCallAttempt)
        .where(
            col(LlmCallAttempt.tenant) == tenant,
            col(LlmCallAttempt.outcome).not_in(["ok", IN_FLIGHT]),
            col(LlmCallAttempt.created_at) >= start,
        )
    )
    if end is not None:
        query = query.where(col(LlmCallAttempt.created_at) < end)
    return int(db.exec(query).one())


def _failed_actions(db: Session, tenant: str, start: datetime, end: datetime | None = None) -> int:
    """The tenant's agents' tool actions that ended in an error, from `start` (to `end`)."""
    query = (
        select(func.count())
        .select_from(AgentLedgerAction)
        .join(
            AgentLedgerTurn,
            (col(AgentLedgerTurn.instance_id) == col(AgentLedgerAction.instance_id))
            & (col(AgentLedgerTurn.seq) == col(AgentLedgerAction.ledger_seq)),
        )
        .where(
            col(AgentLedgerTurn.tenant) == tenant,
            col(AgentLedgerTurn.created_at) >= start,
            col(AgentLedgerAction.outcome) == ActionOutcome.ERROR.value,
        )
    )
    if end is not None:
        query = query.where(col(AgentLedgerTurn.created_at) < end)
    return int(db.exec(query).one())


def _journal_lag(db: Session, tenant: str, now: datetime) -> float:
    """How long the oldest turn of the last hour has waited for its `agent.turn` journal
    entry (0: none is missing past the grace): what an SSE reader has not seen."""
    stream = (
        literal("agent/") + col(AgentLedgerTurn.tenant) + "/" + col(AgentLedgerTurn.instance_id)
    )
    oldest = db.exec(
        select(func.min(AgentLedgerTurn.created_at))
        .outerjoin(
            JournalEvent,
            (col(JournalEvent.stream) == stream)
            & (col(JournalEvent.dedupe_key) == literal("turn/") + col(AgentLedgerTurn.event_id)),
        )
        .where(
            col(AgentLedgerTurn.tenant) == tenant,
            col(AgentLedgerTurn.created_at) >= now - timedelta(hours=1),
            col(AgentLedgerTurn.created_at) <= now - JOURNAL_GRACE,
            col(JournalEvent.id).is_(None),
        )
    ).one()
    return round((now - aware_utc(oldest)).total_seconds(), 1) if oldest is not None else 0.0
