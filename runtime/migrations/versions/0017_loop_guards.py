"""The loop guards (issue 21, item 10): the last planned turn's decision hash and how many
planned turns in a row ended with it (`agent_instances.last_decision_hash`,
`repeated_decision_turns`); and the budget pause's id (`budget_pause_id`, the scalar a
resume compares and swaps), with the JSON `null` 0016 let rows hold made SQL NULL.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_instances") as batch:
        batch.add_column(sa.Column("last_decision_hash", sa.String(80), nullable=True))
        batch.add_column(
            sa.Column("repeated_decision_turns", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("budget_pause_id", sa.String(64), nullable=True))
    op.execute(
        "UPDATE agent_instances SET budget_pause = NULL"
        " WHERE budget_pause IS NOT NULL AND CAST(budget_pause AS TEXT) = 'null'"
    )


def downgrade() -> None:
    with op.batch_alter_table("agent_instances") as batch:
        batch.drop_column("budget_pause_id")
        batch.drop_column("repeated_decision_turns")
        batch.drop_column("last_decision_hash")
