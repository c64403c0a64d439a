"""The decision queue (spec §2.4): a standing agent's decisions, mode changes, STUCK and
budget-reached requests, and coders' questions - listed, read and answered (`respond`, a
compare-and-swap open -> resolved; an approved mode change applied; the resume enqueued).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from sqlalchemy import update
from sqlmodel import Session, col, select
from temporalio.exceptions import ApplicationError

from runtime.failures import WireError, refusal_of
from runtime.standing_agents import approvals, mcp_calls, queue
from runtime.standing_agents.agent_journal import (
    DECISION,
    append_agent_event_once,
)
from runtime.standing_agents.contracts import (
    APPROVE,
    CODER_SOURCE,
    AgentStatus,
    AgentType,
    AttentionKind,
    AttentionStatus,
    EventKind,
    ModeChangeSource,
    is_permission_vote,
)
from runtime.standing_agents.control import iso, now_utc
from runtime.standing_agents.models import (
    AgentInstance,
    AttentionRequest,
)
from runtime.standing_agents.modes import (
    ModeChange,
    UnknownMode,
    allowed_modes,
    apply_mode_change_in,
    journal_mode_change,
)
from runtime.standing_agents.views import DecisionView
from runtime.store.engine import Store
from runtime.store.journal import EventJournal

log = logging.getLogger(__name__)


class DecisionNotFound(WireError):
    """No decision of this id in the tenant (a route answers it as it is, agentrt's MCP
    server as its tool error): 404."""

    kind: Literal["decision_not_found"] = "decision_not_found"
    decision_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No decision with id "{self.decision_id}"',
            "code": "decision_not_found",
            "decisionId": self.decision_id,
        }


class InvalidResolution(WireError):
    """An answer outside a decision's options where only those are meaningful (an MCP
    call runs on `approve` and only then: "Approved" must not read as a no): 400."""

    kind: Literal["invalid_resolution"] = "invalid_resolution"
    decision_id: str
    allowed: list[str]

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"This decision takes one of: {', '.join(self.allowed)}",
            "code": self.kind,
            "decisionId": self.decision_id,
            "allowed": self.allowed,
        }


class DecisionAlreadyResolved(WireError):
    """A different answer to a decision already resolved; `resolution` is its answer: 409."""

    kind: Literal["decision_already_resolved"] = "decision_already_resolved"
    decision_id: str
    resolution: str | None

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "This decision was already resolved with another answer",
            "code": "decision_already_resolved",
            "decisionId": self.decision_id,
            "resolution": self.resolution,
        }


def list_decisions(
    store: Store, tenant: str, status: AttentionStatus | None
) -> list[AttentionRequest]:
    with store.session() as db:
        statement = select(AttentionRequest).where(col(AttentionRequest.tenant) == tenant)
        if status is not None:
            statement = statement.where(col(AttentionRequest.status) == status.value)
        return list(
            db.exec(
                statement.order_by(
                    col(AttentionRequest.created_at), col(AttentionRequest.decision_id)
                )
            ).all()
        )


def get_decision(store: Store, tenant: str, decision_id: str) -> AttentionRequest:
    with store.session() as db:
        row = db.get(AttentionRequest, decision_id)
    if row is None or row.tenant != tenant:
        raise DecisionNotFound(decision_id=decision_id).application_error()
    return row


def respond(
    store: Store,
    journal: EventJournal,
    tenant: str,
    decision_id: str,
    resolution: str,
    notes: str | None,
    responded_by: str | None,
    answered_by: str | None = None,
    digest: str | None = None,
) -> tuple[AttentionRequest, bool]:
    """Answer a decision (§2.4): a compare-and-swap open → resolved.

    `responded_by` is what the answer's body declares; `answered_by` the label of the
    identity the bearer check verified (`admin`, `operator:alice`), recorded by the
    answer that resolves the decision. An approval of a tool call (an MCP call) records
    the call's digest as what it approved (`approved_digest`); an answer that names a
    `digest` the decision does not carry is refused (DigestMismatch, 409), before
    anything is written.

    One transaction holds the CAS, an approved mode change (once per decision) and the
    resume event `escalation/{decisionId}` (deduped): they commit together or not at
    all. The same answer again (a retry, or N concurrent submissions) gets the same
    result and journals nothing twice; a different one to a resolved request is refused
    (DecisionAlreadyResolved, 409). Returns the row and whether this call resolved it (the
    caller wakes `row.soa_instance_id`).
    """
    row = get_decision(store, tenant, decision_id)
    only_options = row.kind == AttentionKind.MCP_CALL.value or is_permission_vote(
        row.source, row.payload
    )
    if only_options and resolution not in (row.options or []):
        refusal = InvalidResolution(decision_id=row.decision_id, allowed=list(row.options or []))
        raise refusal.application_error()
    approved_digest = mcp_calls.approved_digest(row, resolution, digest)
    with store.session() as db:
        instance = db.get(AgentInstance, row.soa_instance_id)
    # The catalogue is read before the write transaction (SQLite has one writer).
    allowed = allowed_modes(store, AgentType(instance.agent_type)) if instance else []
    now = now_utc()

    def write(db: Session) -> tuple[AttentionRequest, bool, ModeChange | None]:
        result = db.exec(
            update(AttentionRequest)
            .where(
                col(AttentionRequest.decision_id) == decision_id,
                col(AttentionRequest.status) == AttentionStatus.OPEN.value,
            )
            .values(
                status=AttentionStatus.RESOLVED.value,
                resolution=resolution,
                resolution_notes=notes,
                responded_by=responded_by,
                answered_by=answered_by,
                resolved_at=now,
                approved_digest=approved_digest,
            )
        )
        won = bool(result.rowcount == 1)
        current = db.get(AttentionRequest, decision_id, populate_existing=True)
        assert current is not None  # read above; decisions are never deleted
        if won:
            approvals.settled(
                db.connection(), current, resolution=resolution, answered_by=answered_by, now=now
            )
        # The same answer again is no conflict. agentrt's coder's permission request is
        # answered by its session's vote, which may have ended it here first
        # (coder_decisions.mirror_permission_outcome): the same option is the same answer.
        same = current.resolution == resolution and (
            current.resolution_notes == notes or is_permission_vote(current.source, current.payload)
        )
        if not won and not same:
            refusal = DecisionAlreadyResolved(
                decision_id=decision_id, resolution=current.resolution
            )
            raise refusal.application_error()
        return current, won, after_resolution(db, current, allowed)

    row, won, change = store.run_transaction(write)
    if change is not None:
        journal_mode_change(journal, change)
    journal_resolved(journal, row)
    return row, won


def journal_resolved(journal: EventJournal, row: AttentionRequest) -> None:
    """The SOA's `decision` event for a resolution, once per decision whoever resolved
    it (an answer here, an expiry in runtime/standing_agents/expiry.py)."""
    append_agent_event_once(
        journal,
        row.tenant,
        row.soa_instance_id,
        DECISION,
        decision_view(row).model_dump(mode="json") | {"event": "resolved"},
        f"decision/{row.decision_id}/resolved",
    )


def after_resolution(db: Session, row: AttentionRequest, allowed: list[str]) -> ModeChange | None:
    """Inside respond's transaction: enqueue the resume, then apply an approved mode
    change (events before the instance row: see queue.enqueue_in)."""
    if row.source == CODER_SOURCE:
        return None  # a coder's question: the coder reads the answer (decision_get)
    instance = db.get(AgentInstance, row.soa_instance_id)
    if instance is None:
        return None
    resolution = row.resolution or ""
    # A closed agent has no heartbeat and reads no events: an operator restarts it.
    closed_stuck = (
        row.kind == AttentionKind.STUCK.value and instance.status == AgentStatus.CLOSED.value
    )
    # A budget_reached request informs: the pause lifts by a raised cap, a regenerated
    # window or a start, not by an answer (which the agent would plan on, at a cost).
    informs = row.kind == AttentionKind.BUDGET_REACHED.value
    if not closed_stuck and not informs:
        queue.enqueue_in(
            db,
            tenant=row.tenant,
            instance_id=instance.instance_id,
            kind=EventKind.OPERATOR_ANSWERED_ESCALATION,
            payload={
                "decisionId": row.decision_id,
                "resolution": resolution,
                "resolutionNotes": row.resolution_notes,
            },
            event_id=f"escalation/{row.decision_id}",
            generation=instance.generation,
        )
    if row.kind != AttentionKind.MODE_CHANGE.value or resolution != APPROVE:
        return None
    mode = str(row.payload.get("mode", ""))
    try:
        return apply_mode_change_in(
            db,
            instance.instance_id,
            mode,
            ModeChangeSource.APPROVAL,
            row.responded_by,
            decision_id=row.decision_id,
            allowed=allowed,
        )
    except ApplicationError as err:
        if refusal_of(err, UnknownMode) is None:
            raise
        # The catalogue changed since the proposal: the answer still reaches the
        # agent (its resume says approve), the mode stays as it is.
        log.warning("approved mode %r is not in the catalogue of %s", mode, instance.instance_id)
        return None


def decision_view(row: AttentionRequest) -> DecisionView:
    """A decision as every door serves it: the routes, agentrt's MCP server, the journal."""
    return DecisionView(
        decision_id=row.decision_id,
        kind=row.kind,
        source=row.source,
        soa_instance_id=row.soa_instance_id,
        title=row.title,
        body=row.body,
        options=row.options,
        # An MCP call's fingerprint hashes its server's entry, literal secrets included:
        # the worker checks it, no client needs it (it would let one guess them).
        payload={k: v for k, v in row.payload.items() if k != "fingerprint"},
        status=row.status,
        resolution=row.resolution,
        resolution_notes=row.resolution_notes,
        responded_by=row.responded_by,
        answered_by=row.answered_by,
        created_at=iso(row.created_at),
        resolved_at=iso(row.resolved_at),
    )
