"""The database engine: SQLite by default (a file under the data dir), PostgreSQL by URL.

`Store` is the process's handle on it and the one way to write: `store.transaction()` is
a unit of work (committed when the block ends, rolled back when it raises), and
`store.run_transaction(write)` is one that runs again when it loses a race to another
writer. `store.session()` is for reads. Nothing outside runtime/store commits or rolls
back by hand (tests/runtime/test_store_unit_of_work.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session

T = TypeVar("T")

RACE_ATTEMPTS = 20
"""How many times `run_transaction` runs a write that keeps losing races."""

# PostgreSQL: deadlock_detected, serialization_failure.
_RACE_SQLSTATES = frozenset({"40P01", "40001"})


def _unique_key_taken(orig: BaseException | None) -> bool:
    """Whether a driver's integrity error is a unique key another writer took first (a
    race), rather than a NOT NULL, foreign-key or check failure (a bug, raised at once)."""
    sqlstate = getattr(orig, "sqlstate", None)  # psycopg
    if sqlstate is not None:
        return bool(sqlstate == "23505")  # unique_violation
    name = getattr(orig, "sqlite_errorname", None)  # sqlite3, Python 3.11+
    if name is not None:
        return name in ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY")
    return True  # a driver that says neither: as before, a race


class WriteKeptRacing(RuntimeError):
    """A write lost `RACE_ATTEMPTS` races in a row (a bug, or a pathological load)."""


def is_race(err: BaseException) -> bool:
    """Whether `err` means the transaction lost a race and can run again whole (nothing
    of it was committed): a unique key or primary key another writer took first, or
    PostgreSQL's deadlock or serialization abort. Other integrity failures (NOT NULL, a
    foreign key, a check) are not races.

    Args:
        err: what a flush or a commit raised.

    Returns:
        True for a race; False for any other error, which the caller re-raises.
    """
    if isinstance(err, IntegrityError):
        return _unique_key_taken(err.orig)
    if isinstance(err, OperationalError):
        return getattr(getattr(err, "orig", None), "sqlstate", None) in _RACE_SQLSTATES
    return False


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
        """A session for reads; a write goes through `transaction` or `run_transaction`."""
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: the block's writes commit together when it ends, and roll
        back when it raises (the exception goes on). Rows stay readable after the commit.

        A race with another writer surfaces as the `IntegrityError` or
        `OperationalError` of the flush or the commit; a write that can run again on a
        race uses `run_transaction` instead.
        """
        with Session(self.engine, expire_on_commit=False) as db:
            try:
                yield db
                db.commit()
            except BaseException:
                db.rollback()
                raise

    def run_transaction(self, write: Callable[[Session], T], *, attempts: int = RACE_ATTEMPTS) -> T:
        """Run `write` in one unit of work, and run it again whole when it loses a race
        (`is_race`: a unique key taken by a concurrent writer, a retry of the same call, a
        sequence number, a deadlock). The next run reads what the winner committed, so a
        `write` that reads before it inserts finds the winner's row and returns it.

        Args:
            write: reads and writes through the session it is given; it does not commit.
            attempts: how many races to lose before giving up.

        Returns:
            What the run that committed returned.

        Raises:
            WriteKeptRacing: `attempts` runs in a row lost their race.
        """
        for _ in range(attempts):
            try:
                with self.transaction() as db:
                    result = write(db)
            except (IntegrityError, OperationalError) as err:
                if not is_race(err):
                    raise
                continue
            return result
        raise WriteKeptRacing(f"a write lost {attempts} races in a row")

    @property
    def backend(self) -> str:
        return make_url(self.url).get_backend_name()

    def dispose(self) -> None:
        self.engine.dispose()
        if self.read_engine is not self.engine:
            self.read_engine.dispose()
