"""The investigation workspace: graph, sources, evidence, claims, provenance, jobs, research.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _id() -> sa.Column[int]:
    return sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True)


def _workspace() -> sa.Column[str]:
    return sa.Column("workspace", sa.String(length=200), nullable=False)


def upgrade() -> None:
    op.create_table(
        "investigation_node",
        _id(),
        _workspace(),
        sa.Column("node_id", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=100), nullable=False),
        sa.Column("label", sa.String(length=500), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.UniqueConstraint("workspace", "node_id", name="uq_investigation_node"),
    )
    op.create_table(
        "investigation_edge",
        _id(),
        _workspace(),
        sa.Column("edge_id", sa.String(length=200), nullable=False),
        sa.Column("src", sa.String(length=200), nullable=False),
        sa.Column("dst", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=100), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.UniqueConstraint("workspace", "edge_id", name="uq_investigation_edge"),
    )
    op.create_index("ix_investigation_edge_src", "investigation_edge", ["workspace", "src"])
    op.create_index("ix_investigation_edge_dst", "investigation_edge", ["workspace", "dst"])
    op.create_table(
        "investigation_source",
        _id(),
        _workspace(),
        sa.Column("source_id", sa.String(length=200), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("uri", sa.String(length=2000), nullable=True),
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.UniqueConstraint("workspace", "source_id", name="uq_investigation_source"),
    )
    op.create_table(
        "investigation_evidence",
        _id(),
        _workspace(),
        sa.Column("evidence_id", sa.String(length=200), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("excerpt", sa.Text(), nullable=False),
        sa.Column("source_id", sa.String(length=200), nullable=False),
        sa.Column("node_ids", sa.JSON(), nullable=False),
        sa.UniqueConstraint("workspace", "evidence_id", name="uq_investigation_evidence"),
    )
    op.create_table(
        "investigation_claim",
        _id(),
        _workspace(),
        sa.Column("claim_id", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("evidence_ids", sa.JSON(), nullable=False),
        sa.Column("node_ids", sa.JSON(), nullable=False),
        sa.UniqueConstraint("workspace", "claim_id", name="uq_investigation_claim"),
    )
    op.create_table(
        "provenance_link",
        _id(),
        _workspace(),
        sa.Column("from_kind", sa.String(length=20), nullable=False),
        sa.Column("from_id", sa.String(length=200), nullable=False),
        sa.Column("to_kind", sa.String(length=20), nullable=False),
        sa.Column("to_id", sa.String(length=200), nullable=False),
        sa.Column("relation", sa.String(length=50), nullable=False),
        sa.UniqueConstraint(
            "workspace", "from_kind", "from_id", "to_kind", "to_id", "relation",
            name="uq_provenance_link",
        ),
    )  # fmt: skip
    op.create_index("ix_provenance_link_to", "provenance_link", ["workspace", "to_kind", "to_id"])
    op.create_table(
        "investigation_job",
        _id(),
        _workspace(),
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("node_ids", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("workspace", "job_id", name="uq_investigation_job"),
    )
    op.create_table(
        "research",
        sa.Column("research_id", sa.String(length=36), primary_key=True),
        _workspace(),
        sa.Column("question", sa.String(length=500), nullable=False),
        sa.Column("scope", sa.JSON(), nullable=False),
        sa.Column("rationale", sa.Text(), nullable=True),
        sa.Column("turn_id", sa.String(length=200), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_research_workspace_turn", "research", ["workspace", "turn_id"])
    op.create_table(
        "research_decision",
        _id(),
        sa.Column(
            "research_id",
            sa.String(length=36),
            sa.ForeignKey("research.research_id"),
            nullable=False,
            unique=True,
        ),
        _workspace(),
        sa.Column("decision", sa.String(length=10), nullable=False),
        sa.Column("decided_by", sa.String(length=200), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("scope", sa.JSON(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("research_decision")
    op.drop_index("ix_research_workspace_turn", table_name="research")
    op.drop_table("research")
    op.drop_table("investigation_job")
    op.drop_index("ix_provenance_link_to", table_name="provenance_link")
    op.drop_table("provenance_link")
    op.drop_table("investigation_claim")
    op.drop_table("investigation_evidence")
    op.drop_table("investigation_source")
    op.drop_index("ix_investigation_edge_dst", table_name="investigation_edge")
    op.drop_index("ix_investigation_edge_src", table_name="investigation_edge")
    op.drop_table("investigation_edge")
    op.drop_table("investigation_node")
