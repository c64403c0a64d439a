"""The agent-tools gateway: /api/v1/agent-tools/* (spec agent-tools-protocol-v1).

router → TurnWorkflow (turns, resume) or the store (catalog, calls, results, events).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, Field
from sqlmodel import Session
from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.common import TypedSearchAttributes
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from api.agent_tools.models import (
    BrowserSession,
    Catalog,
    EventsPage,
    TurnCreated,
    TurnResuming,
)
from api.deps import JournalDep, SettingsDep, StoreDep, TemporalDep
from api.errors import ApiError, rpc_error, temporal_unavailable, workflow_error
from api.input_bounds import MAX_SEQUENCE, StrictJsonRoute
from api.openapi import errors
from api.security.browser import BrowserDep, BrowserMutationDep
from api.temporal import query_workflow
from runtime.agent_tools.browser import (
    BROWSER_SESSION_TTL,
    COOKIE_NAME,
    CrossSiteRefused,
    MintRefused,
    open_browser_session,
)
from runtime.agent_tools.calls import (
    call_result,
    execute_call,
    get_result,
    result_body,
)
from runtime.agent_tools.contracts import (
    WORKSPACE_PATTERN,
    CallRequest,
    ResumeRequest,
    TurnInput,
    TurnResult,
    TurnState,
    turn_workflow_id,
)
from runtime.agent_tools.errors import (
    ResultNotFound,
    TurnExists,
    TurnNotFound,
    TurnNotStarted,
    TurnNotWaiting,
)
from runtime.agent_tools.events import event_body, event_data
from runtime.agent_tools.models import AgentTurn
from runtime.agent_tools.views import CallResult, ToolResult
from runtime.investigation.catalog import catalog
from runtime.investigation.views import CatalogTool
from runtime.settings import Settings
from runtime.store import Store
from runtime.store.journal_contracts import NewEvent
from runtime.streams import agent_tools_events_stream
from workflows.agent_tools.turn import TurnWorkflow, turn_search_attributes

router = APIRouter(prefix="/api/v1/agent-tools", route_class=StrictJsonRoute)

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$"
WorkspaceQuery = Annotated[str | None, Query(pattern=WORKSPACE_PATTERN)]
UPDATE_WAIT = 30.0
START_WAIT = 10.0


class TurnCreate(BaseModel):
    prompt: str = Field(min_length=1, max_length=4000)
    workspace: str | None = Field(default=None, pattern=WORKSPACE_PATTERN)
    turn_id: str | None = Field(default=None, pattern=ID_PATTERN)
    agent: Literal["deterministic", "model"] = "deterministic"


class ResumeBody(BaseModel):
    workspace: str | None = Field(default=None, pattern=WORKSPACE_PATTERN)


class CallBody(CallRequest):
    call_id: str | None = Field(default=None, max_length=64)  # the store's column
    workspace: str | None = Field(default=None, pattern=WORKSPACE_PATTERN)


def _load_turn(store: Store, instance: str, workspace: str, turn_id: str) -> AgentTurn | None:
    with store.session() as session:
        row: AgentTurn | None = session.get(AgentTurn, (instance, workspace, turn_id))
        return row


# -- browser session and catalog -------------------------------------------------------------------


@router.get("/session", responses=errors(403))
async def open_browser(
    request: Request, response: Response, store: StoreDep, settings: SettingsDep
) -> BrowserSession:
    """Open (or re-open) the browser's local session (a cookie: not a daemon session);
    the CSRF token goes to the page. A live cookie is re-used: only a caller without one
    mints a row (runtime/agent_tools/browser.py bounds them), and never a cross-site one
    (`Sec-Fetch-Site: cross-site`: 403 `cross_site_refused`)."""
    cross_site = request.headers.get("sec-fetch-site", "").lower() == "cross-site"
    try:
        browser = await asyncio.to_thread(
            open_browser_session,
            store,
            request.cookies.get(COOKIE_NAME),
            max_sessions=settings.agent_tools_max_browser_sessions,
            may_mint=not cross_site,
        )
    except MintRefused:
        raise ApiError.of(CrossSiteRefused()) from None
    response.set_cookie(
        COOKIE_NAME,
        browser.cookie,
        max_age=int(BROWSER_SESSION_TTL.total_seconds()),
        httponly=True,
        samesite="strict",
        path="/api/v1",
    )
    return BrowserSession(csrf_token=browser.csrf_token)


@router.get("/catalog", responses=errors(400, 403), response_model_exclude_unset=True)
async def get_catalog(
    _browser: BrowserDep, settings: SettingsDep, store: StoreDep, workspace: WorkspaceQuery = None
) -> Catalog:
    ws = workspace or settings.agent_tools_workspace

    def read() -> list[CatalogTool]:
        with store.session() as db:
            return catalog(db, ws)

    return Catalog(workspace=ws, tools=await asyncio.to_thread(read))


# -- turns ---------------------------------------------------------------------------------


@router.post(
    "/turns",
    status_code=202,
    responses={
        200: {
            "model": TurnCreated,
            "description": "The same turn again (same id, prompt and agent): idempotent.",
        },
        **errors(400, 403, 409, 429, 503),
    },
)
async def create_turn(
    body: TurnCreate,
    _browser: BrowserMutationDep,
    settings: SettingsDep,
    store: StoreDep,
    journal: JournalDep,
    client: TemporalDep,
    response: Response,
) -> TurnCreated:
    workspace = body.workspace or settings.agent_tools_workspace
    turn_id = body.turn_id or str(uuid.uuid4())
    workflow_id = turn_workflow_id(settings.instance, workspace, turn_id)
    created_at = datetime.now(UTC)

    def write(db: Session) -> AgentTurn | None:
        """None when inserted; the existing row when the turn id is taken (a concurrent
        create that took it first: this runs again and finds its row)."""
        existing: AgentTurn | None = db.get(AgentTurn, (settings.instance, workspace, turn_id))
        if existing is not None:
            return existing
        db.add(
            AgentTurn(
                instance=settings.instance,
                workspace=workspace,
                turn_id=turn_id,
                agent=body.agent,
                prompt=body.prompt,
                workflow_id=workflow_id,
                created_at=created_at,
            )
        )
        db.flush()
        return None

    existing = await asyncio.to_thread(store.run_transaction, write)
    if existing is not None and (existing.prompt, existing.agent) != (body.prompt, body.agent):
        raise ApiError.of(TurnExists(turn_id=turn_id))
    _, last_seq = await asyncio.to_thread(
        journal.bounds, agent_tools_events_stream(settings.instance, workspace)
    )
    request = TurnInput(
        instance=settings.instance,
        workspace=workspace,
        turn_id=turn_id,
        prompt=body.prompt,
        agent=body.agent,
        event_retention=settings.agent_tools_max_events,
    )
    try:
        await asyncio.wait_for(
            client.start_workflow(
                TurnWorkflow.run,
                request,
                id=workflow_id,
                task_queue=settings.task_queue,
                search_attributes=TypedSearchAttributes(turn_search_attributes(request)),
                # Shown in the Web UI next to the workflow: what the turn is about.
                memo={"prompt": body.prompt[:200], "agent": body.agent, "workspace": workspace},
            ),
            START_WAIT,
        )
    except WorkflowAlreadyStartedError:
        response.status_code = 200  # the same turn again: idempotent
    except (RPCError, TimeoutError) as err:
        # The row stays (the turn's identity, and its workflow reads the prompt from it):
        # the same POST again starts the workflow, or finds it started.
        raise temporal_unavailable(
            f'Temporal did not start turn "{turn_id}"; POST it again with the same turn_id'
        ) from err
    return TurnCreated(
        turn_id=turn_id,
        workspace=workspace,
        agent=body.agent,
        workflow_id=workflow_id,
        status="running",
        events_cursor=last_seq if existing is None else 0,
    )


async def _turn_handle(
    client: Client, settings: Settings, store: Store, workspace: str, turn_id: str
) -> tuple[AgentTurn, WorkflowHandle[Any, Any]]:
    row = await asyncio.to_thread(_load_turn, store, settings.instance, workspace, turn_id)
    if row is None:
        raise ApiError.of(TurnNotFound(turn_id=turn_id))
    return row, client.get_workflow_handle(row.workflow_id)


@router.get("/turns/{turn_id}", responses=errors(400, 403, 404, 503))
async def get_turn(
    turn_id: str,
    _browser: BrowserDep,
    settings: SettingsDep,
    store: StoreDep,
    client: TemporalDep,
    workspace: WorkspaceQuery = None,
) -> TurnState:
    ws = workspace or settings.agent_tools_workspace
    _row, handle = await _turn_handle(client, settings, store, ws, turn_id)
    return await _query_state(handle, turn_id)


async def _query_state(handle: WorkflowHandle[Any, Any], turn_id: str) -> TurnState:
    try:
        return await query_workflow(
            lambda timeout: handle.query(TurnWorkflow.state, rpc_timeout=timeout), UPDATE_WAIT
        )
    except RPCError as err:
        raise _turn_rpc_error(err, turn_id) from err


def _turn_rpc_error(err: RPCError, turn_id: str) -> ApiError:
    if err.status == RPCStatusCode.NOT_FOUND:
        # The API went away between recording the turn and starting its workflow.
        return ApiError.of(TurnNotStarted(turn_id=turn_id))
    return rpc_error(err)


@router.post("/turns/{turn_id}/resume", responses=errors(400, 403, 404, 409, 429, 503))
async def resume_turn(
    turn_id: str,
    _browser: BrowserMutationDep,
    settings: SettingsDep,
    store: StoreDep,
    client: TemporalDep,
    body: ResumeBody | None = None,
) -> TurnResult | TurnResuming:
    """router → TurnWorkflow.resume, whose validator decides whether the turn can resume
    (not waiting, no decision yet, denied: typed refusals, answered by `workflow_error`)."""
    workspace = (body.workspace if body else None) or settings.agent_tools_workspace
    _row, handle = await _turn_handle(client, settings, store, workspace, turn_id)
    try:
        update = await asyncio.wait_for(
            handle.start_update(
                TurnWorkflow.resume,
                ResumeRequest(),
                id=f"resume-{uuid.uuid4()}",
                wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            ),
            UPDATE_WAIT,
        )
        result = await asyncio.wait_for(update.result(), UPDATE_WAIT)
    except WorkflowUpdateFailedError as err:
        raise workflow_error(err) from err
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        # Sent: a resume is idempotent (a turn resumes once), and Temporal delivers it
        # when a worker takes the turn; GET /turns/:id shows when it has.
        return TurnResuming(turn_id=turn_id, status="resuming", research_id=None)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise _turn_rpc_error(err, turn_id) from err
        # No running workflow: over (its state still answers), or never started.
        state = await _query_state(handle, turn_id)
        raise ApiError.of(TurnNotWaiting(turn_id=turn_id, status=state.status)) from err
    if not isinstance(result, TurnResult):
        result = TurnResult.model_validate(result)
    return result


# -- calls, results, events ----------------------------------------------------------------


@router.post("/calls", responses=errors(400, 403, 404, 409, 429))
async def call_tool(
    body: CallBody,
    _browser: BrowserMutationDep,
    settings: SettingsDep,
    store: StoreDep,
    journal: JournalDep,
) -> CallResult:
    workspace = body.workspace or settings.agent_tools_workspace
    turn = await asyncio.to_thread(_load_turn, store, settings.instance, workspace, body.turn_id)
    if turn is None:
        raise ApiError.of(TurnNotFound(turn_id=body.turn_id))
    call = CallRequest.model_validate(body.model_dump(exclude={"workspace"}))
    record = await asyncio.to_thread(
        execute_call,
        store,
        settings.instance,
        workspace,
        call,
        max_results=settings.agent_tools_max_results,
    )
    if not record.replayed:
        refs = [ref.model_dump() for ref in record.outcome.object_refs[:20]]
        data = {"tool_id": record.tool_id, "input": call.input, "source": "client"}
        await journal.aappend_many(
            agent_tools_events_stream(settings.instance, workspace),
            [
                NewEvent(
                    type="agent.tool.requested",
                    data=event_data(call.turn_id, data, call_id=record.call_id),
                ),
                NewEvent(
                    type="agent.tool.started",
                    data=event_data(
                        call.turn_id, {"tool_id": record.tool_id}, call_id=record.call_id
                    ),
                ),
                NewEvent(
                    type="agent.tool.completed",
                    data=event_data(
                        call.turn_id,
                        {
                            "tool_id": record.tool_id,
                            "status": record.status,
                            "result_id": record.result_id,
                            "diagnostic": record.outcome.diagnostic,
                        },
                        call_id=record.call_id,
                        refs=refs,
                    ),
                ),
            ],
            retention=settings.agent_tools_max_events,
        )
    return call_result(record)


@router.get("/results/{result_id}", responses=errors(400, 403, 404))
async def get_result_route(
    result_id: str,
    _browser: BrowserDep,
    settings: SettingsDep,
    store: StoreDep,
    workspace: WorkspaceQuery = None,
) -> ToolResult:
    ws = workspace or settings.agent_tools_workspace
    record = await asyncio.to_thread(get_result, store, settings.instance, ws, result_id)
    if record is None:
        raise ApiError.of(ResultNotFound(result_id=result_id))
    return result_body(record)


@router.get("/events", responses=errors(400, 403))
async def get_events(
    _browser: BrowserDep,
    settings: SettingsDep,
    journal: JournalDep,
    cursor: Annotated[int, Query(ge=0, le=MAX_SEQUENCE)] = 0,
    wait: Annotated[float, Query(ge=0, le=25)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 128,
    workspace: WorkspaceQuery = None,
) -> EventsPage:
    """Events after `cursor`, oldest first; `wait` long-polls up to that many seconds."""
    ws = workspace or settings.agent_tools_workspace
    stream = agent_tools_events_stream(settings.instance, ws)
    if wait:
        page = await journal.wait(stream, cursor, wait, limit=limit)
    else:
        page = await journal.aread(stream, cursor, limit)
    events = [event_body(entry) for entry in page.entries]
    return EventsPage(
        workspace=ws,
        events=events,
        cursor=events[-1].sequence if events else max(cursor, 0),
        earliest_sequence=page.earliest_seq,
        last_sequence=page.last_seq,
        cursor_expired=page.cursor_expired(cursor),
    )
