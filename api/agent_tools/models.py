"""What the agent-tools gateway and its research routes answer (spec agent-tools-protocol-v1),
with the spec's snake_case field names.

Turn states and results are the workflow's own contracts (`TurnState`, `TurnResult` in
runtime/agent_tools/contracts.py) and a tool result extends the tool's `ToolOutcome`;
the models here are the wire bodies that have no model elsewhere.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from runtime.agent_tools.contracts import AgentKind, TurnStatus
from runtime.investigation.outcomes import ObjectRef, ToolOutcome


class BrowserSession(BaseModel):
    """GET /session: the browser session is in the cookie; its CSRF token is here."""

    csrfToken: str


class Availability(BaseModel):
    available: bool
    reason: str | None = Field(default=None, description="Present when not available.")


class CatalogTool(BaseModel):
    """One tool of the catalog: every attribute the spec lists
    (`runtime.investigation.catalog.CatalogEntry.describe`)."""

    tool_id: str
    tool_version: str
    capability_version: str
    description: str
    input_schema: dict[str, Any]
    output_contract: dict[str, Any]
    action_class: Literal["read", "prepare"]
    risk_class: Literal["low", "medium"]
    cost_class: Literal["cheap", "moderate"]
    network_contact: bool
    authorization: dict[str, Any]
    availability: Availability


class Catalog(BaseModel):
    workspace: str
    tools: list[CatalogTool]


class TurnCreated(BaseModel):
    """POST /turns: the turn started (202), or the same turn again (200)."""

    turn_id: str
    workspace: str
    agent: AgentKind
    workflow_id: str
    status: TurnStatus
    events_cursor: int = Field(description="Poll GET /events from this cursor.")


class TurnResuming(BaseModel):
    """POST /turns/:id/resume when the resume is sent but no worker answered in time:
    Temporal delivers it when a worker takes the turn (GET /turns/:id shows when)."""

    turn_id: str
    status: Literal["resuming"]
    research_id: str | None = None


class ToolResult(ToolOutcome):
    """GET /results/:id: a stored tool result (`runtime.agent_tools.calls.result_body`)."""

    result_id: str
    call_id: str
    turn_id: str
    tool_id: str
    created_at: str


class CallResult(ToolResult):
    """POST /calls: the call's result; `replayed` when the idempotency key was seen."""

    replayed: bool


class AgentToolsEvent(BaseModel):
    """One event of GET /events (`runtime.agent_tools.events.event_body`)."""

    sequence: int
    timestamp: str
    type: str
    turn_id: str | None
    call_id: str | None
    refs: list[ObjectRef]
    payload: dict[str, Any]


class EventsPage(BaseModel):
    workspace: str
    events: list[AgentToolsEvent]
    cursor: int
    earliest_sequence: int
    last_sequence: int
    cursor_expired: bool


class ResearchDecisionPublic(BaseModel):
    decision: Literal["approve", "deny"]
    decided_by: str
    decided_at: str
    scope: dict[str, Any]
    note: str | None


class ResearchPublic(BaseModel):
    """A research and its human decision, if any
    (`runtime.investigation.research.research_state`)."""

    research_id: str
    workspace: str
    state: str
    question: str
    scope: dict[str, Any]
    rationale: str | None
    turn_id: str | None
    created_at: str
    updated_at: str
    decision_route: str
    decision: ResearchDecisionPublic | None
