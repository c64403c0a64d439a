"""The agentrt worker: every workflow and activity on one task queue, graceful on SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from activities import build_activities
from activities.llm import ModelProvider, provider_from_settings
from runtime import temporal
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from runtime.telemetry import setup_tracing
from workflows import WORKFLOWS

log = logging.getLogger("agentrt.worker")


def build_worker(
    client: Client, settings: Settings, store: Store, provider: ModelProvider | None = None
) -> Worker:
    journal = EventJournal(store)
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=WORKFLOWS,
        activities=build_activities(
            store, journal, provider or provider_from_settings(settings), settings
        ),
        graceful_shutdown_timeout=timedelta(seconds=10),
        identity=f"agentrt-worker-{os.getpid()}@{socket.gethostname()}",
    )


async def run_worker(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run until `stop` is set (or SIGINT/SIGTERM), then finish in-flight tasks and exit."""
    setup_tracing("agentrt-worker")
    store = Store(settings.resolved_database_url)
    await asyncio.to_thread(upgrade_to_head, store.engine)
    client = await temporal.connect(
        settings.effective_temporal_address, settings.temporal_namespace, timeout=60
    )
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    worker = build_worker(client, settings, store)
    log.info("worker polling %s on %s", settings.task_queue, settings.effective_temporal_address)
    try:
        async with worker:
            await stop.wait()
            log.info("worker stopping")
    finally:
        store.dispose()
