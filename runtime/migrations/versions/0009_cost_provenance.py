"""Cost provenance of an attempt (issue 18): whose price it was charged at, whose tokens.

`llm_call_attempt.price_source` ("served" | "requested" | "default" | "builtin") and
`usage_source` ("reported" | "estimated"). Rows written before stay NULL: what priced
them is in their `price_version` ("unknown" for the models then recorded at 0), and
whether their tokens were the provider's was never recorded, so no value would be true.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

COLUMNS = ("price_source", "usage_source")


def upgrade() -> None:
    with op.batch_alter_table("llm_call_attempt") as batch:
        for name in COLUMNS:
            batch.add_column(sa.Column(name, sa.String(length=20), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("llm_call_attempt") as batch:
        for name in reversed(COLUMNS):
            batch.drop_column(name)
