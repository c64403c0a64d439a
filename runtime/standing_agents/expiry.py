"""A standing agent's request that nobody answered within its timeout (issue 22; the
approvals' clock, runtime/approvals/clock.py, says when): resolved as an answer would
resolve it, by agentrt."""

from __future__ import annotations

from typing import Final

from sqlmodel import Session, col

from runtime.approvals.ledger import ApprovalState
from runtime.standing_agents import approvals
from runtime.standing_agents.contracts import AttentionKind, AttentionStatus
from runtime.standing_agents.control import now_utc
from runtime.standing_agents.decision_queue import after_resolution, journal_resolved
from runtime.standing_agents.models import AttentionRequest
from runtime.store.engine import Store
from runtime.store.journal import EventJournal

# How an unanswered request resolves when its timeout fires: a proposal (a mode change,
# an MCP call) is refused; a question is answered "expired".
EXPIRED: Final = "expired"
REJECT: Final = "reject"


def expire_decision(
    store: Store, journal: EventJournal, decision_id: str, timeout_ms: int
) -> AttentionRequest | None:
    """Resolve an open request its timeout ended, as an answer would: a compare-and-swap
    open → resolved (`reject` for a proposal, `expired` for a question, answered by
    `agentrt`), the approval `expired`, the agent's resume enqueued, in one transaction.
    None when an answer came first (or there is no such request)."""
    now = now_utc()

    def write(db: Session) -> AttentionRequest | None:
        row = db.get(AttentionRequest, decision_id)
        if row is None or row.status != AttentionStatus.OPEN.value:
            return None
        proposal = row.kind in (AttentionKind.MODE_CHANGE.value, AttentionKind.MCP_CALL.value)
        resolution = REJECT if proposal else EXPIRED
        notes = f"no answer within {timeout_ms} ms"
        taken = approvals.resolve_by_agentrt(
            db, col(AttentionRequest.decision_id) == decision_id, resolution, notes, now
        )
        if taken != 1:
            return None
        current = db.get(AttentionRequest, decision_id, populate_existing=True)
        assert current is not None
        approvals.settled(
            db.connection(),
            current,
            resolution=resolution,
            answered_by=approvals.AGENTRT,
            now=now,
            reason=notes,
            state=ApprovalState.EXPIRED,
        )
        after_resolution(db, current, [])
        return current

    row = store.run_transaction(write)
    if row is not None:
        journal_resolved(journal, row)
    return row
