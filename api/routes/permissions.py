"""Permission vote routes: `POST /permission/:requestId` and the session-scoped form.
router → SessionWorkflow's `vote` update, whose validator applies the mediation policy.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Request
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

from api.deps import StoreDep, TemporalDep
from api.errors import ApiError
from api.routes.session_common import (
    WAIT_FOR_WORKER,
    client_id_of,
    is_local,
    live_session,
    read_body,
    session_handle,
)
from api.temporal import is_unavailable
from runtime.sessions import registry
from runtime.sessions.contracts import (
    VoteRequest,
)
from runtime.sessions.streams import session_event, session_stream
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from workflows.session import (
    SessionWorkflow,
)

router = APIRouter()

# -- permissions -----------------------------------------------------------------------------


def _vote_request(
    body: dict[str, Any], request_id: str, request: Request, voters: int
) -> VoteRequest:
    outcome = body.get("outcome")
    bad = ApiError(
        400,
        {
            "error": '`outcome` must be `{ outcome: "cancelled" }` or '
            '`{ outcome: "selected", optionId: string }`'
        },
    )
    if not isinstance(outcome, dict):
        raise bad
    kind = outcome.get("outcome")
    if kind == "cancelled":
        option = None
    elif kind == "selected" and isinstance(outcome.get("optionId"), str):
        option = outcome["optionId"]
    else:
        raise bad
    return VoteRequest(
        request_id=request_id,
        outcome=kind,
        option_id=option,
        client_id=client_id_of(request),
        is_local=is_local(request),
        eligible_voters=voters,
    )


async def _vote(
    request: Request,
    store: Store,
    client: Client,
    session_id: str,
    request_id: str,
    not_found: dict[str, Any],
) -> dict[str, Any]:
    body = await read_body(request)
    voters = await asyncio.to_thread(registry.client_count, store, session_id)
    vote = _vote_request(body, request_id, request, voters)
    try:
        await asyncio.wait_for(
            session_handle(client, session_id).execute_update(SessionWorkflow.vote, vote),
            WAIT_FOR_WORKER,
        )
    except WorkflowUpdateFailedError as err:
        error = _vote_error(err, request_id, session_id, vote, not_found)
        if error.status == 404:
            await _already_resolved(request, store, session_id, request_id, vote)
        raise error from err
    except RPCError as err:
        if is_unavailable(err):
            raise  # Temporal is down: a 503, not a verdict on the request
        raise ApiError(404, not_found) from err
    return {}


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


@router.post("/permission/{request_id}")
async def vote_permission(
    request_id: str, request: Request, store: StoreDep, client: TemporalDep
) -> dict[str, Any]:
    not_found = {"error": "No pending permission request", "requestId": request_id}
    session_id = await asyncio.to_thread(registry.find_permission_session, store, request_id)
    if (
        session_id is None
        or await asyncio.to_thread(registry.get_live_session, store, session_id) is None
    ):
        await read_body(request)  # malformed JSON still answers 400 first
        raise ApiError(404, not_found)
    return await _vote(request, store, client, session_id, request_id, not_found)


@router.post("/session/{session_id}/permission/{request_id}")
async def vote_session_permission(
    session_id: str, request_id: str, request: Request, store: StoreDep, client: TemporalDep
) -> dict[str, Any]:
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
    return await _vote(request, store, client, session_id, request_id, not_found)
