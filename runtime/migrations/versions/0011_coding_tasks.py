"""Coding tasks (issue 20): `agent_tasks` becomes the tenant's coding tasks.

A task gets a lifecycle (`state`: open → claimed → running → succeeded | failed |
cancelled | expired), the capabilities it requires, its workspace, model (`preset_id`,
or model/provider), who proposed it and who holds it (claimed, last heartbeat), a
deadline, progress notes, and its outcome, summary and artifacts. `instance_id` becomes
nullable: an operator's task has no proposing agent. Rows written before were session
prompts started at once: they are `running`, held by agentrt's coder.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def _ts(name: str) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), nullable=True)


def upgrade() -> None:
    with op.batch_alter_table("agent_tasks") as batch:
        batch.alter_column("instance_id", existing_type=sa.String(length=64), nullable=True)
        batch.add_column(
            sa.Column("state", sa.String(length=20), nullable=False, server_default="open")
        )
        batch.add_column(
            sa.Column("capabilities", sa.JSON(), nullable=False, server_default=sa.text("'[]'"))
        )
        batch.add_column(sa.Column("workspace", sa.String(length=4096), nullable=True))
        batch.add_column(sa.Column("preset_id", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("model", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("provider", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("approval_mode", sa.String(length=40), nullable=True))
        batch.add_column(
            sa.Column("proposed_by", sa.String(length=200), nullable=False, server_default="")
        )
        batch.add_column(sa.Column("holder", sa.String(length=200), nullable=True))
        batch.add_column(_ts("claimed_at"))
        batch.add_column(_ts("heartbeat_at"))
        batch.add_column(_ts("deadline"))
        batch.add_column(
            sa.Column("notes", sa.JSON(), nullable=False, server_default=sa.text("'[]'"))
        )
        batch.add_column(sa.Column("outcome", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("summary", sa.Text(), nullable=True))
        batch.add_column(
            sa.Column("artifacts", sa.JSON(), nullable=False, server_default=sa.text("'[]'"))
        )
        batch.add_column(_ts("settled_at"))
        batch.add_column(sa.Column("settled_by", sa.String(length=200), nullable=True))
        batch.add_column(_ts("updated_at"))
        batch.create_index("ix_agent_tasks_tenant_state", ["tenant", "state"], unique=False)
    op.execute(
        "UPDATE agent_tasks SET state = 'running', holder = 'agentrt-coder', "
        "proposed_by = 'agent:' || instance_id WHERE session_id IS NOT NULL"
    )
    op.execute(
        "UPDATE agent_tasks SET proposed_by = 'agent:' || instance_id "
        "WHERE session_id IS NULL AND instance_id IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("agent_tasks") as batch:
        batch.drop_index("ix_agent_tasks_tenant_state")
        for name in (
            "updated_at",
            "settled_by",
            "settled_at",
            "artifacts",
            "summary",
            "outcome",
            "notes",
            "deadline",
            "heartbeat_at",
            "claimed_at",
            "holder",
            "proposed_by",
            "approval_mode",
            "provider",
            "model",
            "preset_id",
            "workspace",
            "capabilities",
            "state",
        ):
            batch.drop_column(name)
        batch.alter_column("instance_id", existing_type=sa.String(length=64), nullable=False)
