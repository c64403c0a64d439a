"""The database engine: SQLite by default (a file under the data dir), PostgreSQL by URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlmodel import Session


def normalize_url(url: str) -> str:
    """Use psycopg 3 for PostgreSQL URLs that name no driver."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url: str, *, immediate: bool = True) -> Engine:
    """An engine tuned for agentrt's short write transactions.

    SQLite runs in WAL mode with a busy timeout, and every transaction starts
    with `BEGIN IMMEDIATE` so that two writers serialize on the write lock up
    front instead of failing on an upgrade from a read lock.
    """
    url = normalize_url(url)
    if not is_sqlite(url):
        return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)

    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from pysqlite so BEGIN IMMEDIATE is ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Readers take a deferred transaction: in WAL mode they never wait for writers.
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Store:
    """The process's handle on the database: one engine, sessions on demand."""

    def __init__(self, url: str) -> None:
        self.url = normalize_url(url)
        self.engine = make_engine(self.url)
        # SQLite: a second pool for reads, so that polling readers (SSE streams) never
        # queue behind the write lock. PostgreSQL needs no such split.
        self.read_engine = (
            make_engine(self.url, immediate=False) if is_sqlite(self.url) else self.engine
        )

    @contextmanager
    def session(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    @property
    def backend(self) -> str:
        return make_url(self.url).get_backend_name()

    def dispose(self) -> None:
        self.engine.dispose()
        if self.read_engine is not self.engine:
            self.read_engine.dispose()
