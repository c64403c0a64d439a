"""DATABASE_URL naming a database that does not exist: created when the server allows,
otherwise one line saying what to run (exit 2), never a traceback."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url

from runtime.store.engine import normalize_url
from runtime.store.provision import DatabaseUnavailable, ensure_database
from tests.conftest import POSTGRES_URL, free_port

needs_postgres = pytest.mark.skipif(
    POSTGRES_URL is None, reason="AGENTRT_TEST_POSTGRES_URL is not set"
)


def _cli(*args: str, database_url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "DATABASE_URL": database_url},
    )


def test_sqlite_needs_nothing(tmp_path: Path) -> None:
    assert ensure_database(f"sqlite:///{tmp_path / 'a' / 'agentrt.db'}") is False


def test_an_unreachable_server_is_one_line_and_exit_2(tmp_path: Path) -> None:
    url = f"postgresql://agentrt:pw-not-shown@127.0.0.1:{free_port()}/agentrt"
    with pytest.raises(DatabaseUnavailable) as raised:
        ensure_database(url)
    assert "pw-not-shown" not in str(raised.value)
    done = _cli("migrate", database_url=url, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("agentrt: cannot connect to the store postgresql+psycopg://")
    assert "pw-not-shown" not in done.stderr


@pytest.fixture
def admin_url() -> Iterator[URL]:
    assert POSTGRES_URL is not None
    yield make_url(normalize_url(POSTGRES_URL))


def _drop(admin: URL, *names: str, role: str | None = None) -> None:
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        for name in names:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        if role:
            connection.execute(text(f'DROP ROLE IF EXISTS "{role}"'))
    engine.dispose()


@needs_postgres
def test_a_missing_database_is_created_and_migrated(admin_url: URL, tmp_path: Path) -> None:
    name = f"agentrt_prov_{uuid.uuid4().hex[:10]}"
    url = admin_url.set(database=name).render_as_string(hide_password=False)
    try:
        done = _cli("migrate", database_url=url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "created the store's database" in done.stderr
        assert done.stdout.startswith("store at revision ")
        assert ensure_database(url) is False  # there now
    finally:
        _drop(admin_url, name)


@needs_postgres
def test_a_user_who_may_not_create_it_gets_one_line(admin_url: URL, tmp_path: Path) -> None:
    role = f"agentrt_weak_{uuid.uuid4().hex[:8]}"
    name = f"agentrt_prov_{uuid.uuid4().hex[:10]}"
    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f"CREATE ROLE \"{role}\" LOGIN PASSWORD 'pw-not-shown' NOCREATEDB"))
    engine.dispose()
    weak = admin_url.set(username=role, password="pw-not-shown", database=name)
    try:
        done = _cli(
            "migrate", database_url=weak.render_as_string(hide_password=False), cwd=tmp_path
        )
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert f"database {name!r} does not exist" in lines[0]
        assert f"createdb -h {admin_url.host}" in lines[0] and name in lines[0]
        assert "pw-not-shown" not in done.stderr
    finally:
        _drop(admin_url, name, role=role)
