"""The decision queue's requests (§2.4) as approvals: one `approvals` row per attention
request, written in the transaction that writes the request or ends it.

- Every attention request inserted opens its approval, from the mapper's `after_insert`
  (in the flush that inserts the row, whichever of the queue's writers inserts it: the
  agent's tools, the STUCK guard, the budget pause, a signal's human request, a coder's
  question); registered when the package is imported (its `__init__`).
- `settled` ends it when the request is answered (decision_queue.respond, the budget pause's
  own resolution), with the verified identity of who answered.
- `superseded` ends the pending approvals of an agent stopped or reset, and of a coding
  task settled.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, and_, event, update
from sqlalchemy.orm import Mapper
from sqlmodel import Session, col, select

from runtime.approvals import ledger
from runtime.approvals.ledger import ApprovalKind, ApprovalRequest, ApprovalState
from runtime.approvals.projection import permission_state
from runtime.standing_agents.contracts import (
    APPROVE,
    CODER_SOURCE,
    SUPERSEDED,
    AttentionKind,
    AttentionStatus,
    is_permission_vote,
)
from runtime.standing_agents.models import AgentInstance, AttentionRequest

# The answers that say no to what a request proposes (a mode change, an MCP call).
_NO: Final = frozenset({"reject", "deny", "denied", "rejected", "no", "cancel"})
DECISIONS_ROUTE: Final = "/api/v1/tenants/{tenant}/decisions/{decision_id}/respond"


def agent_subject(tenant: str, instance_id: str) -> str:
    return f"agent/{tenant}/{instance_id}"


def coding_task_subject(tenant: str, task_id: str) -> str:
    return f"coding-task/{tenant}/{task_id}"


def approval_kind(row: AttentionRequest) -> ApprovalKind:
    if row.source == CODER_SOURCE:
        return ApprovalKind.CODER_QUESTION
    if row.kind == AttentionKind.MCP_CALL.value:
        return ApprovalKind.MCP_CALL
    return ApprovalKind.DECISION


def approval_of(row: AttentionRequest) -> str:
    return ledger.approval_id(approval_kind(row), row.decision_id)


def _subject(row: AttentionRequest) -> str:
    task = row.payload.get("taskId") if row.source == CODER_SOURCE else None
    if isinstance(task, str) and task:
        return coding_task_subject(row.tenant, task)
    return agent_subject(row.tenant, row.soa_instance_id)


def _request(row: AttentionRequest, mode: str | None) -> ApprovalRequest:
    asked_by = (
        f"coder:{row.payload.get('askedBy')}"
        if row.source == CODER_SOURCE
        else agent_subject(row.tenant, row.soa_instance_id)
    )
    detail: dict[str, Any] = {
        "decisionKind": row.kind,
        "body": row.body[:2000],
        "options": row.options,
    }
    if mode is not None:
        # The agent's mode when it asked: a `mode:` override of the timeout applies.
        detail["mode"] = mode
    if row.kind == AttentionKind.MCP_CALL.value:
        detail["call"] = {
            k: row.payload.get(k) for k in ("tool", "server", "serverTool", "arguments")
        }
    digest = row.payload.get("digest")
    return ApprovalRequest(
        kind=approval_kind(row),
        ref=row.decision_id,
        tenant=row.tenant,
        subject=_subject(row),
        asked_by=asked_by,
        title=row.title,
        link=DECISIONS_ROUTE.format(tenant=row.tenant, decision_id=row.decision_id),
        detail=detail,
        digest=digest if isinstance(digest, str) else None,
    )


@event.listens_for(AttentionRequest, "after_insert")
def _opened(_mapper: Mapper[Any], connection: Connection, row: AttentionRequest) -> None:
    if row.status != AttentionStatus.OPEN.value:
        return
    mode = (
        None
        if row.source == CODER_SOURCE
        else connection.execute(
            select(col(AgentInstance.active_mode)).where(
                col(AgentInstance.instance_id) == row.soa_instance_id
            )
        ).scalar()
    )
    ledger.open_approval(connection, _request(row, mode), row.created_at)


def outcome(resolution: str) -> ApprovalState:
    """approved, denied, or answered (a free-text answer, an option neither yes nor no)."""
    if resolution == APPROVE:
        return ApprovalState.APPROVED
    if resolution.strip().lower() in _NO:
        return ApprovalState.DENIED
    return ApprovalState.ANSWERED


def settled(
    connection: Connection,
    row: AttentionRequest,
    *,
    resolution: str,
    answered_by: str | None,
    now: datetime,
    reason: str = "answered",
    state: ApprovalState | None = None,
) -> None:
    if state is None:
        # agentrt's coder's permission request: the option's state, as its session's
        # approval ends (coder_decisions.mirror_permission_outcome), whichever side first.
        voted = is_permission_vote(row.source, row.payload)
        state = permission_state(resolution) if voted else outcome(resolution)
    ledger.settle(
        connection,
        approval_of(row),
        state,
        now=now,
        reason=reason,
        answer=resolution,
        answered_by=answered_by,
    )


def superseded(connection: Connection, subject: str, *, now: datetime, reason: str) -> int:
    return ledger.supersede(connection, subject, now=now, reason=reason)


# Who resolves a request nobody answered (superseded, expired, a budget pause lifted).
AGENTRT: Final = "agentrt"


def resolve_by_agentrt(
    db: Session, where: ColumnElement[bool], resolution: str, notes: str, now: datetime
) -> int:
    """Resolve the open requests `where` selects, as agentrt (nobody answered them): a
    compare-and-swap open → resolved, in the caller's transaction; how many it took."""
    result = db.exec(
        update(AttentionRequest)
        .where(where, col(AttentionRequest.status) == AttentionStatus.OPEN.value)
        .values(
            status=AttentionStatus.RESOLVED.value,
            resolution=resolution,
            resolution_notes=notes,
            answered_by=AGENTRT,
            resolved_at=now,
        )
    )
    return int(result.rowcount or 0)


def supersede_agent_requests(
    db: Session, tenant: str, instance_id: str, now: datetime, reason: str
) -> None:
    """The agent's open requests end with the generation that asked them (a reset):
    resolved `superseded` on the queue, their approvals superseded; a later answer is a
    409."""
    mine = and_(
        col(AttentionRequest.soa_instance_id) == instance_id,
        col(AttentionRequest.source) != CODER_SOURCE,
    )
    resolve_by_agentrt(db, mine, SUPERSEDED, reason, now)
    superseded(db.connection(), agent_subject(tenant, instance_id), now=now, reason=reason)


def supersede_coder_questions(db: Session, tenant: str, task_id: str, reason: str) -> None:
    """A coding task settled: its coder's open questions are resolved `superseded` on the
    queue, and their approvals superseded, in the settle's transaction."""
    now = datetime.now(UTC)
    rows = db.exec(
        select(AttentionRequest.decision_id, AttentionRequest.payload).where(
            col(AttentionRequest.tenant) == tenant,
            col(AttentionRequest.source) == CODER_SOURCE,
            col(AttentionRequest.status) == AttentionStatus.OPEN.value,
        )
    ).all()
    asked = [decision for decision, payload in rows if payload.get("taskId") == task_id]
    if asked:
        where = col(AttentionRequest.decision_id).in_(asked)
        resolve_by_agentrt(db, where, SUPERSEDED, reason, now)
    superseded(db.connection(), coding_task_subject(tenant, task_id), now=now, reason=reason)
