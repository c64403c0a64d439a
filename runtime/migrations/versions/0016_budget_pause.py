"""A budget reached is a pause (issue 21, item 9): what an agent paused on
(`agent_instances.budget_pause`, JSON: the axis, its cap, the spend, when the weekly
credit regenerates, the attention request). NULL for every agent not paused on a budget.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_instances") as batch:
        batch.add_column(sa.Column("budget_pause", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_instances") as batch:
        batch.drop_column("budget_pause")
