"""A coder's questions on the tenant's decision queue: agentrt's MCP tool
`decision_request`, and agentrt's coder's permission requests (whose answer is the
session's vote: api/standing_agents/decisions.py).

agentrt's coder's permission request is one request through two doors: the session's
vote (a `permission` approval) and the tenant's queue (a `coder_question` approval).
Whichever ends it (an answer on either, the session's timer, a cancel, the session's
end), the other ends with it, with the same outcome: `mirror_permission_outcome`, a
journal projection of the session's `permission_resolved`, ends the queue's side in the
event's transaction; a question raised after its request ended is recorded resolved.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, update
from sqlmodel import Session, col

from runtime.approvals import ledger
from runtime.approvals.ledger import ApprovalKind, ApprovalState
from runtime.approvals.models import Approval
from runtime.approvals.projection import permission_approval
from runtime.standing_agents.contracts import (
    CODER_SOURCE,
    AttentionKind,
    AttentionStatus,
    is_permission_vote,
)
from runtime.standing_agents.control import now_utc, soa_instance_id
from runtime.standing_agents.models import AttentionRequest
from runtime.store import Store
from runtime.store.journal import JournalEntry


def permission_vote(row: AttentionRequest) -> bool:
    return is_permission_vote(row.source, row.payload)


def coder_decision(
    store: Store,
    *,
    tenant: str,
    title: str,
    body: str,
    options: list[str] | None,
    asked_by: str,
    task_id: str | None,
    op_id: str,
    extra: dict[str, Any] | None = None,
) -> AttentionRequest:
    """A coder's question on the tenant's decision queue, once per `op_id` (the tool
    call's idempotency key). Its answer goes back to the coder, not to an agent; with
    `extra` `sessionId` and `requestId` (agentrt's coder's permission request), the
    answer is the session's vote."""
    decision_id = coder_decision_id(op_id)
    request_id = (extra or {}).get("requestId")

    def write(db: Session) -> AttentionRequest:
        existing = db.get(AttentionRequest, decision_id)
        if existing is not None:
            return existing
        # Locked (PostgreSQL) until this question is written: a resolution projected
        # meanwhile waits for it, then finds it and ends it (mirror_permission_outcome).
        ended = (
            _ended_permission(db.connection(), request_id, lock=True)
            if isinstance(request_id, str)
            else None
        )
        row = AttentionRequest(
            decision_id=decision_id,
            tenant=tenant,
            kind=AttentionKind.DECISION.value,
            source=CODER_SOURCE,
            soa_instance_id=soa_instance_id(tenant),
            title=title[:500],
            body=body,
            options=options,
            payload={
                "askedBy": asked_by,
                **({"taskId": task_id} if task_id else {}),
                **(extra or {}),
            },
            status=AttentionStatus.OPEN.value,
            op_id=op_id,
            created_at=now_utc(),
        )
        if ended is not None:
            # Its session's request ended before the question was raised: it is
            # recorded as it ended, and nobody is asked.
            row.status = AttentionStatus.RESOLVED.value
            row.resolution = _resolution(ended)
            row.resolution_notes = _NOTES
            row.answered_by = ended.answered_by
            row.resolved_at = row.created_at
        db.add(row)
        db.flush()
        return row

    return store.run_transaction(write)


def coder_decision_id(op_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"coder-decision/{op_id}"))


_NOTES = "its session's permission request ended"
_ATTENTION = AttentionRequest.__table__  # type: ignore[attr-defined]


def _ended_permission(
    connection: Connection, request_id: str, *, lock: bool = False
) -> Approval | None:
    row = ledger.get_approval(connection, permission_approval(request_id), for_update=lock)
    return None if row is None or row.state == ApprovalState.PENDING.value else row


def _resolution(permission: Approval) -> str:
    """The queue's resolution of an ended permission request: the option voted, or how it
    ended (`expired`, `cancelled`, `superseded`)."""
    return permission.answer or permission.state


def mirror_permission_outcome(
    connection: Connection, stream: str, entries: Sequence[JournalEntry]
) -> None:
    """A session's permission request ended (`permission_resolved`, after the approvals'
    own projection ended its `permission` approval): if it is agentrt's coder's, its
    question on the tenant's queue ends with the same outcome, in this transaction."""
    if not stream.startswith("session/"):
        return
    for entry in entries:
        data = entry.data.get("data")
        if entry.type != "permission_resolved" or not isinstance(data, dict):
            continue
        request_id = data.get("requestId")
        if not isinstance(request_id, str):
            continue
        permission = _ended_permission(connection, request_id)
        if permission is None:
            continue
        decision_id = coder_decision_id(f"permission/{request_id}")
        taken = connection.execute(
            update(_ATTENTION)
            .where(
                col(AttentionRequest.decision_id) == decision_id,
                col(AttentionRequest.status) == AttentionStatus.OPEN.value,
            )
            .values(
                status=AttentionStatus.RESOLVED.value,
                resolution=_resolution(permission),
                resolution_notes=_NOTES,
                answered_by=permission.answered_by,
                resolved_at=entry.ts,
            )
            .returning(col(AttentionRequest.decision_id))
        ).first()
        if taken is None:
            continue
        ledger.settle(
            connection,
            ledger.approval_id(ApprovalKind.CODER_QUESTION, decision_id),
            ApprovalState(permission.state),
            now=entry.ts,
            reason=permission.end_reason or _NOTES,
            answer=permission.answer,
            answered_by=permission.answered_by,
        )
