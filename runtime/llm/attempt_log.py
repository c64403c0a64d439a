"""Reading the attempts back (GET /api/v1/llm/attempts): one row per attempt, in order.

Spend per session, turn, agent or tenant is the sum of these rows' `cost_usd`.

On the wire an attempt has one of the six outcomes of `AttemptOutcome`. The store also
keeps `in_flight` (written before the HTTP call): an attempt still running is not
listed, because it has no outcome and no cost yet, and a reader summing spend expects
finished attempts only (calling it a timeout would report a failure that may yet be a
success, and change when it ends). An attempt in flight for longer than its activity may
run lost its worker: that is a `timeout` (its spend unknown), as the next attempt of
the same call would have marked it (activities/llm/record.py).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import and_, not_
from sqlmodel import col, select

from runtime.llm.contracts import ATTEMPT_START_TO_CLOSE, AttemptOutcome, OwnerKind
from runtime.llm.models import LlmCallAttempt
from runtime.store.engine import Store

MAX_ATTEMPTS = 1000
# The store's state of an attempt between its request and its answer.
IN_FLIGHT = "in_flight"


def list_attempts(
    store: Store,
    *,
    owners: list[tuple[OwnerKind, str]] | None = None,
    site: str | None = None,
    limit: int = 100,
    now: datetime | None = None,
) -> list[LlmCallAttempt]:
    """The latest `limit` finished attempts matching every filter (AND), oldest first
    (created_at, ordinal). An attempt has one owner: two owners match nothing."""
    lost_before = (now or datetime.now(UTC)) - ATTEMPT_START_TO_CLOSE
    query = select(LlmCallAttempt).where(
        not_(
            and_(
                col(LlmCallAttempt.outcome) == IN_FLIGHT,
                col(LlmCallAttempt.created_at) > lost_before,
            )
        )
    )
    for kind, owner_id in owners or []:
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


def wire_outcome(row: LlmCallAttempt) -> AttemptOutcome:
    """The row's outcome as the API shows it: a listed `in_flight` row lost its worker."""
    if row.outcome == IN_FLIGHT:
        return AttemptOutcome.TIMEOUT
    return AttemptOutcome(row.outcome)
