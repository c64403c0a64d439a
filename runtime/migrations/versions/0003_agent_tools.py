"""Agent-tools gateway: call records and results, turns, browser sessions.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_tool_call",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("instance", sa.String(100), nullable=False),
        sa.Column("workspace", sa.String(200), nullable=False),
        sa.Column("turn_id", sa.String(200), nullable=False),
        sa.Column("call_id", sa.String(64), nullable=False),
        sa.Column("result_id", sa.String(64), nullable=False),
        sa.Column("tool_id", sa.String(200), nullable=False),
        sa.Column("idempotency_key", sa.String(400), nullable=False),
        sa.Column("intent_hash", sa.String(64), nullable=False),
        sa.Column("status", sa.String(40), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("instance", "workspace", "idempotency_key", name="uq_agent_call_key"),
        sa.UniqueConstraint("result_id", name="uq_agent_call_result"),
    )
    op.create_index("ix_agent_call_scope", "agent_tool_call", ["instance", "workspace", "id"])
    op.create_table(
        "agent_turn",
        sa.Column("instance", sa.String(100), primary_key=True),
        sa.Column("workspace", sa.String(200), primary_key=True),
        sa.Column("turn_id", sa.String(200), primary_key=True),
        sa.Column("agent", sa.String(40), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("workflow_id", sa.String(600), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "agent_tools_session",
        sa.Column("session_hash", sa.String(64), primary_key=True),
        sa.Column("csrf_token", sa.String(100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("agent_tools_session")
    op.drop_table("agent_turn")
    op.drop_index("ix_agent_call_scope", table_name="agent_tool_call")
    op.drop_table("agent_tool_call")
