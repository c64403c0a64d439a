"""Reserve before you spend (issue 21, item 8): an attempt's worst case, held against a
standing agent's tick and its tenant's weekly credit before the request is sent
(runtime/llm/reservation.py). 0 for every attempt recorded before.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("llm_call_attempt") as batch:
        batch.add_column(sa.Column("reserved_usd", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("llm_call_attempt") as batch:
        batch.drop_column("reserved_usd")
