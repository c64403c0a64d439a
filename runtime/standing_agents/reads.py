"""What clients read of an agent's record: ledger turns and model-call attempts.

The ledger routes show the current generation only: a reset starts the agent's
memory, its re-injection and its hash chain over; the older generations' turns
stay in the table for audit.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlmodel import col, select

from runtime.llm.models import LlmCallAttempt
from runtime.standing_agents.models import AgentInstance, AgentLedgerTurn
from runtime.standing_agents.views import LedgerTurn, LlmAttempt
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


def turn_view(turn: AgentLedgerTurn) -> LedgerTurn:
    """The wire shape of a turn: the fields its hash covers, in the ledger's words."""
    return LedgerTurn(
        seq=turn.seq,
        event_id=turn.event_id,
        event_kind=turn.event_kind,
        decision_kind=turn.decision_kind,
        decision=turn.decision,
        plan_input_hash=turn.plan_input_hash,
        llm_call_id=turn.llm_call_id,
        served_model=turn.served_model,
        cost_usd=turn.cost_usd,
        active_mode=turn.active_mode,
        created_at=iso_ms(turn.created_at),
        prev_hash=turn.prev_hash,
        hash=turn.hash,
    )


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


def attempt_view(row: LlmCallAttempt) -> LlmAttempt:
    return LlmAttempt(
        attempt_id=row.attempt_id,
        call_id=row.call_id,
        ordinal=row.ordinal,
        site=row.site,
        provider=row.provider,
        requested_model=row.requested_model,
        served_model=row.served_model,
        tokens_in=row.tokens_in,
        tokens_out=row.tokens_out,
        cost_usd=row.cost_usd,
        reserved_usd=row.reserved_usd,
        # Whose price and whose tokens (runtime/llm/pricing.py); None on a failed attempt.
        price_source=row.price_source,
        usage_source=row.usage_source,
        outcome=row.outcome,
        http_status=row.http_status,
        duration_ms=row.duration_ms,
        error=row.error,
        created_at=iso_ms(row.created_at),
    )
