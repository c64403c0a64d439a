"""Which session raised each permission request (issue 23, "indexed lookups where a route now
scans"): `session_permission_request`, so that a vote naming a request alone reads one row
instead of scanning the journal's JSON. Filled from the `permission_request` events the
journal still holds; the journal's projection writes the rows from here on.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

_JOURNAL = sa.table(
    "journal_event",
    sa.column("id", sa.BigInteger()),
    sa.column("stream", sa.String()),
    sa.column("type", sa.String()),
    sa.column("data", sa.JSON()),
)


def upgrade() -> None:
    table = op.create_table(
        "session_permission_request",
        sa.Column("request_id", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(64), nullable=False),
    )
    latest: dict[str, str] = {}
    events = op.get_bind().execute(
        sa.select(_JOURNAL.c.stream, _JOURNAL.c.data)
        .where(_JOURNAL.c.type == "permission_request")
        .order_by(_JOURNAL.c.id)
    )
    for stream, data in events:
        inner = data.get("data") if isinstance(data, dict) else None
        request_id = inner.get("requestId") if isinstance(inner, dict) else None
        session_id = str(stream).removeprefix("session/")
        if (
            str(stream).startswith("session/")
            and isinstance(request_id, str)
            and 0 < len(request_id) <= 64
            and len(session_id) <= 64
        ):
            latest[request_id] = session_id
    if latest:
        op.bulk_insert(table, [{"request_id": r, "session_id": s} for r, s in latest.items()])


def downgrade() -> None:
    op.drop_table("session_permission_request")
