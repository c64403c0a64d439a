"""Approvals' timeouts (issue 22): `approvals.timeout_ms` (None until the approvals' clock
gave the request its kind's timeout; 0: none) and `approvals.warned_at` (its
`approval.expiring` sent).

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.add_column(sa.Column("timeout_ms", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("warned_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals") as batch:
        batch.drop_column("warned_at")
        batch.drop_column("timeout_ms")
