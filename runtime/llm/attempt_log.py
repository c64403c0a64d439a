"""Reading the attempts back (GET /api/v1/llm/attempts): one row per attempt, in order.

Spend per session, turn, agent or tenant is the sum of these rows' `cost_usd`.
"""

from __future__ import annotations

from sqlmodel import col, select

from runtime.llm.models import LlmCallAttempt
from runtime.llm.routing import OwnerKind
from runtime.store.engine import Store

MAX_ATTEMPTS = 1000


def list_attempts(
    store: Store,
    *,
    owner: tuple[OwnerKind, str] | None = None,
    site: str | None = None,
    limit: int = 100,
) -> list[LlmCallAttempt]:
    """The latest `limit` attempts matching the filters, oldest first (created_at, ordinal)."""
    query = select(LlmCallAttempt)
    if owner is not None:
        kind, owner_id = owner
        query = query.where(
            col(LlmCallAttempt.owner_kind) == kind.value, col(LlmCallAttempt.owner_id) == owner_id
        )
    if site is not None:
        query = query.where(col(LlmCallAttempt.site) == site)
    newest_first = query.order_by(
        col(LlmCallAttempt.created_at).desc(),
        col(LlmCallAttempt.call_id).desc(),
        col(LlmCallAttempt.ordinal).desc(),
    ).limit(max(1, min(limit, MAX_ATTEMPTS)))
    with store.session() as db:
        rows = list(db.exec(newest_first).all())
    rows.reverse()
    return rows
