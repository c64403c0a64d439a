"""Outbound webhooks (issue 22): `notification_endpoints`, `notification_deliveries`.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "notification_endpoints",
        sa.Column("endpoint_id", sa.String(40), primary_key=True),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("event_types", sa.JSON(), nullable=False),
        sa.Column("tenant", sa.String(200), nullable=True),
        sa.Column("description", sa.String(500), nullable=True),
        sa.Column("secret", sa.String(100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "notification_deliveries",
        sa.Column("delivery_id", sa.String(80), primary_key=True),
        sa.Column("endpoint_id", sa.String(40), nullable=False),
        sa.Column("event_type", sa.String(60), nullable=False),
        sa.Column("subject", sa.String(400), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index(
        "ix_notification_deliveries_due",
        "notification_deliveries",
        ["endpoint_id", "state", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_notification_deliveries_due", "notification_deliveries")
    op.drop_table("notification_deliveries")
    op.drop_table("notification_endpoints")
