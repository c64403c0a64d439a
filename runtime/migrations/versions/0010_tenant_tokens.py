"""Tenant tokens with roles, and the verified identity of a decision's answer.

`tenant_tokens` (runtime/tenants/tokens.py): one row per issued token, its SHA-256 and
never the token; a name is unique among the tenant's live tokens (a partial unique
index, `WHERE revoked_at IS NULL`), revoked rows stay for the record.
`attention_requests.answered_by`: the label of the identity the bearer check verified
(`admin`, `operator:alice`) beside the self-declared `responded_by`; NULL for answers
given before, whose verified identity was never recorded.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-09
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_LIVE = sa.text("revoked_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "tenant_tokens",
        sa.Column("token_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("token_id"),
    )
    op.create_index("ix_tenant_tokens_token_hash", "tenant_tokens", ["token_hash"], unique=True)
    op.create_index(
        "uq_tenant_tokens_live_name",
        "tenant_tokens",
        ["tenant", "name"],
        unique=True,
        sqlite_where=_LIVE,
        postgresql_where=_LIVE,
    )
    with op.batch_alter_table("attention_requests") as batch:
        batch.add_column(sa.Column("answered_by", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attention_requests") as batch:
        batch.drop_column("answered_by")
    op.drop_index("uq_tenant_tokens_live_name", table_name="tenant_tokens")
    op.drop_index("ix_tenant_tokens_token_hash", table_name="tenant_tokens")
    op.drop_table("tenant_tokens")
