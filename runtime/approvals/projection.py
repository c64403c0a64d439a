"""A session's permission requests, from its journal into the approvals' lifecycle (and
its failed turns, to the outbound webhooks that take `session.turn_failed`).

A session's permission request lives in its workflow, and everything it does is a
journal event of the session protocol: `permission_request` (asked), `permission_audit`
with `permission.timeout` (its durable timer fired), `permission_resolved` (a vote, a
cancel of the prompt, the timer, the session ending). The journal calls `project` inside
the transaction that appends them (EventJournal's `projections`), so the approval row
commits with its event or not at all, and an append deduplicated as a retry's projects
nothing twice. Workflow code and its histories are untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection

from runtime.approvals import ledger
from runtime.approvals.ledger import DEPLOYMENT, ApprovalKind, ApprovalRequest, ApprovalState
from runtime.notifications import outbox
from runtime.store.engine import Store
from runtime.store.journal import JournalEntry

_SESSION_PREFIX: Final = "session/"
# The options that say yes (the reference agent's `proceed_*`); `cancel` says no.
_DENY_OPTIONS: Final = frozenset({"cancel", "reject", "reject_once", "reject_always"})


def permission_approval(request_id: str) -> str:
    return ledger.approval_id(ApprovalKind.PERMISSION, request_id)


def permission_state(option_id: str) -> ApprovalState:
    """What a permission request's chosen option makes of its approval (wherever it was
    chosen: on the session, or on the tenant's queue for agentrt's coder)."""
    return ApprovalState.DENIED if option_id in _DENY_OPTIONS else ApprovalState.APPROVED


def project(connection: Connection, stream: str, entries: Sequence[JournalEntry]) -> None:
    """The approvals a batch of a session stream's events opens or ends."""
    if not stream.startswith(_SESSION_PREFIX):
        return
    session_id = stream.removeprefix(_SESSION_PREFIX)
    for entry in entries:
        data = entry.data.get("data")
        if not isinstance(data, dict):
            continue
        if entry.type == "prompt_cancelled":
            _prompt_cancelled(connection, session_id, entry)
            continue
        if entry.type == "turn_error":
            outbox.enqueue(
                connection,
                "session.turn_failed",
                key=f"{stream}/{entry.seq}",
                subject=f"session/{session_id}",
                tenant=None,
                data={
                    "sessionId": session_id,
                    "promptId": entry.data.get("promptId"),
                    "code": data.get("code"),
                    "error": str(data.get("error") or "")[:1000],
                },
                now=entry.ts,
            )
            continue
        if entry.type == "session_closed":
            ledger.supersede(
                connection, f"session/{session_id}", now=entry.ts, reason="its session closed"
            )
            continue
        request_id = data.get("requestId")
        if not isinstance(request_id, str):
            continue
        if entry.type == "permission_request":
            request = _request(session_id, request_id, data, entry.data.get("promptId"))
            ledger.open_approval(connection, request, entry.ts)
        elif entry.type == "permission_audit" and data.get("event") == "permission.timeout":
            ledger.settle(
                connection,
                permission_approval(request_id),
                ApprovalState.EXPIRED,
                now=entry.ts,
                reason=f"no answer within {data.get('timeoutMs')} ms",
            )
        elif entry.type == "permission_resolved":
            _resolved(connection, request_id, data.get("outcome"), entry)


def _prompt_cancelled(connection: Connection, session_id: str, entry: JournalEntry) -> None:
    """The prompt's cancel withdraws what it asked (before the resolutions it causes)."""
    prompt_id = entry.data.get("promptId")
    pending = ledger.list_approvals(
        connection,
        ledger.InboxFilter(tenant=DEPLOYMENT, kinds=(ApprovalKind.PERMISSION,)),
        limit=1000,
        subject=f"session/{session_id}",
    )
    for approval in pending:
        if approval.detail.get("promptId") == prompt_id:
            ledger.settle(
                connection,
                approval.approval_id,
                ApprovalState.CANCELLED,
                now=entry.ts,
                reason="the prompt was cancelled",
            )


def _request(
    session_id: str, request_id: str, data: dict[str, Any], prompt_id: Any
) -> ApprovalRequest:
    tool_call = data.get("toolCall") if isinstance(data.get("toolCall"), dict) else {}
    assert isinstance(tool_call, dict)
    options = [o.get("optionId") for o in data.get("options") or [] if isinstance(o, dict)]
    title = str(tool_call.get("title") or tool_call.get("kind") or "a tool call")
    return ApprovalRequest(
        kind=ApprovalKind.PERMISSION,
        ref=request_id,
        tenant=DEPLOYMENT,
        subject=f"session/{session_id}",
        asked_by=f"session/{session_id}",
        title=f"Allow {title}?",
        link=f"/session/{session_id}/permission/{request_id}",
        detail={
            "sessionId": session_id,
            "promptId": prompt_id,
            "toolCall": tool_call,
            "options": options,
        },
    )


def _resolved(connection: Connection, request_id: str, outcome: Any, entry: JournalEntry) -> None:
    outcome = outcome if isinstance(outcome, dict) else {}
    option = outcome.get("optionId")
    if outcome.get("outcome") == "selected" and isinstance(option, str):
        state = permission_state(option)
        approval = permission_approval(request_id)
        ledger.settle(
            connection,
            approval,
            state,
            now=entry.ts,
            reason="answered",
            answer=option,
            answered_by=ledger.voter(connection, approval, entry.originator),
            answered_client=entry.originator,
        )
        return
    # Cancelled while it waited and not by its prompt's cancel (`prompt_cancelled` ended it
    # first), nor by its timer (its audit event did): the session ended under it.
    ledger.settle(
        connection,
        permission_approval(request_id),
        ApprovalState.SUPERSEDED,
        now=entry.ts,
        reason="its session ended",
    )


def note_vote(store: Store, request_id: str, client_id: str | None, answered_by: str) -> None:
    """A vote on permission request `request_id` is about to be sent by `answered_by`."""
    with store.transaction() as db:
        ledger.record_vote(db.connection(), permission_approval(request_id), client_id, answered_by)
