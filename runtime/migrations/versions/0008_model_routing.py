"""Model routing (issue 11): providers, presets, call-site bindings and price overrides.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TABLES = ("llm_price", "llm_site_binding", "llm_preset", "llm_provider")


def upgrade() -> None:
    op.create_table(
        "llm_provider",
        sa.Column("provider_id", sa.String(length=100), nullable=False),
        sa.Column("base_url", sa.String(length=2000), nullable=False),
        sa.Column("credentials", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("provider_id"),
    )
    op.create_table(
        "llm_preset",
        sa.Column("preset_id", sa.String(length=100), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("provider", sa.String(length=100), nullable=False),
        sa.Column("overlay", sa.JSON(), nullable=True),
        sa.Column("fallback", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("preset_id"),
    )
    op.create_table(
        "llm_site_binding",
        sa.Column("site_id", sa.String(length=120), nullable=False),
        sa.Column("preset_id", sa.String(length=100), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("site_id"),
    )
    op.create_table(
        "llm_price",
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("input_per_mtok_usd", sa.Float(), nullable=False),
        sa.Column("output_per_mtok_usd", sa.Float(), nullable=False),
        sa.Column("cached_input_per_mtok_usd", sa.Float(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("model"),
    )


def downgrade() -> None:
    for table in TABLES:
        op.drop_table(table)
