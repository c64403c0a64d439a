"""Permission vote routes: `POST /permission/:requestId` and the session-scoped form.
router → SessionWorkflow's `vote` update, whose validator applies the mediation policy.
The approvals' inbox answers a permission by `answer_permission_approval`, the same vote.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from temporalio.client import Client

from api.approvals.contracts import AnswerBody, Answering
from api.deps import SettingsDep, StoreDep, TemporalDep
from api.errors import ApiError
from api.input_bounds import MAX_ID_CHARS
from api.openapi import errors, json_body
from api.requests import client_id_of, is_local, read_body
from api.security.roles import answerer
from api.sessions.bodies import VoteBody
from api.sessions.models import VoteRecorded
from api.sessions.temporal_calls import live_session, vote_session
from runtime.approvals.answers import InvalidAnswer
from runtime.approvals.models import Approval
from runtime.approvals.projection import note_vote
from runtime.sessions import registry
from runtime.sessions.contracts import (
    VoteRequest,
)
from runtime.sessions.permissions import (
    NotPending,
)
from runtime.sessions.streams import session_event
from runtime.sessions.vote_body import (
    OutcomeError,
    validate_outcome_body,
)
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.streams import session_stream

router = APIRouter()

VOTE_DOC: dict[str, Any] = {
    "responses": errors(400, 403, 404, 501, 503),
    "openapi_extra": json_body(VoteBody),
}

# -- permissions -----------------------------------------------------------------------------


def _vote_request(
    body: dict[str, Any], request_id: str, request: Request, voters: int
) -> VoteRequest:
    checked = validate_outcome_body(body, max_option_id_chars=MAX_ID_CHARS)
    if isinstance(checked, OutcomeError):
        raise ApiError.of(checked)
    return VoteRequest(
        request_id=request_id,
        outcome=checked.outcome,
        option_id=checked.option_id,
        client_id=client_id_of(request),
        is_local=is_local(request),
        eligible_voters=voters,
    )


async def _vote(
    request: Request,
    settings: Settings,
    store: Store,
    client: Client,
    session_id: str,
    request_id: str,
    scoped_to: str | None,
) -> VoteRecorded:
    body = await read_body(request)
    voters = await asyncio.to_thread(registry.client_count, store, session_id)
    vote = _vote_request(body, request_id, request, voters)
    journal: EventJournal = request.app.state.journal
    await cast_vote(
        client, settings, store, journal, session_id, vote, answerer(request), scoped_to
    )
    return VoteRecorded()


async def cast_vote(
    client: Client,
    settings: Settings,
    store: Store,
    journal: EventJournal,
    session_id: str,
    vote: VoteRequest,
    answered_by: str,
    scoped_to: str | None,
) -> None:
    """The one way a permission vote is cast: these routes' and the approvals' inbox's
    (`answer_permission_approval`). Accepted is enough: the vote is in history and will be
    applied. A vote on a resolved request tells every client the outcome, then 404."""
    # Who votes, verified, noted before the workflow takes the vote (it knows client ids).
    await asyncio.to_thread(note_vote, store, vote.request_id, vote.client_id, answered_by)
    try:
        await vote_session(client, settings, store, session_id, vote)
    except ApiError as err:
        if not isinstance(err.failure, NotPending):
            raise
        await _already_resolved(journal, settings, store, session_id, vote)
        # The workflow does not know which route asked: the 404 names this route's scope.
        raise ApiError.of(err.failure.model_copy(update={"scoped_to": scoped_to})) from err


async def answer_permission_approval(answering: Answering, row: Approval, body: AnswerBody) -> None:
    """The inbox's answer to a permission (an `Answerer`, api/approvals/contracts.py): the
    administrator's vote for one of its options, cast as these routes cast it."""
    options = [str(o) for o in row.detail.get("options") or []]
    if body.answer not in options:
        raise ApiError.of(InvalidAnswer(approval_id=row.approval_id, expected=options))
    session_id = row.subject.removeprefix("session/")
    voters = await asyncio.to_thread(registry.client_count, answering.store, session_id)
    vote = VoteRequest(
        request_id=row.ref,
        outcome="selected",
        option_id=body.answer,
        client_id=None,
        is_local=is_local(answering.request),
        eligible_voters=voters,
    )
    await cast_vote(
        await answering.connector.get(),
        answering.settings,
        answering.store,
        answering.journal,
        session_id,
        vote,
        answering.answered_by,
        None,
    )


async def _already_resolved(
    journal: EventJournal, settings: Settings, store: Store, session_id: str, vote: VoteRequest
) -> None:
    """A late vote on a resolved request: tell every client what the outcome was."""
    request_id = vote.request_id
    outcome = await asyncio.to_thread(
        registry.find_permission_outcome, store, session_id, request_id
    )
    if outcome is None:
        return
    await journal.aappend_many(
        session_stream(session_id),
        [
            session_event(
                "permission_already_resolved",
                {"requestId": request_id, "sessionId": session_id, "outcome": outcome},
                originator=vote.client_id,
            )
        ],
        retention=settings.event_ring_size,
    )


@router.post("/permission/{request_id}", **VOTE_DOC)
async def vote_permission(
    request_id: str, request: Request, settings: SettingsDep, store: StoreDep, client: TemporalDep
) -> VoteRecorded:
    session_id = await asyncio.to_thread(registry.find_permission_session, store, request_id)
    if (
        session_id is None
        or await asyncio.to_thread(registry.get_live_session, store, session_id) is None
    ):
        await read_body(request)  # malformed JSON still answers 400 first
        raise ApiError.of(NotPending(request_id=request_id))
    return await _vote(request, settings, store, client, session_id, request_id, None)


@router.post("/session/{session_id}/permission/{request_id}", **VOTE_DOC)
async def vote_session_permission(
    session_id: str,
    request_id: str,
    request: Request,
    settings: SettingsDep,
    store: StoreDep,
    client: TemporalDep,
) -> VoteRecorded:
    await live_session(store, session_id)
    owner = await asyncio.to_thread(registry.find_permission_session, store, request_id)
    if owner != session_id:
        await read_body(request)
        raise ApiError.of(NotPending(request_id=request_id, scoped_to=session_id))
    return await _vote(request, settings, store, client, session_id, request_id, session_id)
