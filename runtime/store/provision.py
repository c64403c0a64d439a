"""Make sure the database `DATABASE_URL` names exists before anything migrates it.

A PostgreSQL URL naming a database that does not exist is the usual first-run
mistake: the database is created when the server lets this user do it (through the
`postgres` maintenance database, like `createdb`), and otherwise the CLI prints one
line saying what to run. SQLite needs nothing: its file is created on first use.
"""

from __future__ import annotations

import logging

from sqlalchemy import URL, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from runtime.store.engine import is_sqlite, normalize_url

log = logging.getLogger(__name__)

MAINTENANCE_DATABASE = "postgres"


class DatabaseUnavailable(Exception):
    """The store cannot be reached or created; the message is one line, without secrets."""


def _first_line(err: BaseException) -> str:
    source = err.orig if isinstance(err, DBAPIError) and err.orig is not None else err
    lines = [line.strip() for line in str(source).splitlines() if line.strip()]
    return lines[0] if lines else type(source).__name__


def _where(url: URL) -> str:
    return f"{url.host or 'localhost'}:{url.port or 5432}"


def _can_connect(url: URL) -> DBAPIError | None:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect():
            return None
    except DBAPIError as err:
        return err
    finally:
        engine.dispose()


def _is_missing_database(err: DBAPIError, name: str) -> bool:
    # psycopg reports no SQLSTATE for a failed connection: the server's text is all there is.
    return f'database "{name}" does not exist' in str(err.orig)


def ensure_database(database_url: str) -> bool:
    """Create the PostgreSQL database `database_url` names if it does not exist.

    Returns:
        True when this call created it.

    Raises:
        DatabaseUnavailable: the server cannot be reached, or the database is missing
            and this user may not create it (the message says what to run).
    """
    if is_sqlite(database_url):
        return False
    url = make_url(normalize_url(database_url))
    name = url.database
    failure = _can_connect(url)
    if failure is None:
        return False
    shown = url.render_as_string(hide_password=True)
    if not name or not _is_missing_database(failure, name):
        raise DatabaseUnavailable(f"cannot connect to the store {shown}: {_first_line(failure)}")
    admin = create_engine(
        url.set(database=MAINTENANCE_DATABASE), poolclass=NullPool, isolation_level="AUTOCOMMIT"
    )
    try:
        with admin.connect() as connection:
            quoted = admin.dialect.identifier_preparer.quote(name)
            connection.execute(text(f"CREATE DATABASE {quoted}"))
    except DBAPIError as err:
        # Another process (the API beside the worker) may have created it meanwhile.
        if _can_connect(url) is None:
            return False
        user = url.username or "<owner>"
        raise DatabaseUnavailable(
            f"database {name!r} does not exist on {_where(url)} and could not be created "
            f"({_first_line(err)}); create it, e.g. `createdb -h {url.host or 'localhost'} "
            f"-p {url.port or 5432} -O {user} {name}` as a user allowed to, then start again"
        ) from None
    finally:
        admin.dispose()
    log.info("created database %r on %s", name, _where(url))
    return True
