"""The decision queue: /api/v1/tenants/{tenant}/decisions (spec §2.4).

router → decision_queue.respond (a compare-and-swap open → resolved in the store; an approved
mode change applied; the resume event `escalation/{decisionId}` enqueued, deduped)
→ `wake` to the agent. However many times, however concurrently an answer is sent,
the agent resumes once. The approvals' inbox answers a decision, an MCP call or a coder's
question by `answer_decision_approval`, the same answer.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query

from api.approvals.contracts import AnswerBody, Answering
from api.deps import ConnectorDep, JournalDep, SettingsDep, StoreDep
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.security.roles import AnswererDep
from api.sessions.temporal_calls import vote_session
from api.standing_agents.deps import DecisionPath, EnabledTenant
from api.standing_agents.models import DecisionList, RespondBody
from api.standing_agents.temporal_calls import Waker, WakerDep, get_waker
from api.temporal import TemporalConnector
from runtime.approvals.models import Approval
from runtime.approvals.projection import note_vote
from runtime.sessions.contracts import VoteRequest
from runtime.sessions.errors import SessionNotFound
from runtime.sessions.permissions import (
    NotPending,
)
from runtime.settings import Settings
from runtime.standing_agents import control, decision_queue
from runtime.standing_agents.coder_decisions import permission_vote
from runtime.standing_agents.contracts import AttentionStatus
from runtime.standing_agents.models import AttentionRequest
from runtime.standing_agents.views import DecisionView
from runtime.store import EventJournal, Store

router = APIRouter(prefix="/api/v1/tenants/{tenant}/decisions", route_class=StrictJsonRoute)


@router.get("", responses=errors(400, 403))
async def list_decisions(
    tenant: EnabledTenant,
    store: StoreDep,
    status: Annotated[Literal["open", "resolved"] | None, Query()] = None,
) -> DecisionList:
    rows = await asyncio.to_thread(
        decision_queue.list_decisions, store, tenant, AttentionStatus(status) if status else None
    )
    return DecisionList(decisions=[decision_queue.decision_view(row) for row in rows])


@router.post(
    "/{decision_id}/respond",
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401, 403, 404, 409),
)
async def respond(
    body: RespondBody,
    tenant: EnabledTenant,
    decision_id: DecisionPath,
    store: StoreDep,
    journal: JournalDep,
    waker: WakerDep,
    answered_by: AnswererDep,
    settings: SettingsDep,
    connector: ConnectorDep,
) -> DecisionView:
    """Answer a decision (`approve`, `reject` or free text); the same answer again gets
    the same body, a different one to a resolved decision is a 409. `answeredBy` records
    who the bearer verified (`admin`, `operator:<name>`), `respondedBy` what the body says.
    An answer to agentrt's coder's permission request is the session's vote, sent before
    the decision is resolved: a vote Temporal did not take (503) leaves it open."""
    row = await answer_decision(
        store,
        journal,
        waker,
        settings,
        connector,
        tenant,
        decision_id,
        body.resolution,
        notes=body.resolution_notes,
        responded_by=body.responded_by,
        answered_by=answered_by,
        digest=body.digest,
    )
    return decision_queue.decision_view(row)


async def answer_decision(
    store: Store,
    journal: EventJournal,
    waker: Waker,
    settings: Settings,
    connector: TemporalConnector,
    tenant: str,
    decision_id: str,
    resolution: str,
    *,
    notes: str | None,
    responded_by: str | None,
    answered_by: str,
    digest: str | None,
) -> AttentionRequest:
    """The one way a decision is answered: this route's and the approvals' inbox's
    (`answer_decision_approval`). 404 `decision_not_found`, 409 `decision_already_resolved`
    for a different answer to a resolved decision (the inbox reads its kind: an answer
    that came second may still be the same one); the same answer again is the row."""
    current = await asyncio.to_thread(decision_queue.get_decision, store, tenant, decision_id)
    if (
        permission_vote(current)
        and current.status == AttentionStatus.OPEN.value
        and resolution in (current.options or [])
    ):
        await _vote(connector, settings, store, current, resolution, answered_by)
    row, _won = await asyncio.to_thread(
        decision_queue.respond,
        store,
        journal,
        tenant,
        decision_id,
        resolution,
        notes,
        responded_by,
        answered_by,
        digest,
    )
    if permission_vote(row):
        return row
    instance = await asyncio.to_thread(control.find_instance, store, tenant, row.soa_instance_id)
    if instance is not None:
        await waker(instance)
    return row


async def answer_decision_approval(answering: Answering, row: Approval, body: AnswerBody) -> None:
    """The inbox's answer to a decision, an MCP call or a coder's question (an `Answerer`,
    api/approvals/contracts.py): answered as this route answers it, its agent woken by the
    waker this route's `WakerDep` gives."""
    await answer_decision(
        answering.store,
        answering.journal,
        get_waker(answering.request, answering.connector, answering.settings),
        answering.settings,
        answering.connector,
        row.tenant,
        row.ref,
        body.answer,
        notes=body.note,
        responded_by=None,
        answered_by=answering.answered_by,
        digest=body.digest,
    )


async def _vote(
    connector: TemporalConnector,
    settings: Settings,
    store: Store,
    row: AttentionRequest,
    option_id: str,
    answered_by: str,
) -> None:
    """agentrt's coder's permission request answered on the queue: the answer (one of the
    request's options) is the session's vote. A request resolved meanwhile (its timer, a
    cancel, a vote on the session) or whose session ended takes no vote."""
    vote = VoteRequest(
        request_id=str(row.payload["requestId"]),
        outcome="selected",
        option_id=option_id,
        client_id=None,
    )
    await asyncio.to_thread(note_vote, store, vote.request_id, None, answered_by)
    try:
        await vote_session(
            await connector.get(),
            settings,
            store,
            str(row.payload["sessionId"]),
            vote,
            # The same answer again is the same update (applied once).
            update_id=f"decision/{row.decision_id}",
        )
    except ApiError as err:
        # Not pending any more (its timer, a cancel, a vote on the session), or its session
        # is gone: there is no vote to take, and the answer is still recorded.
        if not isinstance(err.failure, NotPending | SessionNotFound):
            raise
