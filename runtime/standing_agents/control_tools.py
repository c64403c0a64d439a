"""The control verbs among a standing agent's governed tools: a message to the operator,
a decision or a mode change proposed (an attention request in the decision queue), the
end of the foundational workset, and a phase's end. Each write is keyed by the call's
operation id (`insert_once`), so a retried activity finds its row.
"""

from __future__ import annotations

from typing import Any

from runtime.standing_agents.contracts import (
    AgentStatus,
    AttentionKind,
    AttentionStatus,
    MessageDirection,
)
from runtime.standing_agents.models import AgentInstance, AgentMessage, AttentionRequest
from runtime.standing_agents.modes import catalogue
from runtime.standing_agents.tool_context import (
    ToolContext,
    ToolInputError,
    insert_once,
    op_uuid,
    text_argument,
)


def send_message(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    row = AgentMessage(
        message_id=op_uuid(ctx.op_id),
        instance_id=ctx.instance_id,
        tenant=ctx.tenant,
        direction=MessageDirection.AGENT.value,
        text=text_argument(arguments, "text"),
        op_id=ctx.op_id,
        created_at=ctx.now,
    )
    stored = insert_once(ctx, row, AgentMessage)
    return {"messageId": stored.message_id}


def attention_request(
    ctx: ToolContext,
    kind: AttentionKind,
    title: str,
    body: str,
    options: list[str] | None,
    payload: dict[str, Any],
) -> AttentionRequest:
    row = AttentionRequest(
        decision_id=op_uuid(ctx.op_id),
        tenant=ctx.tenant,
        kind=kind.value,
        source="soa",
        soa_instance_id=ctx.instance_id,
        title=title[:500],
        body=body,
        options=options,
        payload=payload,
        status=AttentionStatus.OPEN.value,
        op_id=ctx.op_id,
        created_at=ctx.now,
    )
    stored: AttentionRequest = insert_once(ctx, row, AttentionRequest)
    return stored


def propose_decision(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    options = arguments.get("options")
    if options is not None and (
        not isinstance(options, list) or not all(isinstance(o, str) for o in options)
    ):
        raise ToolInputError("options must be a list of strings")
    row = attention_request(
        ctx,
        AttentionKind.DECISION,
        text_argument(arguments, "title"),
        text_argument(arguments, "body"),
        options,
        {},
    )
    return {"decisionId": row.decision_id, "status": row.status}


def propose_mode_change(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    mode = text_argument(arguments, "mode")
    reason = text_argument(arguments, "reason")
    # The catalogue approval validates against (stored modes, code seed fallback).
    allowed = [m.name for m in catalogue(ctx.store, ctx.agent_type)]
    if mode not in allowed:
        raise ToolInputError(f"unknown mode {mode!r}; allowed: {', '.join(allowed)}")
    row = attention_request(
        ctx,
        AttentionKind.MODE_CHANGE,
        f"Change mode to {mode}",
        reason,
        ["approve", "reject"],
        {"mode": mode, "reason": reason},
    )
    return {"decisionId": row.decision_id, "status": row.status, "applied": False}


def workset_complete(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    with ctx.store.transaction() as db:
        row = db.get(AgentInstance, ctx.instance_id)
        if row is not None and row.status != AgentStatus.CLOSED.value:
            row.is_building_starting_workset = False
            db.add(row)
    return {"foundational": False}


def phase_complete(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"ended": "complete", "summary": str(arguments.get("summary") or "")[:2000]}


def phase_blocked(ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"ended": "blocked", "reason": text_argument(arguments, "reason")[:2000]}
