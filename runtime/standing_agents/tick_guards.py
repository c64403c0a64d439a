"""What a tick's completion decides on the loop guards (runtime/standing_agents/loop_guard.py):
the counters after a turn, the agent's own wake-ups of the last hour, and the `stuck`
request of a close (runtime/standing_agents/ticks.py)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from runtime.settings import Settings
from runtime.standing_agents import heartbeats
from runtime.standing_agents.contracts import AttentionKind, AttentionStatus, EventKind
from runtime.standing_agents.loop_guard import (
    PHASE_BLOCKED_RULE,
    REPEATED_DECISION,
    SELF_WAKE,
    SELF_WAKE_WINDOW_SECONDS,
    LoopVerdict,
    after_planned_turn,
    decision_hash,
)
from runtime.standing_agents.models import AgentInstance, AgentLedgerTurn, AttentionRequest
from runtime.standing_agents.workflow_contracts import CompleteTickInput


def stuck_op_id(request: CompleteTickInput) -> str:
    return f"stuck/{request.instance_id}/{request.event.event_id}"


def loop_verdict(
    db: Session,
    settings: Settings,
    instance: AgentInstance,
    request: CompleteTickInput,
    reasoning: str | None,
) -> LoopVerdict:
    """The loop guards' counters after this turn (runtime/standing_agents/loop_guard.py)."""
    planned = request.llm_call_id is not None
    wakes = 0
    if planned and request.event.event_id.startswith(heartbeats.HEARTBEAT_PREFIX):
        wakes = self_wakes(db, request) + 1
    return after_planned_turn(
        planned=planned,
        this_hash=decision_hash(
            decision_kind=request.decision_kind.value,
            actions=[a.model_dump(mode="json") for a in request.actions],
            wait_condition=request.wait_condition,
            reasoning_summary=reasoning,
        ),
        last_hash=instance.last_decision_hash,
        repeated=instance.repeated_decision_turns,
        max_repeated=settings.agent_max_repeated_decisions,
        self_wakes_in_window=wakes,
        max_self_wakes=settings.agent_max_self_wakes_per_hour,
    )


def self_wakes(db: Session, request: CompleteTickInput) -> int:
    """The planned heartbeat turns of the last hour since the last turn on any other
    event (an operator's or an external one), this turn not included."""
    turns = col(AgentLedgerTurn.instance_id) == request.instance_id
    generation = col(AgentLedgerTurn.generation) == request.generation
    since = request.now - timedelta(seconds=SELF_WAKE_WINDOW_SECONDS)
    # The agent's own wakes are its heartbeats (`tick/...`); an ops incident's tick is an
    # external event like any other (it resets the count).
    heartbeat = (col(AgentLedgerTurn.event_kind) == EventKind.AGENT_TICK.value) & col(
        AgentLedgerTurn.event_id
    ).startswith(heartbeats.HEARTBEAT_PREFIX, autoescape=True)
    last_other = db.exec(
        select(func.max(AgentLedgerTurn.seq)).where(turns, generation, ~heartbeat)
    ).one()
    query = select(func.count()).where(
        turns,
        generation,
        heartbeat,
        col(AgentLedgerTurn.llm_call_id).is_not(None),
        col(AgentLedgerTurn.created_at) > since,
        col(AgentLedgerTurn.event_id) != request.event.event_id,
    )
    if last_other is not None:
        query = query.where(col(AgentLedgerTurn.seq) > last_other)
    return int(db.exec(query).one())


_RULE_TITLES = {
    REPEATED_DECISION: "Agent stuck: closed after the same decision again and again",
    SELF_WAKE: "Agent stuck: closed after waking itself too often",
}


def raise_stuck(db: Session, request: CompleteTickInput, loop: LoopVerdict | None) -> str:
    """The `stuck` request of a close: the phase_blocked rule (`loop` None) or a loop
    guard's, named in its payload's `rule`."""
    op_id = stuck_op_id(request)
    decision_id = str(uuid.uuid5(uuid.NAMESPACE_URL, op_id))
    rule = loop.rule if loop is not None and loop.rule is not None else PHASE_BLOCKED_RULE
    payload: dict[str, Any] = {
        "rule": rule,
        "consecutiveBlockedTurns": request.consecutive_blocked_turns,
    }
    if loop is not None:
        payload["repeatedDecisions"] = loop.repeated_decisions
    db.add(
        AttentionRequest(
            decision_id=decision_id,
            tenant=request.tenant,
            kind=AttentionKind.STUCK.value,
            source="soa",
            soa_instance_id=request.instance_id,
            title=_RULE_TITLES.get(rule, "Agent stuck: closed after repeated blocked turns"),
            body=(loop.detail if loop is not None else None)
            or request.stuck_reason
            or "The agent ended several turns in a row blocked.",
            payload=payload,
            status=AttentionStatus.OPEN.value,
            op_id=op_id,
            created_at=request.now,
        )
    )
    return decision_id
