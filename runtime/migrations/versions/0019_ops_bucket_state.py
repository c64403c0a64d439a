"""An ops incident wakes the SOA (issue 21, item 3; spec §3.4.2, §4.5): the last ops-digest
bucket seen per tenant, its transition count (what dedupes the wake-up events of one
transition), and what the API last read from Temporal's visibility for the digest.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ops_bucket_state",
        sa.Column("tenant", sa.String(200), primary_key=True),
        sa.Column("bucket", sa.String(20), nullable=False),
        sa.Column("transition", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("failed_workflows", sa.Integer(), nullable=True),
        sa.Column("timed_out_workflows", sa.Integer(), nullable=True),
        sa.Column("visibility_checked_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("ops_bucket_state")
