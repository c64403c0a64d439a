"""A session's status routes (spec session-daemon-http-protocol): the read-only snapshots
(`/session/:id/supported-commands`, `/session/:id/tasks`) and the recap
(`/session/:id/recap`, one sentence from the model; no event is published).

router → the store (the session registry) and, for the recap, the session's workflow.
"""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Request
from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError

from api.deps import SettingsDep, StoreDep, TemporalDep
from api.errors import workflow_error
from api.openapi import errors
from api.requests import client_id_of
from api.sessions.models import SessionRecap, SessionTasks, SupportedCommands
from api.sessions.temporal_calls import live_session, update_session
from runtime.sessions.contracts import RecapRequest, RecapResult
from workflows.sessions.session import SessionWorkflow

router = APIRouter()


@router.get("/session/{session_id}/supported-commands", responses=errors(404))
async def supported_commands(session_id: str, store: StoreDep) -> SupportedCommands:
    """agentrt's agent has no slash commands and no skills: both lists are empty."""
    await live_session(store, session_id)
    return SupportedCommands(v=1, session_id=session_id, available_commands=[], available_skills=[])


@router.get("/session/{session_id}/tasks", responses=errors(404))
async def session_tasks(session_id: str, store: StoreDep) -> SessionTasks:
    """agentrt runs no background tasks (sub-agents, shells, monitors): always empty."""
    await live_session(store, session_id)
    return SessionTasks(v=1, session_id=session_id, now=int(time.time() * 1000), tasks=[])


# -- session recap -------------------------------------------------------------------------

# The spec's SESSION_RECAP_TIMEOUT_MS: the recap activity's own bound
# (workflows/sessions/session.py).
RECAP_TIMEOUT_S = 60.0


@router.post("/session/{session_id}/recap", responses=errors(400, 404, 503))
async def session_recap(
    session_id: str, request: Request, settings: SettingsDep, store: StoreDep, client: TemporalDep
) -> SessionRecap:
    """A one-sentence "where are we" of the session, from the model (tools off, the
    session's history read, not extended). `recap` is null with fewer than two messages,
    without a `<recap>` in the answer, or on a model error or after 60 s. The body is
    ignored; no event is published."""
    client_id_of(request)  # a malformed X-Qwen-Client-Id is a 400
    await live_session(store, session_id)
    accepted = await update_session(
        client,
        settings,
        store,
        session_id,
        SessionWorkflow.recap,
        RecapRequest(),
        wait_for_result=False,
    )
    try:
        # An update's result is polled round after round: rpc_timeout would bound one
        # round, not the wait (api/temporal.py), so the wait is bounded here.
        result: RecapResult = await asyncio.wait_for(accepted.result(), RECAP_TIMEOUT_S + 5)
    except WorkflowUpdateFailedError as err:
        raise workflow_error(err) from err
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        return SessionRecap(session_id=session_id, recap=None)
    return SessionRecap(session_id=session_id, recap=result.recap)
