"""Outbound webhooks' order per subject (issue 22): `notification_deliveries.ordinal`, the
order in which events were owed within one instant (two events owed in one transaction,
an approval's request and its device login's, share `created_at`).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("notification_deliveries") as batch:
        batch.add_column(sa.Column("ordinal", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("notification_deliveries") as batch:
        batch.drop_column("ordinal")
