"""The Prompt Engineer's signal path (issue 21, item 5; spec §3.1, §3.9): the call site a
PromptRedactor instance is bound to (`agent_instances.call_site`), one per tenant and site.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agent_instances") as batch:
        batch.add_column(sa.Column("call_site", sa.String(120), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_instances") as batch:
        batch.drop_column("call_site")
