"""What the agent-tools gateway answers (spec agent-tools-protocol-v1) that no runtime
module builds: the pages the routes assemble and the turn's acknowledgements.

The spec names its fields in snake_case on the wire, so these are plain models (a
`WireModel` would answer them in camelCase), except the browser session's `csrfToken`.
Turn states and results are the workflow's own contracts (`TurnState`, `TurnResult` in
runtime/agent_tools/contracts.py); a tool result and an event are built by
runtime/agent_tools (views.py), a catalog tool and a research by runtime/investigation
(views.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from runtime.agent_tools.contracts import AgentKind, TurnStatus
from runtime.agent_tools.views import AgentToolsEvent
from runtime.investigation.views import CatalogTool
from runtime.wire import WireModel


class BrowserSession(WireModel):
    """GET /session: the browser session is in the cookie; its CSRF token is here."""

    csrf_token: str


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


class EventsPage(BaseModel):
    workspace: str
    events: list[AgentToolsEvent]
    cursor: int
    earliest_sequence: int
    last_sequence: int
    cursor_expired: bool
