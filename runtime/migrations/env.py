"""Alembic environment: runs on the connection `runtime.store.migrate` hands over."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import runtime.approvals.models
import runtime.coding_tasks.models
import runtime.investigation.models
import runtime.llm.models
import runtime.notifications.models
import runtime.sessions.prompts
import runtime.standing_agents.models
import runtime.store.models
import runtime.store.operations
import runtime.store.tenants
import runtime.tenant_tokens
import runtime.workspace.settings  # noqa: F401  (registers the tables on SQLModel.metadata)

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
