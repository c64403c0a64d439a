"""The nine tools' descriptors, and the catalog with each tool's real availability.

The spec wants every attribute of a tool to come from the backend, never be
guessed by a client: versions, input schema, output contract, action, risk and
cost classes, network contact, authorization need and availability. The static
part is `TOOL_DESCRIPTORS`; `catalog()` adds availability, computed from what
the workspace really holds (an empty workspace has most tools unavailable).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlmodel import Session, SQLModel, select

from runtime.investigation.models import (
    InvestigationClaim,
    InvestigationEvidence,
    InvestigationJob,
    InvestigationNode,
    ProvenanceLink,
    Research,
)
from runtime.investigation.research import DECISION_ROUTE_TEMPLATE, RESEARCH_STATES
from runtime.investigation.views import Availability, CatalogTool
from runtime.tools import READ_ONLY, ToolAnnotations, ToolDescriptor

CAPABILITY_VERSION = "agent-tools/v1"
TOOL_VERSION = "1.0.0"
_DRAFT = "https://json-schema.org/draft/2020-12/schema"

Requirement = Literal["data", "nodes", "evidence", "provenance", "jobs", "research"]

# -- schemas -------------------------------------------------------------------------------

_ID: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 200}
_STR: dict[str, Any] = {"type": "string"}
_INT: dict[str, Any] = {"type": "integer", "minimum": 0}
_IDS: dict[str, Any] = {"type": "array", "items": _STR}
_REF: dict[str, Any] = {
    "type": "object",
    "required": ["kind", "id"],
    "properties": {"kind": _STR, "id": _STR},
}
_NODE_BRIEF: dict[str, Any] = {
    "type": "object",
    "required": ["node_id", "type", "label"],
    "properties": {"node_id": _STR, "type": _STR, "label": _STR},
}


def _input(properties: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    """An input schema: an object that refuses any property it does not name."""
    return {
        "$schema": _DRAFT,
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": properties,
        **extra,
    }


def _output(description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of `output` when the tool completes (other statuses carry {})."""
    return {
        "$schema": _DRAFT,
        "description": description,
        "type": "object",
        "required": sorted(properties),
        "properties": properties,
    }


def _obj(properties: dict[str, Any], *, nullable: bool = False) -> dict[str, Any]:
    schema = {"type": ["object", "null"] if nullable else "object", "properties": properties}
    return {**schema, "required": sorted(properties)}


def _list(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


_SOURCE_BRIEF = _obj(
    {"source_id": _STR, "title": _STR, "kind": _STR, "uri": {"type": ["string", "null"]}}
)
_DECISION = _obj(
    {
        "decision": {"enum": ["approve", "deny"]},
        "decided_by": _STR,
        "decided_at": _STR,
        "scope": {"type": "object"},
        "note": {"type": ["string", "null"]},
    },
    nullable=True,
)
_SCOPE_IN: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["node_ids"],
    "properties": {
        "node_ids": {
            "type": "array",
            "items": _ID,
            "minItems": 1,
            "maxItems": 20,
            "uniqueItems": True,
        },
        "depth": {"type": "integer", "minimum": 1, "maximum": 3, "default": 1},
    },
}


@dataclass(frozen=True)
class CatalogEntry:
    """One tool of the agent-tools catalog: the tool layer's descriptor (`tool`, its name
    the spec's `tool_id`) plus what spec `agent-tools-protocol-v1` adds to it (output
    contract, classes, authorization, versions); `requires` says which data makes it
    available."""

    tool_id: str
    description: str
    input_schema: dict[str, Any]
    output_contract: dict[str, Any]
    requires: Requirement
    action_class: Literal["read", "prepare"] = "read"
    risk_class: Literal["low", "medium"] = "low"
    cost_class: Literal["cheap", "moderate"] = "cheap"
    authorization: dict[str, Any] = field(default_factory=lambda: {"required": False})
    tool_version: str = TOOL_VERSION
    capability_version: str = CAPABILITY_VERSION
    network_contact: bool = False

    @property
    def tool(self) -> ToolDescriptor:
        """The tool in the one tool layer (runtime/tools): `read` tools are read-only;
        `research.prepare` records a draft under the turn's call (idempotent)."""
        annotations = (
            READ_ONLY
            if self.action_class == "read"
            else ToolAnnotations(destructiveHint=False, idempotentHint=True, openWorldHint=False)
        )
        return ToolDescriptor(
            name=self.tool_id,
            description=self.description,
            input_schema=self.input_schema,
            annotations=annotations,
        )

    def describe(self, availability: Availability) -> CatalogTool:
        """The catalog entry: every attribute the spec lists (its schemas are copies)."""
        return CatalogTool(
            tool_id=self.tool_id,
            tool_version=self.tool_version,
            capability_version=self.capability_version,
            description=self.description,
            input_schema=copy.deepcopy(self.input_schema),
            output_contract=copy.deepcopy(self.output_contract),
            action_class=self.action_class,
            risk_class=self.risk_class,
            cost_class=self.cost_class,
            network_contact=self.network_contact,
            authorization=copy.deepcopy(self.authorization),
            availability=availability,
        )


_TOOLS = (
    CatalogEntry(
        tool_id="investigation.search",
        description="Search the investigation: case-insensitive word match over node labels and "
        "properties, evidence titles and summaries, claims and jobs; ranked references with "
        "short snippets.",
        input_schema=_input(
            {
                "query": {"type": "string", "minLength": 1, "maxLength": 200},
                "kinds": {
                    "type": "array",
                    "items": {"enum": ["node", "evidence", "claim", "job"]},
                    "minItems": 1,
                    "uniqueItems": True,
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 8},
            },
            ["query"],
        ),
        output_contract=_output(
            "Hits best first (score = matched words, label/title matches weigh more).",
            {
                "query": _STR,
                "hits": _list(
                    _obj({"kind": _STR, "id": _STR, "label": _STR, "snippet": _STR, "score": _INT})
                ),
                "total": _INT,
                "truncated": {"type": "boolean"},
            },
        ),
        requires="data",
        cost_class="moderate",
    ),
    CatalogEntry(
        tool_id="graph.get_node",
        description="One node of the graph: type, label, properties, edge counts, and the "
        "evidence items and jobs that concern it (ids only).",
        input_schema=_input({"node_id": _ID}, ["node_id"]),
        output_contract=_output(
            "The node, its in/out edge counts, up to 20 evidence ids and 20 job ids about it.",
            {
                "node": _obj(
                    {"node_id": _STR, "type": _STR, "label": _STR, "properties": {"type": "object"}}
                ),
                "edge_count": _obj({"in": _INT, "out": _INT}),
                "evidence_ids": _IDS,
                "job_ids": _IDS,
            },
        ),
        requires="nodes",
    ),
    CatalogEntry(
        tool_id="graph.get_neighbors",
        description="The nodes linked to a node, with the edges' type, direction and "
        "properties; optionally only some edge types.",
        input_schema=_input(
            {
                "node_id": _ID,
                "edge_types": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 100},
                    "minItems": 1,
                    "maxItems": 20,
                    "uniqueItems": True,
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 20},
            },
            ["node_id"],
        ),
        output_contract=_output(
            "Neighbors ordered by edge type then node id; `total` counts all matching edges.",
            {
                "node_id": _STR,
                "neighbors": _list(
                    _obj(
                        {
                            "edge_id": _STR,
                            "edge_type": _STR,
                            "direction": {"enum": ["out", "in"]},
                            "edge_properties": {"type": "object"},
                            "node": _NODE_BRIEF,
                        }
                    )
                ),
                "total": _INT,
                "truncated": {"type": "boolean"},
            },
        ),
        requires="nodes",
    ),
    CatalogEntry(
        tool_id="evidence.get_summary",
        description="An evidence item's title, summary, source, the nodes it concerns and the "
        "claims it supports; the excerpt's length, not its text.",
        input_schema=_input({"evidence_id": _ID}, ["evidence_id"]),
        output_contract=_output(
            "The summary is capped at 2000 characters; read the excerpt by ranges.",
            {
                "evidence_id": _STR,
                "title": _STR,
                "summary": _STR,
                "source": _SOURCE_BRIEF | {"type": ["object", "null"]},
                "node_ids": _IDS,
                "claim_ids": _IDS,
                "excerpt_chars": _INT,
            },
        ),
        requires="evidence",
    ),
    CatalogEntry(
        tool_id="evidence.read_excerpt",
        description="Read part of an evidence item's excerpt: at most max_chars characters "
        "from offset; the range read is returned as an artifact.",
        input_schema=_input(
            {
                "evidence_id": _ID,
                "offset": {"type": "integer", "minimum": 0, "default": 0},
                "max_chars": {"type": "integer", "minimum": 1, "maximum": 2000, "default": 800},
            },
            ["evidence_id"],
        ),
        output_contract=_output(
            "text = excerpt[offset:end]; next_offset is null when nothing is left.",
            {
                "evidence_id": _STR,
                "offset": _INT,
                "end": _INT,
                "total_chars": _INT,
                "text": _STR,
                "has_more": {"type": "boolean"},
                "next_offset": {"type": ["integer", "null"]},
            },
        ),
        requires="evidence",
    ),
    CatalogEntry(
        tool_id="provenance.trace",
        description="The provenance chain around an evidence item, a claim or a source: "
        "evidence → source, and the claims derived from the evidence.",
        input_schema=_input(
            {
                "object": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["kind", "id"],
                    "properties": {"kind": {"enum": ["evidence", "claim", "source"]}, "id": _ID},
                }
            },
            ["object"],
        ),
        output_contract=_output(
            "The sub-graph of provenance links reached from the object (each list ≤ 50).",
            {
                "object": _REF,
                "sources": _list(_SOURCE_BRIEF),
                "evidence": _list(_obj({"evidence_id": _STR, "title": _STR, "source_id": _STR})),
                "claims": _list(_obj({"claim_id": _STR, "text": _STR, "evidence_ids": _IDS})),
                "links": _list(_obj({"from": _REF, "to": _REF, "relation": _STR})),
                "truncated": {"type": "boolean"},
            },
        ),
        requires="provenance",
    ),
    CatalogEntry(
        tool_id="jobs.get",
        description="A processing job by id, or the jobs about a node (newest first).",
        input_schema=_input(
            {"job_id": _ID, "node_id": _ID},
            [],
            oneOf=[{"required": ["job_id"]}, {"required": ["node_id"]}],
            description="give exactly one of job_id or node_id",
        ),
        output_contract=_output(
            "Jobs newest first (≤ 20); status is queued, running, succeeded or failed.",
            {
                "jobs": _list(
                    _obj(
                        {
                            "job_id": _STR,
                            "kind": _STR,
                            "status": {"enum": ["queued", "running", "succeeded", "failed"]},
                            "detail": {"type": "object"},
                            "node_ids": _IDS,
                            "updated_at": _STR,
                        }
                    )
                ),
                "total": _INT,
                "truncated": {"type": "boolean"},
            },
        ),
        requires="jobs",
    ),
    CatalogEntry(
        tool_id="research.get_state",
        description="The state of a research campaign and its human decision, if any.",
        input_schema=_input(
            {"research_id": {"type": "string", "minLength": 1, "maxLength": 64}}, ["research_id"]
        ),
        output_contract=_output(
            "A research's state (prepared, authorized, admitted, running, completed, denied).",
            {
                "research_id": _STR,
                "workspace": _STR,
                "state": {"enum": list(RESEARCH_STATES)},
                "question": _STR,
                "scope": {"type": "object"},
                "rationale": {"type": ["string", "null"]},
                "turn_id": {"type": ["string", "null"]},
                "created_at": _STR,
                "updated_at": _STR,
                "decision_route": _STR,
                "decision": _DECISION,
            },
        ),
        requires="research",
    ),
    CatalogEntry(
        tool_id="research.prepare",
        description="Propose a research campaign on some nodes. It only prepares: no grant, no "
        "campaign, no network contact. The result is AUTHORIZATION_REQUIRED until a human "
        "decides through the research decision route, which no tool can reach.",
        input_schema=_input(
            {
                "question": {"type": "string", "minLength": 1, "maxLength": 500},
                "scope": _SCOPE_IN,
                "rationale": {"type": "string", "maxLength": 1000},
                "turn_id": {"type": "string", "minLength": 1, "maxLength": 200},
            },
            ["question", "scope"],
        ),
        output_contract=_output(
            "The prepared research (status AUTHORIZATION_REQUIRED) and where a human decides.",
            {
                "research_id": _STR,
                "state": {"enum": list(RESEARCH_STATES)},
                "decision_route": _STR,
            },
        ),
        requires="nodes",
        action_class="prepare",
        risk_class="medium",
        authorization={
            "required": True,
            "by": "human",
            "route": DECISION_ROUTE_TEMPLATE,
            "decisions": ["approve", "deny"],
        },
    ),
)

TOOL_DESCRIPTORS: dict[str, CatalogEntry] = {tool.tool_id: tool for tool in _TOOLS}
TOOL_IDS: tuple[str, ...] = tuple(TOOL_DESCRIPTORS)

# -- availability --------------------------------------------------------------------------

_TABLES: dict[str, tuple[type[SQLModel], ...]] = {
    "data": (InvestigationNode, InvestigationEvidence, InvestigationClaim, InvestigationJob),
    "nodes": (InvestigationNode,),
    "evidence": (InvestigationEvidence,),
    "provenance": (ProvenanceLink,),
    "jobs": (InvestigationJob,),
    "research": (InvestigationNode, Research),
}
_MISSING: dict[str, str] = {
    "data": "no investigation data",
    "nodes": "no nodes",
    "evidence": "no evidence",
    "provenance": "no provenance links",
    "jobs": "no jobs",
    "research": "no nodes and no research",
}


def _has_rows(session: Session, table: type[SQLModel], workspace: str) -> bool:
    column = table.workspace  # type: ignore[attr-defined]
    return session.exec(select(column).where(column == workspace).limit(1)).first() is not None


def availability(
    session: Session, workspace: str, tool_id: str, *, memo: dict[str, bool] | None = None
) -> Availability:
    """Available, or not with the reason (`reason` is left unset when available: the
    catalog route answers `{"available": true}`), from the workspace's data."""
    requirement = TOOL_DESCRIPTORS[tool_id].requires
    memo = {} if memo is None else memo
    for table in _TABLES[requirement]:
        name = table.__name__
        if name not in memo:
            memo[name] = _has_rows(session, table, workspace)
        if memo[name]:
            return Availability(available=True)
    reason = f"{_MISSING[requirement]} in workspace {workspace!r}"
    return Availability(available=False, reason=reason)


def catalog(session: Session, workspace: str) -> list[CatalogTool]:
    """The nine tools with every attribute of the spec, availability computed now."""
    memo: dict[str, bool] = {}
    return [
        TOOL_DESCRIPTORS[tool_id].describe(availability(session, workspace, tool_id, memo=memo))
        for tool_id in TOOL_IDS
    ]
