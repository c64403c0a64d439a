"""Permission vote routes: `POST /permission/:requestId` and the session-scoped form.
router → SessionWorkflow's `vote` update, whose validator applies the mediation policy.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Request
from temporalio.client import Client, WorkflowUpdateFailedError

from api.deps import SettingsDep, StoreDep, TemporalDep
from api.errors import ApiError
from api.openapi import errors, json_body
from api.routes.session_bodies import VoteBody
from api.routes.session_common import (
    client_id_of,
    is_local,
    live_session,
    read_body,
    update_session,
)
from api.routes.session_models import VoteRecorded
from runtime.sessions import registry
from runtime.sessions.contracts import (
    VoteRequest,
)
from runtime.sessions.streams import session_event
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.streams import session_stream
from workflows.session import (
    SessionWorkflow,
)

router = APIRouter()

VOTE_DOC: dict[str, Any] = {
    "responses": errors(400, 403, 404, 501, 503),
    "openapi_extra": json_body(VoteBody),
}

# -- permissions -----------------------------------------------------------------------------


def _vote_request(body: VoteBody, request_id: str, request: Request, voters: int) -> VoteRequest:
    return VoteRequest(
        request_id=request_id,
        outcome=body.outcome.outcome,
        option_id=body.option_id,
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
    not_found: dict[str, Any],
) -> VoteRecorded:
    raw = await read_body(request)
    voters = await asyncio.to_thread(registry.client_count, store, session_id)
    vote = _vote_request(VoteBody.parse(raw), request_id, request, voters)
    try:
        # Accepted is enough: the vote is in history and will be applied.
        await update_session(
            client,
            settings,
            store,
            session_id,
            SessionWorkflow.vote,
            vote,
            wait_for_result=False,
        )
    except ApiError as err:
        cause = err.__cause__
        if not isinstance(cause, WorkflowUpdateFailedError) or err.status != 409:
            raise
        error = _vote_error(cause, request_id, session_id, vote, not_found)
        if error.status == 404:
            await _already_resolved(request, store, session_id, request_id, vote)
        raise error from cause
    return VoteRecorded()


async def _already_resolved(
    request: Request, store: Store, session_id: str, request_id: str, vote: VoteRequest
) -> None:
    """A late vote on a resolved request: tell every client what the outcome was."""
    outcome = await asyncio.to_thread(
        registry.find_permission_outcome, store, session_id, request_id
    )
    if outcome is None:
        return
    journal: EventJournal = request.app.state.journal
    settings: Settings = request.app.state.settings
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


def _vote_error(
    err: WorkflowUpdateFailedError,
    request_id: str,
    session_id: str,
    vote: VoteRequest,
    not_found: dict[str, Any],
) -> ApiError:
    try:
        detail = json.loads(str(err.cause.message if err.cause else "") or "{}")  # type: ignore[attr-defined]
    except ValueError:
        detail = {}
    code = detail.get("code")
    if code == "Forbidden":
        return ApiError(
            403,
            {
                "error": "The permission policy rejected this vote",
                "code": "permission_forbidden",
                "reason": detail.get("reason"),
                "requestId": request_id,
                "sessionId": session_id,
            },
        )
    if code == "InvalidOption":
        return ApiError(
            400,
            {
                "error": f'Permission {request_id}: optionId "{vote.option_id}" is not in the set '
                "of options the agent offered.",
                "code": "invalid_option_id",
                "requestId": request_id,
                "optionId": vote.option_id,
            },
        )
    if code == "SentinelCollision":
        return ApiError(
            500,
            {
                "error": "The agent offered the reserved cancel sentinel",
                "code": "cancel_sentinel_collision",
                "requestId": request_id,
            },
        )
    if code == "PolicyNotImplemented":
        return ApiError(
            501,
            {
                "error": "Permission policy not implemented",
                "code": "permission_policy_not_implemented",
                "policy": detail.get("policy"),
            },
        )
    return ApiError(404, not_found)


@router.post("/permission/{request_id}", **VOTE_DOC)
async def vote_permission(
    request_id: str, request: Request, settings: SettingsDep, store: StoreDep, client: TemporalDep
) -> VoteRecorded:
    not_found = {"error": "No pending permission request", "requestId": request_id}
    session_id = await asyncio.to_thread(registry.find_permission_session, store, request_id)
    if (
        session_id is None
        or await asyncio.to_thread(registry.get_live_session, store, session_id) is None
    ):
        await read_body(request)  # malformed JSON still answers 400 first
        raise ApiError(404, not_found)
    return await _vote(request, settings, store, client, session_id, request_id, not_found)


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
    not_found = {
        "error": "No pending permission request for session",
        "sessionId": session_id,
        "requestId": request_id,
    }
    owner = await asyncio.to_thread(registry.find_permission_session, store, request_id)
    if owner != session_id:
        await read_body(request)
        raise ApiError(404, not_found)
    return await _vote(request, settings, store, client, session_id, request_id, not_found)
