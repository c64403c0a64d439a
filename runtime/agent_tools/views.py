"""What a client reads of the agent-tools gateway's own records: a stored tool result
(`calls.result_body`, and `calls.call_result` for the call that made it) and an event of
the stream (`events.event_body`). Each is built once, from its record; the routes return
it.

Spec agent-tools-protocol-v1 names these fields in snake_case on the wire: Python's names
are the wire's, so these are plain models, not `runtime.wire.WireModel`s (whose alias
generator would answer them in camelCase). Their docstrings are their schemas'
descriptions in /openapi.json.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from runtime.investigation.outcomes import ObjectRef, ToolOutcome


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
