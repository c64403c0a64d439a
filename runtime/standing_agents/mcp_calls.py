"""The store side of a standing agent's MCP calls that need a human (spec §1: an agent
never runs a consequential call on its own).

A call to an MCP tool not annotated `readOnlyHint: true` is not run: it becomes a
decision (`kind: mcp_call`) on the tenant's queue, written once per tool-call operation
id, carrying the server, the server's own tool name, the fingerprint of the server's
configuration, the exact arguments and their digest (`payload.digest`,
runtime/approvals/binding.py). Answering it enqueues the agent's
`OperatorAnsweredEscalation` as every decision does (decision_queue.respond, which records the
digest an `approve` approved); the tick of that event, when the answer is `approve`, runs
the call once under an operation id derived from the decision, and only if its arguments
still hash to the approved digest (activities/standing_agents/mcp_tools), and the outcome
is written into the event's payload (`mcpCall`), which is how it reaches the agent: as
its next event.
"""

from __future__ import annotations

import json
from typing import Any, Final

from sqlmodel import col, select

from runtime.approvals.binding import DigestMismatch, call_digest
from runtime.mcp.contracts import McpBinding
from runtime.standing_agents.contracts import APPROVE, AttentionKind, EventKind
from runtime.standing_agents.control_tools import attention_request
from runtime.standing_agents.episode import generation_start
from runtime.standing_agents.models import AgentEventRow, AttentionRequest
from runtime.standing_agents.tool_context import ToolContext
from runtime.store import Store
from runtime.timestamps import aware_utc

OPTIONS: Final = [APPROVE, "reject"]
# What the decision's body shows of the arguments (the payload keeps them whole).
BODY_ARGUMENTS_MAX: Final = 4000
# What the event's payload keeps of the call's output (the ledger action keeps it whole).
EVENT_OUTPUT_MAX: Final = 4000
PAYLOAD_KEY: Final = "mcpCall"


def propose(
    ctx: ToolContext,
    *,
    tool: str,
    binding: McpBinding,
    arguments: dict[str, Any],
    description: str,
    annotations: dict[str, Any],
) -> AttentionRequest:
    """The call's decision, once per the tool call's operation id."""
    whole = json.dumps(arguments, sort_keys=True, ensure_ascii=False)
    shown = whole[:BODY_ARGUMENTS_MAX]
    cut = " (cut: the decision's payload holds them whole)" if len(whole) > len(shown) else ""
    digest = call_digest(tool, arguments, **call_target(binding))
    body = (
        f"The agent asks to call {binding.tool} of MCP server {binding.server} "
        f"({tool}), which is not annotated read-only, with these arguments{cut}:\n"
        f"{shown}\n"
        "Approve to run it once, exactly so (its digest: "
        f"{digest}); its result reaches the agent as its next "
        f"event. The server describes the tool as: {json.dumps(description[:500])}"
    )
    payload = {
        "tool": tool,
        "server": binding.server,
        "serverTool": binding.tool,
        "fingerprint": binding.fingerprint,
        "arguments": arguments,
        "annotations": annotations,
        "digest": digest,
    }
    return attention_request(
        ctx,
        AttentionKind.MCP_CALL,
        f"Run MCP tool {binding.tool} of {binding.server}?",
        body,
        list(OPTIONS),
        payload,
    )


def call_target(binding: McpBinding) -> dict[str, str]:
    """Where an MCP call goes, as its digest binds it (the fingerprint apart: a client is
    shown the digest, and the fingerprint hashes the server's entry, secrets included)."""
    return {"server": binding.server, "serverTool": binding.tool}


def digest_of(row: AttentionRequest) -> str:
    """The digest of the call an `mcp_call` decision records now."""
    raw = row.payload.get("arguments")
    arguments = raw if isinstance(raw, dict) else {}
    return call_digest(
        str(row.payload.get("tool") or ""), arguments, **call_target(binding_of(row))
    )


def approved_digest(row: AttentionRequest, resolution: str, digest: str | None) -> str | None:
    """What an answer to a decision approves: for an `approve` of an MCP call, the digest
    of the call as recorded now (recomputed, not the payload's word for it), which a
    `digest` the answer names must be; else None. A rejection needs no binding (it is
    always safe); a decision that binds no call refuses a digest (DigestMismatch, 409)."""
    is_call = row.kind == AttentionKind.MCP_CALL.value
    approved = digest_of(row) if is_call and resolution == APPROVE else None
    if digest is not None and (approved is not None or not is_call) and digest != approved:
        mismatch = DigestMismatch(decision_id=row.decision_id, expected=approved, given=digest)
        raise mismatch.application_error()
    return approved


def decision_of(store: Store, tenant: str, decision_id: str) -> AttentionRequest | None:
    with store.session() as db:
        row = db.get(AttentionRequest, decision_id)
    if row is None or row.tenant != tenant or row.kind != AttentionKind.MCP_CALL.value:
        return None
    return row


def stale_refusal(
    store: Store, row: AttentionRequest, instance_id: str, generation: int
) -> str | None:
    """Why an approved call is not the agent's to run any more: another agent's, or
    proposed before the agent was reset (its memory of it is gone)."""
    if row.soa_instance_id != instance_id:
        return "the decision was raised by another agent"
    with store.session() as db:
        since = generation_start(db, instance_id, generation)
    if aware_utc(row.created_at) < since:
        return "the agent was reset since it proposed this call; it was not called"
    return None


def approved_call(
    store: Store, tenant: str, kind: EventKind, payload: dict[str, Any]
) -> str | None:
    """The decision whose approved MCP call an event carries, if it does."""
    if kind != EventKind.OPERATOR_ANSWERED_ESCALATION:
        return None
    decision_id = payload.get("decisionId")
    if not isinstance(decision_id, str):
        return None
    row = decision_of(store, tenant, decision_id)
    if row is None or row.resolution != APPROVE:
        return None
    return decision_id


def binding_of(row: AttentionRequest) -> McpBinding:
    payload = row.payload
    return McpBinding(
        server=str(payload.get("server", "")),
        tool=str(payload.get("serverTool", "")),
        fingerprint=str(payload.get("fingerprint", "")),
    )


def record_outcome(store: Store, event_id: str, outcome: dict[str, Any]) -> None:
    """Put the call's outcome into the event's payload (the same outcome every time)."""
    with store.transaction() as db:
        row = db.exec(select(AgentEventRow).where(col(AgentEventRow.event_id) == event_id)).first()
        if row is None or row.payload.get(PAYLOAD_KEY) == outcome:
            return
        row.payload = {**row.payload, PAYLOAD_KEY: outcome}
        db.add(row)
