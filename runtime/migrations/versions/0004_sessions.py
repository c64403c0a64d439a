"""Session daemon: the session registry and the single-scope slot.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "daemon_session",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("workspace_cwd", sa.String(4096), nullable=False),
        sa.Column("scope", sa.String(20), nullable=False),
        sa.Column("display_name", sa.String(500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_daemon_session_live", "daemon_session", ["workspace_cwd", "closed_at"])
    op.create_table(
        "daemon_session_client",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("client_id", sa.String(128), primary_key=True),
        sa.Column("last_seen_ms", sa.BigInteger(), nullable=False, server_default="0"),
    )
    op.create_table(
        "daemon_single_session",
        sa.Column("workspace_cwd", sa.String(4096), primary_key=True),
        sa.Column("session_id", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("daemon_single_session")
    op.drop_table("daemon_session_client")
    op.drop_index("ix_daemon_session_live", table_name="daemon_session")
    op.drop_table("daemon_session")
