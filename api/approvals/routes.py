"""The approvals' inbox: every request for a human, whatever its kind, in one listing.

- `GET /api/v1/approvals`: the administrator's (every tenant, and the deployment's own
  requests: sessions' permission votes, agent-tools research authorizations, device-flow
  logins), filtered by `tenant`, `kind` and `state`, oldest first, cursor-paged;
- `GET /api/v1/tenants/{tenant}/approvals`: one tenant's, the same listing (an operator
  token of the tenant reaches it);
- `POST .../approvals/{approvalId}/answer` on both: the answer, by the kind's own operation
  (runtime/approvals/answers.py says who may answer what, and the refusals): the feature
  of the kind answers it (its `Answerer`, api/approvals/contracts.py, listed by its
  `approval_answerers()`), the inbox reads the record it left.

Each entry also links to the route that answers it in its kind's own protocol; answering
there or here is the same operation.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import ConfigDict
from temporalio.exceptions import ApplicationError

from api.approvals.contracts import AnswerBody, Answerer, Answering
from api.deps import TENANT_PATTERN, ConnectorDep, JournalDep, SettingsDep, StoreDep, TenantPath
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.security.roles import AnswererDep, ForbiddenRole, IdentityDep
from runtime.approvals import ledger
from runtime.approvals.answers import (
    ApprovalAlreadyResolved,
    ApprovalNotFound,
    may_answer,
    same_answer,
)
from runtime.approvals.ledger import DEPLOYMENT, ApprovalKind, ApprovalState, InboxFilter
from runtime.approvals.models import Approval
from runtime.store import Store
from runtime.timestamps import iso_ms
from runtime.wire import WireModel

router = APIRouter(tags=["approvals"])
answers = APIRouter(tags=["approvals"], route_class=StrictJsonRoute)

MAX_LIMIT = 200
CURSOR_PATTERN = r"^[A-Za-z0-9_-]{1,600}={0,2}$"


class ApprovalView(WireModel):
    model_config = ConfigDict(extra="forbid")

    approval_id: str
    kind: ApprovalKind
    ref: str
    tenant: str | None
    subject: str
    asked_by: str
    title: str
    detail: dict[str, Any]
    digest: str | None
    link: str
    state: ApprovalState
    created_at: str
    expires_at: str | None
    timeout_ms: int | None
    answer: str | None
    answered_by: str | None
    answered_client: str | None
    ended_at: str | None
    end_reason: str | None


class ApprovalList(WireModel):
    approvals: list[ApprovalView]
    next_cursor: str | None


def approval_view(row: Approval) -> ApprovalView:
    def at(value: datetime | None) -> str | None:
        return None if value is None else iso_ms(value)

    return ApprovalView(
        approval_id=row.approval_id,
        kind=ApprovalKind(row.kind),
        ref=row.ref,
        tenant=None if row.tenant == DEPLOYMENT else row.tenant,
        subject=row.subject,
        asked_by=row.asked_by,
        title=row.title,
        detail=row.detail,
        digest=row.digest,
        link=row.link,
        state=ApprovalState(row.state),
        created_at=iso_ms(row.created_at),
        expires_at=at(row.expires_at),
        timeout_ms=row.timeout_ms,
        answer=row.answer,
        answered_by=row.answered_by,
        answered_client=row.answered_client,
        ended_at=at(row.ended_at),
        end_reason=row.end_reason,
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
        next_cursor=ledger.encode_cursor(page[-1]) if more else None,
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


# -- answering -------------------------------------------------------------------------------

APPROVAL_ID_PATTERN = r"^[a-z_]{1,20}:[A-Za-z0-9._:@-]{1,178}$"
ApprovalPath = Annotated[str, Path(pattern=APPROVAL_ID_PATTERN)]
# The kinds whose answer is settled by their workflow (a vote, a flow's cancel), a moment
# after the route's operation returns: the answer reads their record once it has ended.
_SETTLED_LATER: Final = frozenset({ApprovalKind.PERMISSION, ApprovalKind.DEVICE_LOGIN})
_SETTLE_WAIT = 5.0
_SETTLE_POLL = 0.05
# The kinds' own refusals of an answer to a request that already ended, by their refusal's
# kind (a permission's vote, a decision's answer, a research's decision).
_ENDED_KINDS: Final = frozenset(
    {"permission_not_pending", "decision_already_resolved", "research_already_decided"}
)


async def _answering(
    request: Request,
    store: StoreDep,
    journal: JournalDep,
    settings: SettingsDep,
    connector: ConnectorDep,
    identity: IdentityDep,
    answered_by: AnswererDep,
) -> Answering:
    return Answering(request, store, journal, settings, connector, identity, answered_by)


AnsweringDep = Annotated[Answering, Depends(_answering)]
ANSWER_DOC: dict[str, Any] = {
    "dependencies": [Depends(require_configured_token)],
    "responses": errors(400, 401, 403, 404, 409, 503),
}


@answers.post("/api/v1/approvals/{approval_id}/answer", **ANSWER_DOC)
async def answer_approval(
    approval_id: ApprovalPath, body: AnswerBody, answering: AnsweringDep
) -> ApprovalView:
    """Answer any pending request for a human, by its kind's own operation (the same as
    its `link`): the same answer again reads the same record, a different one to an
    ended approval is 409 `approval_already_resolved`."""
    return approval_view(await _answer(answering, None, approval_id, body))


@answers.post("/api/v1/tenants/{tenant}/approvals/{approval_id}/answer", **ANSWER_DOC)
async def answer_tenant_approval(
    tenant: TenantPath, approval_id: ApprovalPath, body: AnswerBody, answering: AnsweringDep
) -> ApprovalView:
    """Answer one of the tenant's requests (an operator token of the tenant may)."""
    return approval_view(await _answer(answering, tenant, approval_id, body))


async def _read(store: Store, approval_id: str) -> Approval | None:
    def read() -> Approval | None:
        with store.engine.connect() as connection:
            return ledger.get_approval(connection, approval_id)

    return await asyncio.to_thread(read)


async def _ended(store: Store, approval_id: str, wait: float) -> Approval | None:
    """The approval once it has left `pending`, or as it is after `wait` seconds."""
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        row = await _read(store, approval_id)
        if row is None or row.state != ApprovalState.PENDING.value:
            return row
        if asyncio.get_running_loop().time() >= deadline:
            return row
        await asyncio.sleep(_SETTLE_POLL)


def _ended_otherwise(row: Approval) -> ApiError:
    return ApiError.of(
        ApprovalAlreadyResolved(approval_id=row.approval_id, state=row.state, answer=row.answer)
    )


def _answerer(request: Request, kind: ApprovalKind) -> Answerer:
    """The kind's answerer, as its feature lists it (api/app.py collects them)."""
    answerers: dict[ApprovalKind, Answerer] = request.app.state.approval_answerers
    return answerers[kind]


async def _answer(
    answering: Answering, tenant: str | None, approval_id: str, body: AnswerBody
) -> Approval:
    row = await _read(answering.store, approval_id)
    if row is None or (tenant is not None and row.tenant != tenant):
        raise ApiError.of(ApprovalNotFound(approval_id=approval_id))
    kind = ApprovalKind(row.kind)
    identity = answering.identity
    role = None if identity is None or identity.is_admin else (identity.role or "none")
    if not may_answer(role, kind):
        raise ApiError.of(ForbiddenRole(role=role or "none"))
    if row.state != ApprovalState.PENDING.value:
        if same_answer(row, body.answer):
            return row
        raise _ended_otherwise(row)
    try:
        await _answerer(answering.request, kind)(answering, row, body)
    except (ApiError, ApplicationError) as caught:
        err = caught if isinstance(caught, ApiError) else ApiError.carried_by(caught)
        refusal = err.failure.kind_name if err.failure is not None else err.body.get("code")
        if refusal not in _ENDED_KINDS:
            raise
        # Another answer, its timer or its end came first: same answer or 409.
        now = await _ended(answering.store, approval_id, _SETTLE_WAIT)
        if now is None or now.state == ApprovalState.PENDING.value:
            raise
        if same_answer(now, body.answer):
            return now
        raise _ended_otherwise(now) from err
    wait = _SETTLE_WAIT if kind in _SETTLED_LATER else 0.0
    now = await _ended(answering.store, approval_id, wait)
    if now is None:
        return row
    if now.state != ApprovalState.PENDING.value and not same_answer(now, body.answer):
        # It ended otherwise meanwhile (a different vote taken first, a login approved
        # at its provider): this answer changed nothing.
        raise _ended_otherwise(now)
    # Ended by this answer, or still pending (a consensus vote that counted, short of
    # its quorum).
    return now
