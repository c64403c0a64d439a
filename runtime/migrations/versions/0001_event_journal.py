"""The event journal: journal_stream (seq allocator, retention mark) and journal_event.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "journal_stream",
        sa.Column("stream", sa.String(length=400), primary_key=True),
        sa.Column("last_seq", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("earliest_seq", sa.BigInteger(), nullable=False, server_default="1"),
    )
    op.create_table(
        "journal_event",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("stream", sa.String(length=400), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(length=200), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("originator", sa.String(length=200), nullable=True),
        sa.Column("dedupe_key", sa.String(length=400), nullable=True),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("stream", "seq", name="uq_journal_event_stream_seq"),
        sa.UniqueConstraint("stream", "dedupe_key", name="uq_journal_event_stream_dedupe"),
    )
    op.create_index("ix_journal_event_stream_seq", "journal_event", ["stream", "seq"])


def downgrade() -> None:
    op.drop_index("ix_journal_event_stream_seq", table_name="journal_event")
    op.drop_table("journal_event")
    op.drop_table("journal_stream")
