"""The agentrt worker: every workflow and activity on one task queue, graceful on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities import build_activities
from activities.activity_log import ActivityLog
from activities.llm import ModelProvider, provider_from_settings
from activities.mcp.pool import McpPool
from activities.mcp.worker_pool import mcp_pool
from runtime import temporal
from runtime.approvals import clock
from runtime.journal_projections import JOURNAL_PROJECTIONS
from runtime.notifications import outbox
from runtime.notifications.waker import Waker
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from runtime.store.migrate import upgrade_to_head
from runtime.telemetry import setup_tracing
from workflows import all_workflows

log = logging.getLogger("agentrt.worker")


def workflow_runner() -> SandboxedWorkflowRunner:
    """The worker's sandbox, also used to replay recorded histories
    (tests/workflows/test_replay.py)."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_all_modules()
    )


class AgentrtWorker(Worker):
    """A Temporal worker that also owns the process's MCP connections (a stdio server is
    a child of this process): they are closed when the worker stops."""

    def __init__(
        self,
        mcp: McpPool,
        store: Store,
        settings: Settings,
        client: Client,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(client, *args, **kwargs)
        self.mcp = mcp
        self.store = store
        self.settings = settings
        self._replaced_waker: outbox.Waker | None = None

    async def __aenter__(self) -> AgentrtWorker:
        await super().__aenter__()
        # Outbound webhooks written by this process's activities wake their endpoints'
        # workflows at once; what a process that died owed them is woken now.
        waker = Waker(
            _constant(self.client),
            self.task_queue,
            self.settings.approval_clock_idle_ms,
            clock=clock.enabled(self.settings),
        )
        self._replaced_waker = outbox.install_waker(waker)
        # What a process that died owed the endpoints. (The approvals' clock needs no
        # wake: its Temporal timer outlives any worker, and a request's open wakes it.)
        waker(await asyncio.to_thread(self._owed))
        return self

    def _owed(self) -> list[str]:
        with self.store.engine.connect() as connection:
            return outbox.pending_endpoints(connection)

    async def __aexit__(self, *exc: Any) -> None:
        outbox.install_waker(self._replaced_waker)
        try:
            await super().__aexit__(*exc)
        finally:
            await self.mcp.close()


def _constant(client: Client) -> Callable[[], Awaitable[Client]]:
    async def get() -> Client:
        return client

    return get


def build_worker(
    client: Client,
    settings: Settings,
    store: Store,
    provider: ModelProvider | None = None,
    *,
    activities: Sequence[Callable[..., Any]] | None = None,
) -> Worker:
    """The worker of `settings.task_queue`; `activities` replaces `build_activities`'s
    (a test's stalled journal write, tests/stalling_worker.py)."""
    journal = EventJournal(store, projections=JOURNAL_PROJECTIONS)
    pool = mcp_pool(store, settings)
    return AgentrtWorker(
        pool,
        store,
        settings,
        client,
        task_queue=settings.task_queue,
        workflows=all_workflows(),
        activities=activities
        or build_activities(
            store, journal, provider or provider_from_settings(settings), settings, pool
        ),
        graceful_shutdown_timeout=timedelta(seconds=10),
        # Our workflow modules keep no mutable module-level state, so they can be shared
        # by all sandboxes instead of re-imported per workflow run: ~12 MB less at 100
        # sessions and a cheaper first task per session. The sandbox's checks on
        # non-deterministic calls still apply.
        workflow_runner=workflow_runner(),
        interceptors=[ActivityLog()],
        identity=f"agentrt-worker-{os.getpid()}@{socket.gethostname()}",
    )


async def run_worker(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run until `stop` is set (or SIGINT/SIGTERM), then finish in-flight tasks and exit."""
    setup_tracing("agentrt-worker")
    store = Store(settings.resolved_database_url)
    await asyncio.to_thread(upgrade_to_head, store.engine)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        client = await _connect_until_stopped(settings, stop)
        if client is None:
            return
        worker = build_worker(client, settings, store)
        log.info(
            "worker polling %s on %s", settings.task_queue, settings.effective_temporal_address
        )
        # Once connected, a Temporal outage does not end the worker: the SDK retries
        # its polls (UNAVAILABLE) until the server is back, then carries on.
        async with worker:
            await stop.wait()
            log.info("worker stopping")
    finally:
        store.dispose()


async def _connect_until_stopped(settings: Settings, stop: asyncio.Event) -> Client | None:
    """Connect to Temporal, waiting as long as it takes (it may be restarting); None if
    `stop` was set first."""
    address = settings.effective_temporal_address
    warned = False
    while not stop.is_set():
        try:
            return await temporal.connect(address, settings.temporal_namespace, timeout=5)
        except RuntimeError as err:
            if not warned:
                warned = True
                log.warning("Temporal is not reachable at %s (%s); waiting for it", address, err)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1)
    return None
