"""What clients read of an agent's record: ledger turns and model-call attempts.

The ledger routes show the current generation only: a reset starts the agent's
memory, its re-injection and its hash chain over; the older generations' turns
stay in the table for audit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlmodel import col, select

from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.models import AgentInstance, AgentLedgerTurn
from runtime.store.engine import Store
from runtime.timestamps import iso_ms

EXPORT_PAGE = 500


def ledger_page(
    store: Store, instance: AgentInstance, after: int, limit: int
) -> list[AgentLedgerTurn]:
    """Turns of the current generation with `seq > after`, oldest first."""
    with store.session() as db:
        return list(
            db.exec(
                select(AgentLedgerTurn)
                .where(
                    col(AgentLedgerTurn.instance_id) == instance.instance_id,
                    col(AgentLedgerTurn.generation) == instance.generation,
                    col(AgentLedgerTurn.seq) > after,
                )
                .order_by(col(AgentLedgerTurn.seq))
                .limit(limit)
            ).all()
        )


def ledger_all(store: Store, instance: AgentInstance) -> Iterator[AgentLedgerTurn]:
    """The whole current chain, page by page (the export streams it)."""
    after = -1
    while True:
        page = ledger_page(store, instance, after, EXPORT_PAGE)
        yield from page
        if len(page) < EXPORT_PAGE:
            return
        after = page[-1].seq


def turn_body(turn: AgentLedgerTurn) -> dict[str, Any]:
    """The wire shape of a turn: the fields its hash covers, in the ledger's words."""
    return {
        "seq": turn.seq,
        "eventId": turn.event_id,
        "eventKind": turn.event_kind,
        "decisionKind": turn.decision_kind,
        "decision": turn.decision,
        "planInputHash": turn.plan_input_hash,
        "llmCallId": turn.llm_call_id,
        "servedModel": turn.served_model,
        "costUsd": turn.cost_usd,
        "activeMode": turn.active_mode,
        "createdAt": iso_ms(turn.created_at),
        "prevHash": turn.prev_hash,
        "hash": turn.hash,
    }


def llm_attempts(store: Store, tenant: str, instance_id: str, limit: int) -> list[LlmCallAttempt]:
    """Every attempt of the agent's model calls, failed ones included, newest last."""
    with store.session() as db:
        rows = db.exec(
            select(LlmCallAttempt)
            .where(
                col(LlmCallAttempt.owner_kind) == "agent",
                col(LlmCallAttempt.owner_id) == instance_id,
                col(LlmCallAttempt.tenant) == tenant,
            )
            .order_by(col(LlmCallAttempt.created_at).desc(), col(LlmCallAttempt.attempt_id))
            .limit(limit)
        ).all()
    return list(reversed(rows))


def attempt_body(row: LlmCallAttempt) -> dict[str, Any]:
    return {
        "attemptId": row.attempt_id,
        "callId": row.call_id,
        "ordinal": row.ordinal,
        "site": row.site,
        "provider": row.provider,
        "requestedModel": row.requested_model,
        "servedModel": row.served_model,
        "tokensIn": row.tokens_in,
        "tokensOut": row.tokens_out,
        "costUsd": row.cost_usd,
        "reservedUsd": row.reserved_usd,
        # Whose price and whose tokens (runtime/llm/pricing.py); None on a failed attempt.
        "priceSource": row.price_source,
        "usageSource": row.usage_source,
        "outcome": row.outcome,
        "httpStatus": row.http_status,
        "durationMs": row.duration_ms,
        "error": row.error,
        "createdAt": iso_ms(row.created_at),
    }
