"""The ops watch's digest counts a tenant's ledger turns of the last day every 15 seconds
(issue 21, item 3): an index on `agent_state_ledger (tenant, created_at)`.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_agent_ledger_tenant_created", "agent_state_ledger", ["tenant", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_agent_ledger_tenant_created", "agent_state_ledger")
