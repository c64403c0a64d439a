"""Who registered a registry entry (issue 20): the verified identity of the MCP coder
(`coder:<name>`), so no other coder may refresh, remove or claim with its entry. NULL for
entries an operator registered over REST (and for rows written before).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_registry") as batch:
        batch.add_column(sa.Column("registered_by", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_registry") as batch:
        batch.drop_column("registered_by")
