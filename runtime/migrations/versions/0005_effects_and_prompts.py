"""Exactly once: the operation ledger of side effects, and prompt texts kept out of history.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "operation",
        sa.Column("op_id", sa.String(400), primary_key=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("pre_hash", sa.String(80), nullable=True),
        sa.Column("post_hash", sa.String(80), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "session_prompt",
        sa.Column("prompt_id", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_session_prompt_session", "session_prompt", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_session_prompt_session", table_name="session_prompt")
    op.drop_table("session_prompt")
    op.drop_table("operation")
