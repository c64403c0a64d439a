"""Apply the Alembic migrations at start-up, once even when several processes start together."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.engine import make_url

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported only when migrating: the API and the worker started by
# `agentrt up` skip it (the supervisor migrated already), which keeps ~20 MB of
# modules out of each of them.

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
# An arbitrary constant: the PostgreSQL advisory lock that serializes migrators.
_PG_LOCK_KEY = 0x61676E74


def alembic_config(connection: Connection) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    """The newest revision, from the file names (revisions are numbered `NNNN_*.py`,
    one chain; tests check this agrees with Alembic's own view)."""
    numbers = sorted(
        path.name.split("_", 1)[0]
        for path in (MIGRATIONS_DIR / "versions").glob("[0-9][0-9][0-9][0-9]_*.py")
    )
    return numbers[-1] if numbers else None


def current_revision(engine: Engine) -> str | None:
    """The database's revision, read from `alembic_version` without importing Alembic."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        row = connection.execute(text("SELECT version_num FROM alembic_version")).first()
        return None if row is None else str(row[0])


@contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    database = make_url(str(engine.url)).database
    if not database or database == ":memory:":
        yield
        return
    lock_path = Path(database).with_suffix(".migrate.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def upgrade_to_head(engine: Engine) -> str | None:
    """Bring the database to the newest revision; returns it.

    A database already at the newest revision is answered from `alembic_version` alone,
    without importing Alembic or loading its scripts (about 45 ms of CPU a call, and
    every process and test store calls this). Otherwise the API and the worker both
    call this at start; a file lock (SQLite) or an advisory lock (PostgreSQL) makes the
    second one wait and then find nothing to do.
    """
    head = head_revision()
    if head is not None and current_revision(engine) == head:
        return head
    from alembic import command

    if engine.dialect.name == "sqlite":
        with _sqlite_file_lock(engine), engine.begin() as connection:
            command.upgrade(alembic_config(connection), "head")
    else:
        with engine.connect() as connection:
            # A session-level lock: it outlives the transaction that takes it.
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _PG_LOCK_KEY})
            connection.commit()
            try:
                with connection.begin():
                    command.upgrade(alembic_config(connection), "head")
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_LOCK_KEY})
                connection.commit()
    return current_revision(engine)
