"""A coder's questions on the tenant's decision queue: agentrt's MCP tool
`decision_request`, and agentrt's coder's permission requests (whose answer is the
session's vote: api/routes/decisions.py)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlmodel import Session

from runtime.standing_agents.contracts import (
    CODER_SOURCE,
    AttentionKind,
    AttentionStatus,
    is_permission_vote,
)
from runtime.standing_agents.control import now_utc, soa_instance_id, transaction
from runtime.standing_agents.models import AttentionRequest
from runtime.store import Store


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
    decision_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"coder-decision/{op_id}"))

    def write(db: Session) -> AttentionRequest:
        existing = db.get(AttentionRequest, decision_id)
        if existing is not None:
            return existing
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
        db.add(row)
        db.flush()
        return row

    return transaction(store, write)
