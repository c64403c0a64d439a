"""Apply the Alembic migrations at start-up, once even when several processes start together."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text
from sqlalchemy.engine import make_url

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
# An arbitrary constant: the PostgreSQL advisory lock that serializes migrators.
_PG_LOCK_KEY = 0x61676E74


def alembic_config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


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

    The API and the worker both call this at start; a file lock (SQLite) or an
    advisory lock (PostgreSQL) makes the second one wait and then find nothing to do.
    """
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
