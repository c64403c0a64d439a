"""What a client reads of the investigation: a tool of the catalog
(`catalog.CatalogEntry.describe`) and a research with its human decision
(`research.research_state`). Each is built once, by the module that owns it; the
agent-tools routes return it, the `research.get_state` tool dumps it.

Spec agent-tools-protocol-v1 names these fields in snake_case on the wire: Python's names
are the wire's, so these are plain models, not `runtime.wire.WireModel`s (whose alias
generator would answer them in camelCase). Their docstrings are their schemas'
descriptions in /openapi.json.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


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
