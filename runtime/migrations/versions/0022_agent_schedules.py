"""Cron schedules that trigger standing agents (issue 21, item 11): `agent_schedules`.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_schedules",
        sa.Column("schedule_id", sa.String(40), primary_key=True),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("instance_id", sa.String(64), nullable=False),
        sa.Column("cron", sa.String(200), nullable=False),
        sa.Column("time_zone", sa.String(64), nullable=False),
        sa.Column("overlap", sa.String(20), nullable=False),
        sa.Column("catchup_window_s", sa.Integer(), nullable=False),
        sa.Column("note", sa.String(500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("firings", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_fired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_event_id", sa.String(200), nullable=True),
    )
    op.create_index("ix_agent_schedules_tenant", "agent_schedules", ["tenant"])
    op.create_index("ix_agent_schedules_instance_id", "agent_schedules", ["instance_id"])


def downgrade() -> None:
    op.drop_index("ix_agent_schedules_instance_id", "agent_schedules")
    op.drop_index("ix_agent_schedules_tenant", "agent_schedules")
    op.drop_table("agent_schedules")
