"""Alembic environment: runs on the connection `runtime.store.migrate` hands over."""

from __future__ import annotations

from alembic import context

from runtime.migrations.tables import METADATA

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=METADATA,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
