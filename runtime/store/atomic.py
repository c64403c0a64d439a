"""Writes that stay right under concurrent requests, on SQLite and PostgreSQL alike.

SQLite runs every write transaction under `BEGIN IMMEDIATE` (runtime.store.engine): two
writers never interleave, so a read-then-write inside one transaction is atomic there.
PostgreSQL runs READ COMMITTED: two transactions read the same state, and then either
both insert (the second hits the primary key: a 500) or both pass a check the other's
insert would have failed (a cap exceeded). The helpers close both holes on either backend:

- `upsert`: `INSERT ... ON CONFLICT (key) DO UPDATE`, one statement the database makes
  atomic (the dialects' own `insert`, the same syntax on both);
- `serialize`: a transaction-scoped advisory lock (`pg_advisory_xact_lock`) taken first,
  so that every transaction checking the same invariant (the session cap) runs one after
  the other, each counting what the one before committed; on SQLite the transaction
  holds the database's write lock already.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Table, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, SQLModel


def upsert(
    db: Session,
    model: type[SQLModel],
    values: Mapping[str, Any],
    *,
    key: Sequence[str],
    update: Sequence[str],
) -> None:
    """Insert `values` as a row of `model`, or update the `update` columns of the row
    whose `key` columns (its primary key or a unique constraint) already hold them.
    Runs in the caller's transaction (the caller commits)."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    dialect = db.get_bind().dialect.name
    if dialect == "postgresql":
        pg = postgresql.insert(table).values(dict(values))
        db.exec(
            pg.on_conflict_do_update(
                index_elements=list(key), set_={c: pg.excluded[c] for c in update}
            )
        )
    elif dialect == "sqlite":
        lite = sqlite.insert(table).values(dict(values))
        db.exec(
            lite.on_conflict_do_update(
                index_elements=list(key), set_={c: lite.excluded[c] for c in update}
            )
        )
    else:
        raise NotImplementedError(f"no upsert for the {dialect} dialect")


def serialize(db: Session, name: str) -> None:
    """Make the caller's transaction the only one past this point for `name` until it
    ends (commit or rollback). Call it first in the transaction."""
    if db.get_bind().dialect.name == "postgresql":
        db.connection().execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key(name)})
    # SQLite: the transaction's first statement takes the write lock (BEGIN IMMEDIATE)
    # and holds it to the end.


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory lock key for `name`."""
    digest = hashlib.sha256(f"agentrt/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)
