"""The approvals' inbox: every request for a human, whatever its kind, in one listing.

- `GET /api/v1/approvals`: the administrator's (every tenant, and the deployment's own
  requests: sessions' permission votes, agent-tools research authorizations, device-flow
  logins), filtered by `tenant`, `kind` and `state`, oldest first, cursor-paged;
- `GET /api/v1/tenants/{tenant}/approvals`: one tenant's, the same listing (an operator
  token of the tenant reaches it).

Each entry links to the route that answers it in its kind's own protocol.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict

from api.deps import StoreDep
from api.openapi import errors
from api.routes.standing_common import TENANT_PATTERN, TenantPath
from runtime.approvals import ledger
from runtime.approvals.ledger import DEPLOYMENT, ApprovalKind, ApprovalState, InboxFilter
from runtime.approvals.models import Approval
from runtime.store import Store
from runtime.timestamps import iso_ms

router = APIRouter(tags=["approvals"])

MAX_LIMIT = 200
CURSOR_PATTERN = r"^[A-Za-z0-9_-]{1,600}={0,2}$"


class ApprovalView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    approvalId: str
    kind: ApprovalKind
    ref: str
    tenant: str | None
    subject: str
    askedBy: str
    title: str
    detail: dict[str, Any]
    digest: str | None
    link: str
    state: ApprovalState
    createdAt: str
    expiresAt: str | None
    timeoutMs: int | None
    answer: str | None
    answeredBy: str | None
    answeredClient: str | None
    endedAt: str | None
    endReason: str | None


class ApprovalList(BaseModel):
    approvals: list[ApprovalView]
    nextCursor: str | None


def approval_view(row: Approval) -> ApprovalView:
    def at(value: datetime | None) -> str | None:
        return None if value is None else iso_ms(value)

    return ApprovalView(
        approvalId=row.approval_id,
        kind=ApprovalKind(row.kind),
        ref=row.ref,
        tenant=None if row.tenant == DEPLOYMENT else row.tenant,
        subject=row.subject,
        askedBy=row.asked_by,
        title=row.title,
        detail=row.detail,
        digest=row.digest,
        link=row.link,
        state=ApprovalState(row.state),
        createdAt=iso_ms(row.created_at),
        expiresAt=at(row.expires_at),
        timeoutMs=row.timeout_ms,
        answer=row.answer,
        answeredBy=row.answered_by,
        answeredClient=row.answered_client,
        endedAt=at(row.ended_at),
        endReason=row.end_reason,
    )


KindQuery = Annotated[list[ApprovalKind] | None, Query(description="Repeat for several")]
StateQuery = Annotated[
    list[ApprovalState] | None, Query(description="Repeat for several; default pending")
]
LimitQuery = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
CursorQuery = Annotated[str | None, Query(pattern=CURSOR_PATTERN)]


async def _list(
    store: Store,
    tenant: str | None,
    kind: list[ApprovalKind] | None,
    state: list[ApprovalState] | None,
    limit: int,
    cursor: str | None,
) -> ApprovalList:
    query = InboxFilter(
        tenant=tenant,
        kinds=tuple(kind or ()),
        states=tuple(state or (ApprovalState.PENDING,)),
        after=None if cursor is None else ledger.decode_cursor(cursor),
    )

    def read() -> list[Approval]:
        with store.engine.connect() as connection:
            return ledger.list_approvals(connection, query, limit + 1)

    rows = await asyncio.to_thread(read)
    page, more = rows[:limit], len(rows) > limit
    return ApprovalList(
        approvals=[approval_view(row) for row in page],
        nextCursor=ledger.encode_cursor(page[-1]) if more else None,
    )


@router.get("/api/v1/approvals", responses=errors(400, 401, 403))
async def list_approvals(
    store: StoreDep,
    tenant: Annotated[str | None, Query(pattern=TENANT_PATTERN)] = None,
    kind: KindQuery = None,
    state: StateQuery = None,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
) -> ApprovalList:
    """Every request for a human (pending by default), oldest first; `tenant` narrows
    it to one tenant's. `nextCursor` pages on; each entry's `link` answers it."""
    return await _list(store, tenant, kind, state, limit, cursor)


@router.get("/api/v1/tenants/{tenant}/approvals", responses=errors(400, 401, 403))
async def list_tenant_approvals(
    tenant: TenantPath,
    store: StoreDep,
    kind: KindQuery = None,
    state: StateQuery = None,
    limit: LimitQuery = 50,
    cursor: CursorQuery = None,
) -> ApprovalList:
    """One tenant's requests for a human (pending by default), oldest first."""
    return await _list(store, tenant, kind, state, limit, cursor)
