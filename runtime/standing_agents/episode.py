"""The opening of an episode's transcript (spec §3.4.2-§3.4.6, §3.5).

Written by the first model step of a tick into `agent_episode_stream`, never into
workflow history: the system prompt (base + mode fragment), a context message
(open-items roster at the top, the ops digest, the last 12 ledger turns), and the
event message (`Event: <kind>`, the per-event preamble, then the event's text
after a `Text:` line — the only part the scripted model reads for `/call` lines).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from runtime.coding_tasks.contracts import SETTLED
from runtime.coding_tasks.models import CodingTask
from runtime.llm.contracts import ChatMessage
from runtime.standing_agents import catalog, compliance_corpus
from runtime.standing_agents.contracts import (
    AgentEvent,
    AgentType,
    AttentionStatus,
    EventKind,
    ModeDefinition,
)
from runtime.standing_agents.models import (
    AgentEventRow,
    AgentLedgerTurn,
    AttentionRequest,
)
from runtime.standing_agents.ops_digest import probe
from runtime.store.engine import Store
from runtime.timestamps import aware_utc, iso_ms

MEMORY_TURNS = 12
EVENT_PREFIX = "Event: "
TEXT_MARKER = "Text:"
NUDGE = (
    "You answered without calling a tool. Tool calls are your only actions: call the tool "
    "you need, or end the episode with phase_complete (or phase_blocked with the reason)."
)

PREAMBLES: dict[EventKind, str] = {
    EventKind.AGENT_INITIALIZED: "You have just been started. Greet the operator once with "
    "soa_send_message (one or two sentences), then go quiet: call phase_complete.",
    EventKind.OPERATOR_MESSAGE: "The operator wrote to you. Read the message below and answer "
    "it with soa_send_message, then call phase_complete.",
    EventKind.OPERATOR_ANSWERED_ESCALATION: "A human answered one of your escalations. Resume "
    "with their answer below (resolution and notes), then call phase_complete.",
    EventKind.AGENT_TICK: "This is your heartbeat. Look at the open items and the ops digest; "
    "act only if something needs it, else call phase_complete.",
}
# An AgentTick of one of the agent's schedules (runtime/standing_agents/schedules.py).
SCHEDULED_PREAMBLE = (
    "One of your schedules fired (its cron, time zone and note are in the payload). Do "
    "what the note asks, if anything needs doing now, then call phase_complete."
)


def event_text(event: AgentEvent) -> str:
    """The human text an event carries (what `/call` lines of the scripted model live in)."""
    payload = event.payload
    if event.kind == EventKind.OPERATOR_ANSWERED_ESCALATION:
        parts = [str(payload.get("resolution") or ""), str(payload.get("resolutionNotes") or "")]
        return "\n".join(part for part in parts if part)
    return str(payload.get("text") or "")


def event_message(event: AgentEvent) -> ChatMessage:
    preamble = PREAMBLES.get(
        event.kind, "An event arrived (below). Decide whether it needs an action."
    )
    if event.kind == EventKind.AGENT_TICK and "schedule" in event.payload:
        preamble = SCHEDULED_PREAMBLE
    details = {k: v for k, v in event.payload.items() if k != "text"}
    lines = [f"{EVENT_PREFIX}{event.kind.value}", preamble]
    if details:
        lines.append("Payload: " + json.dumps(details, sort_keys=True, default=str)[:4000])
    lines += [TEXT_MARKER, event_text(event)]
    return ChatMessage(role="user", content="\n".join(lines))


def generation_start(db: Session, instance_id: str, generation: int) -> datetime:
    """When the instance's current generation began: its first queued event (the
    AgentInitialized the API writes at creation and at every reset). Rows without a
    generation of their own (messages, tasks, escalations) count from there: a reset
    clears the agent's memory."""
    first = db.exec(
        select(func.min(AgentEventRow.created_at)).where(
            col(AgentEventRow.instance_id) == instance_id,
            col(AgentEventRow.generation) == generation,
        )
    ).one()
    return aware_utc(first) if first is not None else datetime.min.replace(tzinfo=UTC)


def roster(store: Store, instance_id: str, generation: int) -> dict[str, Any]:
    """Open items of the current generation: tasks it created that are not done,
    escalations it raised still open."""
    with store.session() as db:
        since = generation_start(db, instance_id, generation)
        tasks = db.exec(
            select(CodingTask)
            .where(
                col(CodingTask.instance_id) == instance_id,
                col(CodingTask.state).not_in([s.value for s in SETTLED]),
                col(CodingTask.created_at) >= since,
            )
            .order_by(col(CodingTask.created_at))
            .limit(50)
        ).all()
        escalations = db.exec(
            select(AttentionRequest)
            .where(
                col(AttentionRequest.soa_instance_id) == instance_id,
                col(AttentionRequest.status) == AttentionStatus.OPEN.value,
                col(AttentionRequest.created_at) >= since,
            )
            .order_by(col(AttentionRequest.created_at))
            .limit(50)
        ).all()
    return {
        "tasks": [{"taskId": t.task_id, "title": t.title, "state": t.state} for t in tasks],
        "escalations": [
            {"decisionId": a.decision_id, "kind": a.kind, "title": a.title} for a in escalations
        ],
    }


def memory(store: Store, instance_id: str, generation: int) -> list[dict[str, Any]]:
    """The last 12 ledger turns of the current generation, oldest first."""
    with store.session() as db:
        turns = db.exec(
            select(AgentLedgerTurn)
            .where(
                col(AgentLedgerTurn.instance_id) == instance_id,
                col(AgentLedgerTurn.generation) == generation,
            )
            .order_by(col(AgentLedgerTurn.seq).desc())
            .limit(MEMORY_TURNS)
        ).all()
    return [
        {
            "seq": t.seq,
            "at": iso_ms(t.created_at),
            "event": t.event_kind,
            "decision": t.decision_kind,
            "actions": [a.get("tool") for a in t.decision.get("actions", [])],
            "summary": t.reasoning_summary,
        }
        for t in reversed(turns)
    ]


def opening(
    store: Store,
    *,
    tenant: str,
    instance_id: str,
    agent_type: AgentType,
    generation: int,
    event: AgentEvent,
    mode: ModeDefinition,
    now: datetime,
) -> list[ChatMessage]:
    context: dict[str, Any] = {
        "openItems": roster(store, instance_id, generation),
        "opsDigest": probe(store, tenant, now),
        "memory": memory(store, instance_id, generation),
        "activeMode": mode.name,
        "now": iso_ms(now),
    }
    if agent_type is AgentType.COMPLIANCE:
        # §3.4.8: the objective names the tenant's compliance projects and their corpus.
        context["corpus"] = compliance_corpus.corpus(store, tenant)
    return [
        ChatMessage(role="system", content=catalog.system_prompt(agent_type, mode)),
        ChatMessage(
            role="user",
            content="Context (open items first; do not duplicate an open item):\n"
            + json.dumps(context, indent=1, default=str),
        ),
        event_message(event),
    ]
