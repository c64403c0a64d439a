"""An approval of a tool call is bound to the call's digest (issue 22):
`attention_requests.approved_digest`.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attention_requests") as batch:
        batch.add_column(sa.Column("approved_digest", sa.String(80), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attention_requests") as batch:
        batch.drop_column("approved_digest")
