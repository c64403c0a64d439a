"""One store of approvals, every kind of request for a human (issue 22): `approvals`.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "approvals",
        sa.Column("approval_id", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("ref", sa.String(120), nullable=False),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("subject", sa.String(400), nullable=False),
        sa.Column("asked_by", sa.String(200), nullable=False),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("digest", sa.String(80), nullable=True),
        sa.Column("link", sa.String(500), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("answer", sa.String(200), nullable=True),
        sa.Column("answered_by", sa.String(200), nullable=True),
        sa.Column("answered_client", sa.String(200), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("end_reason", sa.String(200), nullable=True),
    )
    op.create_index("ix_approvals_tenant_state", "approvals", ["tenant", "state", "created_at"])
    op.create_index("ix_approvals_subject_state", "approvals", ["subject", "state"])


def downgrade() -> None:
    op.drop_index("ix_approvals_subject_state", "approvals")
    op.drop_index("ix_approvals_tenant_state", "approvals")
    op.drop_table("approvals")
