"""The research flow's own routes: the human decision on a prepared research.

This is the only way a research gets authorized — never through the agent-tools
gateway. Approving persists the decision (the grant) and admits the campaign;
denying persists the denial. The turn that proposed it is told by a signal that
carries the decision (its `resume` validator decides on it); the turn still reads
the research's state from the store before it ends.

The signal goes first, then the write: a decision is never in the store without
its turn having been told (Temporal down: 503, nothing written, the same POST again
works). A write that fails after the signal leaves a turn told of a decision the
store does not hold; the turn reads the store, finds none, and waits again.

The approvals' inbox decides a research by `answer_research_approval`, the same decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Annotated, Final, Literal, get_args

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from api.approvals.contracts import AnswerBody, Answering
from api.deps import SettingsDep, StoreDep, TemporalDep
from api.errors import ApiError, temporal_unavailable
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security.browser import BrowserDep, BrowserMutationDep
from api.security.roles import AnswererDep
from runtime.agent_tools.contracts import WORKSPACE_PATTERN, ResearchDecided, turn_workflow_id
from runtime.approvals.answers import InvalidAnswer
from runtime.approvals.models import Approval
from runtime.investigation.research import (
    DECISION_ROUTE_TEMPLATE,
    RESEARCH_ROUTES_PREFIX,
    InvalidResearchDecision,
    ResearchAlreadyDecided,
    ResearchNoLongerPrepared,
    ResearchNotFound,
    UnknownResearch,
    decide_research,
    research_state,
)
from runtime.investigation.views import ResearchPublic
from runtime.settings import Settings
from runtime.store import Store
from workflows.agent_tools.turn import TurnWorkflow

log = logging.getLogger(__name__)
# A human's decision on a prepared research (spec 000).
ResearchDecision = Literal["approve", "deny"]
_RESEARCH_ANSWERS: Final[list[str]] = list(get_args(ResearchDecision))
# Temporal takes a signal in milliseconds; past this it is away: 503, nothing written.
SIGNAL_WAIT = 5.0
router = APIRouter(prefix=RESEARCH_ROUTES_PREFIX, route_class=StrictJsonRoute)


class DecisionBody(BaseModel):
    decision: ResearchDecision
    decided_by: str = Field(min_length=1, max_length=200)
    note: str | None = Field(default=None, max_length=2000)
    workspace: str | None = Field(default=None, pattern=WORKSPACE_PATTERN)


@router.get("/{research_id}", responses=errors(400, 403, 404))
async def get_research(
    research_id: str,
    _browser: BrowserDep,
    settings: SettingsDep,
    store: StoreDep,
    workspace: Annotated[str | None, Query(pattern=WORKSPACE_PATTERN)] = None,
) -> ResearchPublic:
    ws = workspace or settings.agent_tools_workspace

    def read() -> ResearchPublic:
        with store.session() as db:
            return research_state(db, ws, research_id)

    try:
        return await asyncio.to_thread(read)
    except ResearchNotFound as err:
        raise ApiError.of(UnknownResearch(research_id=research_id)) from err


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
    answered_by: AnswererDep,
) -> ResearchPublic:
    return await decide_and_tell(
        client,
        settings,
        store,
        research_id,
        body.decision,
        decided_by=body.decided_by,
        note=body.note,
        workspace=body.workspace or settings.agent_tools_workspace,
        answered_by=answered_by,
    )


async def decide_and_tell(
    client: Client,
    settings: Settings,
    store: Store,
    research_id: str,
    decision: ResearchDecision,
    *,
    decided_by: str,
    note: str | None,
    workspace: str,
    answered_by: str,
) -> ResearchPublic:
    """The one way a research is decided: this route's and the approvals' inbox's
    (`answer_research_approval`). Its turn is told first, then the decision is written; the
    research's state after it. 404 `research_not_found`, 409 `research_already_decided`."""

    def check() -> str | None:
        """What the write would refuse, refused before the turn hears of it; its turn. A
        dry run: the session closes uncommitted, which discards the flushed decision."""
        with store.session() as db:
            research = decide_research(db, workspace, research_id, decision, decided_by, note)
            return research.turn_id

    def write() -> ResearchPublic:
        with store.transaction() as db:
            decide_research(
                db,
                workspace,
                research_id,
                decision,
                decided_by,
                note,
                answered_by=answered_by,
            )
            return research_state(db, workspace, research_id)

    with _decision_errors(research_id):
        turn_id = await asyncio.to_thread(check)
    if turn_id:
        await _tell_turn(client, settings.instance, workspace, turn_id, research_id, decision)
    with _decision_errors(research_id):
        return await asyncio.to_thread(write)


async def answer_research_approval(answering: Answering, row: Approval, body: AnswerBody) -> None:
    """The inbox's answer to a research (an `Answerer`, api/approvals/contracts.py):
    `approve` or `deny`, decided as this route decides it, by who answers."""
    settings = answering.settings
    if body.answer not in _RESEARCH_ANSWERS:
        raise ApiError.of(InvalidAnswer(approval_id=row.approval_id, expected=_RESEARCH_ANSWERS))
    await decide_and_tell(
        await answering.connector.get(),
        settings,
        answering.store,
        row.ref,
        "approve" if body.answer == "approve" else "deny",
        decided_by=answering.answered_by,
        note=body.note,
        workspace=str(row.detail.get("workspace") or settings.agent_tools_workspace),
        answered_by=answering.answered_by,
    )


async def _tell_turn(
    client: Client,
    instance: str,
    workspace: str,
    turn_id: str,
    research_id: str,
    decision: ResearchDecision,
) -> None:
    handle = client.get_workflow_handle(turn_workflow_id(instance, workspace, turn_id))
    try:
        await asyncio.wait_for(
            handle.signal(
                TurnWorkflow.research_decided,
                ResearchDecided(research_id=research_id, decision=decision),
            ),
            SIGNAL_WAIT,
        )
    except TimeoutError as err:
        raise temporal_unavailable() from err
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise  # answered by api.errors (503 while Temporal is away)
        # The turn is over (or never started): the decision stands regardless.
        log.info("turn %s not signalled: %s", turn_id, err)


@contextlib.contextmanager
def _decision_errors(research_id: str) -> Iterator[None]:
    """The research flow's refusals (exceptions, which the gateway's tools and the
    activities catch too) as their typed answers. `ApiError`s, not refusals let through:
    the approvals inbox reads the refusal's kind (an answer that came second may be the same)."""
    try:
        yield
    except ResearchNotFound as err:
        raise ApiError.of(UnknownResearch(research_id=research_id)) from err
    except ResearchAlreadyDecided as err:
        refusal = ResearchNoLongerPrepared(research_id=err.research_id, state=err.state)
        raise ApiError.of(refusal) from err
    except ValueError as err:
        raise ApiError.of(InvalidResearchDecision(message=str(err))) from err
