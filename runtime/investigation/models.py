"""Tables of the investigation workspace: the business data the agent-tools gateway reads.

Every row carries its `workspace`, and every business id is unique only within
one workspace, so two workspaces can hold the same ids without seeing each
other. Research campaigns and their decisions (the grants) live beside the
investigation data but are never replaced by a reload of it.
Every change here gets an Alembic revision in runtime/migrations.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, ForeignKey, Index, String, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

WORKSPACE_LEN = 200
ID_LEN = 200


class InvestigationNode(SQLModel, table=True):
    """A typed entity of the graph: person, organization, account, document, event, location."""

    __tablename__ = "investigation_node"
    __table_args__ = (UniqueConstraint("workspace", "node_id", name="uq_investigation_node"),)

    id: int | None = Field(default=None, primary_key=True)
    workspace: str = Field(max_length=WORKSPACE_LEN)
    node_id: str = Field(max_length=ID_LEN)
    type: str = Field(max_length=100)
    label: str = Field(max_length=500)
    properties: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class InvestigationEdge(SQLModel, table=True):
    """A typed, directed relation between two nodes ("owns", "transferred_to", ...)."""

    __tablename__ = "investigation_edge"
    __table_args__ = (
        UniqueConstraint("workspace", "edge_id", name="uq_investigation_edge"),
        Index("ix_investigation_edge_src", "workspace", "src"),
        Index("ix_investigation_edge_dst", "workspace", "dst"),
    )

    id: int | None = Field(default=None, primary_key=True)
    workspace: str = Field(max_length=WORKSPACE_LEN)
    edge_id: str = Field(max_length=ID_LEN)
    src: str = Field(max_length=ID_LEN)
    dst: str = Field(max_length=ID_LEN)
    type: str = Field(max_length=100)
    properties: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class InvestigationSource(SQLModel, table=True):
    """Where evidence comes from: a register, a bank production, an interview, an article."""

    __tablename__ = "investigation_source"
    __table_args__ = (UniqueConstraint("workspace", "source_id", name="uq_investigation_source"),)

    id: int | None = Field(default=None, primary_key=True)
    workspace: str = Field(max_length=WORKSPACE_LEN)
    source_id: str = Field(max_length=ID_LEN)
    title: str = Field(max_length=500)
    uri: str | None = Field(default=None, max_length=2000)
    kind: str = Field(max_length=100)


class InvestigationEvidence(SQLModel, table=True):
    """One evidence item: a short summary for listing, a long excerpt read by ranges."""

    __tablename__ = "investigation_evidence"
    __table_args__ = (
        UniqueConstraint("workspace", "evidence_id", name="uq_investigation_evidence"),
    )

    id: int | None = Field(default=None, primary_key=True)
    workspace: str = Field(max_length=WORKSPACE_LEN)
    evidence_id: str = Field(max_length=ID_LEN)
    title: str = Field(max_length=500)
    summary: str = Field(sa_column=Column(Text, nullable=False))
    excerpt: str = Field(sa_column=Column(Text, nullable=False))
    source_id: str = Field(max_length=ID_LEN)
    node_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class InvestigationClaim(SQLModel, table=True):
    """An analytic statement derived from evidence items."""

    __tablename__ = "investigation_claim"
    __table_args__ = (UniqueConstraint("workspace", "claim_id", name="uq_investigation_claim"),)

    id: int | None = Field(default=None, primary_key=True)
    workspace: str = Field(max_length=WORKSPACE_LEN)
    claim_id: str = Field(max_length=ID_LEN)
    text: str = Field(sa_column=Column(Text, nullable=False))
    evidence_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    node_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class ProvenanceLink(SQLModel, table=True):
    """One provenance hop: evidence → source ("from_source"), evidence → claim ("supports")."""

    __tablename__ = "provenance_link"
    __table_args__ = (
        UniqueConstraint(
            "workspace", "from_kind", "from_id", "to_kind", "to_id", "relation",
            name="uq_provenance_link",
        ),
        Index("ix_provenance_link_to", "workspace", "to_kind", "to_id"),
    )  # fmt: skip

    id: int | None = Field(default=None, primary_key=True)
    workspace: str = Field(max_length=WORKSPACE_LEN)
    from_kind: str = Field(max_length=20)
    from_id: str = Field(max_length=ID_LEN)
    to_kind: str = Field(max_length=20)
    to_id: str = Field(max_length=ID_LEN)
    relation: str = Field(max_length=50)


class InvestigationJob(SQLModel, table=True):
    """A background processing job about some nodes (OCR, imports, registry look-ups)."""

    __tablename__ = "investigation_job"
    __table_args__ = (UniqueConstraint("workspace", "job_id", name="uq_investigation_job"),)

    id: int | None = Field(default=None, primary_key=True)
    workspace: str = Field(max_length=WORKSPACE_LEN)
    job_id: str = Field(max_length=ID_LEN)
    kind: str = Field(max_length=100)
    status: str = Field(max_length=20)  # queued | running | succeeded | failed
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    node_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class Research(SQLModel, table=True):
    """A research campaign: proposed by an agent, run only after a human approves it.

    States: prepared → authorized → admitted → running → completed, or prepared → denied.
    """

    __tablename__ = "research"
    __table_args__ = (Index("ix_research_workspace_turn", "workspace", "turn_id"),)

    research_id: str = Field(primary_key=True, max_length=36)
    workspace: str = Field(max_length=WORKSPACE_LEN)
    question: str = Field(max_length=500)
    scope: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    rationale: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    turn_id: str | None = Field(default=None, max_length=200)
    state: str = Field(max_length=20)
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    updated_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class ResearchDecision(SQLModel, table=True):
    """The human decision on a prepared research; an approval is the grant. One per research."""

    __tablename__ = "research_decision"

    id: int | None = Field(default=None, primary_key=True)
    research_id: str = Field(
        sa_column=Column(
            String(36), ForeignKey("research.research_id"), nullable=False, unique=True
        )
    )
    workspace: str = Field(max_length=WORKSPACE_LEN)
    decision: str = Field(max_length=10)  # approve | deny
    decided_by: str = Field(max_length=200)
    decided_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    scope: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    note: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
