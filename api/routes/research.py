"""The research flow's own routes: the human decision on a prepared research.

This is the only way a research gets authorized — never through the agent-tools
gateway. Approving persists the decision (the grant) and admits the campaign;
denying persists the denial. The turn that proposed it is then woken by a signal
and reads the research's state itself.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from temporalio.service import RPCError

from api.deps import SettingsDep, StoreDep, TemporalDep
from api.errors import ApiError
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.routes.agent_tools_models import ResearchPublic
from api.security.browser import BrowserDep, BrowserMutationDep
from runtime.agent_tools.contracts import WORKSPACE_PATTERN, ResearchDecided
from runtime.investigation.research import (
    DECISION_ROUTE_TEMPLATE,
    RESEARCH_ROUTES_PREFIX,
    ResearchAlreadyDecided,
    ResearchNotFound,
    decide_research,
    research_state,
)
from workflows.turn import TurnWorkflow, turn_workflow_id

log = logging.getLogger(__name__)
router = APIRouter(prefix=RESEARCH_ROUTES_PREFIX, route_class=StrictJsonRoute)


class DecisionBody(BaseModel):
    decision: Literal["approve", "deny"]
    decided_by: str = Field(min_length=1, max_length=200)
    note: str | None = Field(default=None, max_length=2000)
    workspace: str | None = Field(default=None, pattern=WORKSPACE_PATTERN)


def _not_found(research_id: str) -> ApiError:
    return ApiError(
        404,
        {
            "error": f'No research with id "{research_id}"',
            "code": "research_not_found",
            "research_id": research_id,
        },
    )


@router.get("/{research_id}", responses=errors(400, 403, 404))
async def get_research(
    research_id: str,
    _browser: BrowserDep,
    settings: SettingsDep,
    store: StoreDep,
    workspace: Annotated[str | None, Query(pattern=WORKSPACE_PATTERN)] = None,
) -> ResearchPublic:
    ws = workspace or settings.agent_tools_workspace

    def read() -> dict[str, Any]:
        with store.session() as db:
            return research_state(db, ws, research_id)

    try:
        return ResearchPublic.model_validate(await asyncio.to_thread(read))
    except ResearchNotFound as err:
        raise _not_found(research_id) from err


@router.post(
    DECISION_ROUTE_TEMPLATE.removeprefix(RESEARCH_ROUTES_PREFIX),
    responses=errors(400, 403, 404, 409, 429, 503),
)
async def decide(
    research_id: str,
    body: DecisionBody,
    _browser: BrowserMutationDep,
    settings: SettingsDep,
    store: StoreDep,
    client: TemporalDep,
) -> ResearchPublic:
    ws = body.workspace or settings.agent_tools_workspace

    def write() -> dict[str, Any]:
        with store.session() as db:
            decide_research(db, ws, research_id, body.decision, body.decided_by, body.note)
            return research_state(db, ws, research_id)

    try:
        state = await asyncio.to_thread(write)
    except ResearchNotFound as err:
        raise _not_found(research_id) from err
    except ResearchAlreadyDecided as err:
        raise ApiError(
            409,
            {"error": str(err), "code": "research_already_decided", "research_id": research_id},
        ) from err
    except ValueError as err:
        raise ApiError(400, {"error": str(err), "code": "invalid_decision"}) from err
    turn_id = state.get("turn_id")
    if turn_id:
        handle = client.get_workflow_handle(turn_workflow_id(settings.instance, ws, turn_id))
        try:
            await handle.signal(
                TurnWorkflow.research_decided,
                ResearchDecided(research_id=research_id, decision=body.decision),
            )
        except RPCError as err:  # the turn may be gone; the decision stands regardless
            log.info("turn %s not signalled: %s", turn_id, err)
    return ResearchPublic.model_validate(state)
