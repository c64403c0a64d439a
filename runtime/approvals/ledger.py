"""The approvals' one lifecycle, written in the caller's transaction.

    pending → approved | denied | answered | expired | cancelled | superseded

Every kind goes through these functions and no other writes an `approvals` row:

- `open_approval` records a request (insert-or-nothing by its id, so a retried activity,
  a replayed workflow task or a journal append seen twice records it once);
- `settle` ends it: a compare-and-swap from `pending`, so of N concurrent answers one
  ends it and the others change nothing (the kind's own record says whether theirs was
  the same answer);
- `record_vote` notes the verified identity of a vote before it is sent: a session's
  vote resolves in its workflow, which knows only the client id, and the resolution
  records the identity noted for that client (`voter`);
- `supersede` ends every pending request of a subject that ended (a session closed, an
  agent stopped or reset, a task settled): an approval never outlives what it was for.

Each function takes a SQLAlchemy `Connection`, so the lifecycle commits with the kind's
own write (the journal's append, the decision's compare-and-swap) or not at all.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final, Literal

from sqlalchemy import Connection, Table, and_, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from runtime.approvals.contracts import CLOCK_WORKFLOW_ID
from runtime.approvals.models import Approval
from runtime.failures import WireError
from runtime.notifications import outbox
from runtime.timestamps import aware_utc, iso_ms

APPROVALS: Final[Table] = Approval.__table__  # type: ignore[attr-defined]
# The tenant of the deployment's own requests (sessions, agent-tools turns, device flows
# belong to no tenant): the administrator's inbox lists them, no tenant's does.
DEPLOYMENT: Final = ""
# What an approval records of an answer (models.Approval.answer).
ANSWER_CHARS: Final = 200


class ApprovalKind(StrEnum):
    """What a human is asked (the inbox's `kind` filter)."""

    PERMISSION = "permission"  # a session's permission vote (session protocol)
    RESEARCH = "research"  # an agent-tools turn's research authorization (spec 000)
    DECISION = "decision"  # a standing agent's decision queue (§2.4): decision, mode
    # change, stuck, budget reached
    MCP_CALL = "mcp_call"  # a standing agent's call of an MCP tool not read-only
    CODER_QUESTION = "coder_question"  # a coding agent's question to its tenant
    DEVICE_LOGIN = "device_login"  # a device-flow login waiting for its user (RFC 8628)


class ApprovalState(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    ANSWERED = "answered"  # an answer that is neither yes nor no (a free-text decision)
    EXPIRED = "expired"  # its timeout fired first
    CANCELLED = "cancelled"  # withdrawn by who asked (a prompt cancelled, a flow deleted)
    SUPERSEDED = "superseded"  # what it was for ended or was replaced


FINAL_STATES: Final = frozenset(ApprovalState) - {ApprovalState.PENDING}
# The kinds the approvals' clock times (the others keep their own timers).
TIMED_KINDS: Final = frozenset(
    {
        ApprovalKind.RESEARCH,
        ApprovalKind.DECISION,
        ApprovalKind.MCP_CALL,
        ApprovalKind.CODER_QUESTION,
    }
)


def approval_id(kind: ApprovalKind, ref: str) -> str:
    return f"{kind.value}:{ref}"


@dataclass(frozen=True)
class ApprovalRequest:
    """A request for a human, as its kind raises it."""

    kind: ApprovalKind
    ref: str
    tenant: str
    subject: str
    asked_by: str
    title: str
    link: str
    detail: Mapping[str, Any] = field(default_factory=dict)
    digest: str | None = None
    expires_at: datetime | None = None

    @property
    def approval_id(self) -> str:
        return approval_id(self.kind, self.ref)


def open_approval(connection: Connection, request: ApprovalRequest, now: datetime) -> None:
    """Record `request` as pending, unless it is recorded already (in any state)."""
    values = {
        "approval_id": request.approval_id,
        "kind": request.kind.value,
        "ref": request.ref[:120],
        "tenant": request.tenant,
        "subject": request.subject[:400],
        "asked_by": request.asked_by[:200],
        "title": request.title[:500],
        "detail": dict(request.detail),
        "digest": request.digest,
        "link": request.link[:500],
        "state": ApprovalState.PENDING.value,
        "created_at": now,
        "expires_at": request.expires_at,
    }
    dialect = connection.dialect.name
    if dialect == "postgresql":
        statement: Any = postgresql.insert(APPROVALS).values(values).on_conflict_do_nothing()
    else:
        statement = sqlite.insert(APPROVALS).values(values).on_conflict_do_nothing()
    # RETURNING says whether the row was inserted (psycopg's rowcount is -1 here).
    if connection.execute(statement.returning(APPROVALS.c.approval_id)).first() is None:
        return  # recorded already: told already
    notify(connection, "approval.requested", values, now)
    if request.kind in TIMED_KINDS:
        outbox.wake([CLOCK_WORKFLOW_ID])  # it gives the request its kind's timeout
    also = _ALSO_REQUESTED.get(str(request.detail.get("decisionKind") or request.kind.value))
    if also is not None:
        notify(connection, also, values, now)


def settle(
    connection: Connection,
    approval: str,
    state: ApprovalState,
    *,
    now: datetime,
    reason: str,
    answer: str | None = None,
    answered_by: str | None = None,
    answered_client: str | None = None,
) -> bool:
    """End a pending approval in `state`; False when it had ended already (or is none)."""
    assert state in FINAL_STATES, state
    ended = (
        connection.execute(
            update(APPROVALS)
            .where(
                APPROVALS.c.approval_id == approval,
                APPROVALS.c.state == ApprovalState.PENDING.value,
            )
            .values(
                state=state.value,
                answer=None if answer is None else recorded_answer(answer),
                answered_by=answered_by,
                answered_client=None if answered_client is None else answered_client[:200],
                ended_at=now,
                end_reason=reason[:200],
            )
            .returning(*APPROVALS.c)
        )
        .mappings()
        .all()
    )
    for row in ended:
        notify(connection, "approval.resolved", row, now)
    return bool(ended)


# A pending request keeps at most this many votes' identities (a consensus vote's quorum
# is far below it).
MAX_VOTES: Final = 64


def record_vote(
    connection: Connection, approval: str, client_id: str | None, answered_by: str
) -> None:
    """Note who (verified) sent a vote as `client_id` on a pending request: the vote that
    resolves it names only its client id (a session's workflow does not know tokens), and
    the resolution then records the identity noted here (`voter`)."""
    row = connection.execute(
        select(APPROVALS.c.detail)
        .where(
            APPROVALS.c.approval_id == approval,
            APPROVALS.c.state == ApprovalState.PENDING.value,
        )
        .with_for_update()
    ).first()
    if row is None:
        return
    detail = dict(row.detail or {})
    votes = [v for v in detail.get("votes", []) if v.get("clientId") != client_id]
    votes.append({"clientId": client_id, "answeredBy": answered_by[:200]})
    detail["votes"] = votes[-MAX_VOTES:]
    connection.execute(
        update(APPROVALS).where(APPROVALS.c.approval_id == approval).values(detail=detail)
    )


def voter(connection: Connection, approval: str, client_id: str | None) -> str | None:
    """The verified identity `record_vote` noted for `client_id`'s vote, if any."""
    detail = connection.execute(
        select(APPROVALS.c.detail).where(APPROVALS.c.approval_id == approval)
    ).scalar()
    for vote in (detail or {}).get("votes", []):
        if vote.get("clientId") == client_id:
            return str(vote.get("answeredBy"))
    return None


def supersede(
    connection: Connection,
    subject: str,
    *,
    now: datetime,
    reason: str,
    kinds: Iterable[ApprovalKind] | None = None,
    keep: str | None = None,
) -> int:
    """End every pending approval of `subject` (of `kinds`; but `keep`) as superseded;
    how many it ended."""
    statement = update(APPROVALS).where(
        APPROVALS.c.subject == subject, APPROVALS.c.state == ApprovalState.PENDING.value
    )
    if keep is not None:
        statement = statement.where(APPROVALS.c.approval_id != keep)
    if kinds is not None:
        statement = statement.where(APPROVALS.c.kind.in_([k.value for k in kinds]))
    ended = (
        connection.execute(
            statement.values(
                state=ApprovalState.SUPERSEDED.value, ended_at=now, end_reason=reason[:200]
            ).returning(*APPROVALS.c)
        )
        .mappings()
        .all()
    )
    for row in ended:
        notify(connection, "approval.resolved", row, now)
    return len(ended)


# What else an approval's request is, for a receiver that wants only that.
_ALSO_REQUESTED: Final = {
    "stuck": "agent.stuck",
    "budget_reached": "agent.budget_reached",
    ApprovalKind.DEVICE_LOGIN.value: "device_flow.login_required",
}


def notify(connection: Connection, event_type: str, row: Mapping[Any, Any], now: datetime) -> None:
    """Owe `event_type` to the endpoints that take it (outbound webhooks), in this
    transaction. What a receiver is told: what was asked and how it ended, never the
    request's detail (tool arguments may hold what only the inbox's readers may see)."""
    tenant = row["tenant"] or None
    data: dict[str, Any] = {
        "approvalId": row["approval_id"],
        "kind": row["kind"],
        "state": row["state"],
        "tenant": tenant,
        "subject": row["subject"],
        "askedBy": row["asked_by"],
        "title": row["title"],
        "link": row["link"],
        "digest": row["digest"],
    }
    if row.get("expires_at") is not None:
        data["expiresAt"] = iso_ms(aware_utc(row["expires_at"]))
    if row["state"] != ApprovalState.PENDING.value:
        data |= {
            "answer": row["answer"],
            "answeredBy": row["answered_by"],
            "endReason": row["end_reason"],
        }
    outbox.enqueue(
        connection,
        event_type,
        key=row["approval_id"],
        subject=row["subject"],
        tenant=tenant,
        data=data,
        now=now,
    )


def recorded_answer(answer: str) -> str:
    """An answer as its approval records it (its first 200 characters; the kind's own
    record keeps it whole)."""
    return answer[:ANSWER_CHARS]


def get_approval(
    connection: Connection, approval: str, *, for_update: bool = False
) -> Approval | None:
    """The approval, or None; `for_update` locks its row (PostgreSQL) until the caller's
    transaction ends, against a concurrent `settle`."""
    query = select(APPROVALS).where(APPROVALS.c.approval_id == approval)
    if for_update:
        query = query.with_for_update()
    row = connection.execute(query).mappings().first()
    return None if row is None else Approval.model_validate(dict(row))


@dataclass(frozen=True)
class InboxFilter:
    """The inbox's filters: a tenant (None: every tenant, the administrator's view), the
    kinds and the states; `after` the cursor of the last page (created_at, id)."""

    tenant: str | None = None
    kinds: tuple[ApprovalKind, ...] = ()
    states: tuple[ApprovalState, ...] = (ApprovalState.PENDING,)
    after: tuple[datetime, str] | None = None


def list_approvals(
    connection: Connection, query: InboxFilter, limit: int, *, subject: str | None = None
) -> list[Approval]:
    """Approvals oldest first (created_at, then id), `limit` of them after the cursor;
    `subject`: only those of one subject."""
    statement = select(APPROVALS)
    if subject is not None:
        statement = statement.where(APPROVALS.c.subject == subject)
    if query.tenant is not None:
        statement = statement.where(APPROVALS.c.tenant == query.tenant)
    if query.kinds:
        statement = statement.where(APPROVALS.c.kind.in_([k.value for k in query.kinds]))
    if query.states:
        statement = statement.where(APPROVALS.c.state.in_([s.value for s in query.states]))
    if query.after is not None:
        at, last = query.after
        statement = statement.where(
            or_(
                APPROVALS.c.created_at > at,
                and_(APPROVALS.c.created_at == at, APPROVALS.c.approval_id > last),
            )
        )
    statement = statement.order_by(APPROVALS.c.created_at, APPROVALS.c.approval_id).limit(limit)
    rows = connection.execute(statement).mappings().all()
    return [Approval.model_validate(dict(row)) for row in rows]


class InvalidCursor(WireError):
    """A `cursor` the inbox did not hand out: 400."""

    kind: Literal["invalid_cursor"] = "invalid_cursor"

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": "cursor is not one this listing returned", "code": self.kind_name}


def encode_cursor(row: Approval) -> str:
    """The inbox's cursor after `row` (its created_at and id, opaque to clients)."""
    raw = json.dumps([aware_utc(row.created_at).isoformat(), row.approval_id])
    return base64.urlsafe_b64encode(raw.encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """What `encode_cursor` wrote; InvalidCursor for anything else."""
    try:
        at, last = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return aware_utc(datetime.fromisoformat(at)), str(last)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError) as err:
        raise InvalidCursor().application_error() from err
