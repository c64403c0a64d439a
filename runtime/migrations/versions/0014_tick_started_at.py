"""When an agent's tick lease was taken (issue 21, spec §3.2): the tenant's concurrency
cap (`AGENTRT_MAX_CONCURRENT_INSTANCES_PER_TENANT`) counts the leases younger than the
stale time. NULL for a lease taken before: it does not count.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_instances") as batch:
        batch.add_column(sa.Column("tick_started_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_instances") as batch:
        batch.drop_column("tick_started_at")
