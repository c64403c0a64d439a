"""Settle the tasks that predate coding tasks (issue 20): a task `soa_propose_task` ran as
a session prompt before migration 0011 became `running` under `agentrt-coder` with no
workflow to settle it, so it held one of its tenant's coder slots for ever
(`AGENTRT_CODERS_PER_TENANT`). Its outcome was never recorded: it settles `expired`, with
its session as the artifact, and nobody is woken (its agent never waited on it).

Such a row is the one 0011 moved: held by agentrt's coder, with a session, and never
written since (`updated_at` is NULL; every write since 0011 sets it).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

SUMMARY = (
    "proposed before coding tasks were tracked: its outcome was never recorded "
    "(its session's transcript is the record)"
)


def upgrade() -> None:
    tasks = sa.table(
        "agent_tasks",
        sa.column("task_id", sa.String),
        sa.column("state", sa.String),
        sa.column("holder", sa.String),
        sa.column("session_id", sa.String),
        sa.column("outcome", sa.String),
        sa.column("summary", sa.Text),
        sa.column("artifacts", sa.JSON),
        sa.column("settled_at", sa.DateTime(timezone=True)),
        sa.column("settled_by", sa.String),
        sa.column("updated_at", sa.DateTime(timezone=True)),
    )
    legacy = sa.and_(
        tasks.c.holder == "agentrt-coder",
        tasks.c.state == "running",
        tasks.c.session_id.is_not(None),
        tasks.c.updated_at.is_(None),
    )
    bind = op.get_bind()
    now = datetime.now(UTC)
    rows = bind.execute(sa.select(tasks.c.task_id, tasks.c.session_id).where(legacy)).all()
    for task_id, session_id in rows:
        artifact = {
            "kind": "session",
            "ref": f"session/{session_id}",
            "description": "the session the task ran in",
        }
        bind.execute(
            tasks.update()
            .where(tasks.c.task_id == task_id, legacy)
            .values(
                state="expired",
                outcome="expired",
                summary=SUMMARY,
                artifacts=[artifact],
                settled_at=now,
                settled_by="agentrt",
                updated_at=now,
            )
        )


def downgrade() -> None:
    # The rows stay settled: 0011's mapping of them held coder slots for ever.
    pass
