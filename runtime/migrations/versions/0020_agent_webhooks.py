"""Signed webhooks that trigger standing agents (issue 21, item 11): `agent_webhooks`.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_webhooks",
        sa.Column("webhook_id", sa.String(40), primary_key=True),
        sa.Column("tenant", sa.String(200), nullable=False),
        sa.Column("instance_id", sa.String(64), nullable=False),
        sa.Column("event_kind", sa.String(40), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_delivery_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_agent_webhooks_tenant", "agent_webhooks", ["tenant"])
    op.create_index("ix_agent_webhooks_instance_id", "agent_webhooks", ["instance_id"])


def downgrade() -> None:
    op.drop_index("ix_agent_webhooks_instance_id", "agent_webhooks")
    op.drop_index("ix_agent_webhooks_tenant", "agent_webhooks")
    op.drop_table("agent_webhooks")
