"""What a client reads of a standing agent's record, as wire models (runtime/wire.py):
a decision of the queue, a message of its conversation, a ledger turn, a model-call
attempt, a change of its mode. Each is built once, from its row, by the module that owns
the row (`decision_queue.decision_view`, `messages.message_view`, `reads.turn_view`,
`reads.attempt_view`, `modes.mode_change_view`); the routes return it, agentrt's MCP
server and the journal dump it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from runtime.wire import WireModel


class DecisionView(WireModel):
    decision_id: str
    kind: Literal["decision", "mode_change", "stuck", "mcp_call", "budget_reached"]
    source: str
    soa_instance_id: str
    title: str
    body: str
    options: list[str] | None
    # An MCP call's fingerprint is not in it (decision_queue.decision_view).
    payload: dict[str, Any]
    status: Literal["open", "resolved"]
    resolution: str | None
    resolution_notes: str | None
    responded_by: str | None = Field(description="Who the answer says it is from (self-declared).")
    answered_by: str | None = Field(
        description="The identity the bearer verified: `admin` (the deployment token) or "
        "`<role>:<name>` of a tenant token.",
    )
    created_at: str | None
    resolved_at: str | None


class MessageView(WireModel):
    message_id: str
    direction: Literal["operator", "agent"]
    text: str
    created_at: str | None


# A ledger turn: the fields its hash chains (runtime/standing_agents/ledger_chain.py), its
# eventId and activeMode, and the hash. No docstring on these models: it would become
# their schema's description.
class LedgerTurn(WireModel):
    seq: int
    event_id: str
    event_kind: str
    decision_kind: str
    decision: dict[str, Any]
    plan_input_hash: str
    llm_call_id: str | None
    served_model: str | None
    cost_usd: float
    active_mode: str | None
    created_at: str
    prev_hash: str | None
    hash: str


class LlmAttempt(WireModel):
    attempt_id: str
    call_id: str
    ordinal: int
    site: str
    provider: str
    requested_model: str
    served_model: str | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    # The worst case held before the call was sent (runtime/llm/reservation.py).
    reserved_usd: float = 0.0
    # As GET /api/v1/llm/attempts: "served" | "requested" | "default" | "builtin", and
    # "reported" | "estimated"; null on a failed attempt or one recorded before they were.
    price_source: str | None = None
    usage_source: str | None = None
    outcome: str
    http_status: int | None
    duration_ms: int
    error: str | None
    created_at: str


# A change of an agent's mode (runtime/standing_agents/modes.py), as the mode routes answer
# it and the journal's `agent.mode_changed` carries it. `from` is a Python keyword: the
# field is `from_`, its wire name given.
class ModeChangeView(WireModel):
    from_: str | None = Field(alias="from")
    to: str
    source: Literal["ui", "approval"]
    actor: str | None
    decision_id: str | None
    created_at: str
