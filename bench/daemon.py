"""An in-process session daemon for benchmarks: the API under uvicorn on a free loopback
port in this process (real HTTP, so SSE streams as a client sees them) and a real worker in
its own process (`agentrt worker`), as `agentrt up` runs it.

The worker is a process of its own because in this one its workflow tasks would hold this
event loop while the API answers: a session workflow's first task alone delays a create
by tens of milliseconds, which no deployment pays. Settings are explicit on everything the
caller's environment could otherwise change. The API owns its store and journal (as in
`agentrt api`); worker appends reach SSE subscribers through the API journal's re-read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from temporalio.client import Client

from api.app import create_app
from bench.client import wait_worker_polling
from cli import settings_to_env
from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """This environment without any agentrt or Temporal setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTRT_")}
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "DATABASE_URL", "QWEN_SERVER_TOKEN"):
        env.pop(name, None)
    return {**env, "AGENTRT_LOG_LEVEL": "WARNING", **extra}


def spawn(args: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM, wait, then SIGKILL: only the process this benchmark started."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: Ctrl-C stays with the benchmark runner."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass(frozen=True)
class LiveDaemon:
    app: FastAPI
    settings: Settings
    base_url: str
    worker_pid: int

    @property
    def journal(self) -> EventJournal:
        """The API's journal: appends through it wake its SSE subscribers at once."""
        journal: EventJournal = self.app.state.journal
        return journal

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        """A client of the API (with the daemon's token, when it has one)."""
        if self.settings.token:
            kwargs.setdefault("headers", {"Authorization": f"Bearer {self.settings.token}"})
        return httpx.AsyncClient(base_url=self.base_url, timeout=30, **kwargs)


def daemon_settings(
    root: Path, port: int, temporal_address: str, token: str | None = None
) -> Settings:
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    return Settings(
        hostname="127.0.0.1",
        port=port,
        token=token,
        require_auth=False,
        rate_limit=False,
        workspace=workspace,
        data_dir=root / ".data",
        database_url=f"sqlite:///{root / '.data' / 'agentrt.db'}",
        temporal_address=temporal_address,
        task_queue=f"bench-sessions-{uuid.uuid4().hex[:12]}",
        model_provider="scripted",
        max_sessions=10_000,
    )


@contextlib.asynccontextmanager
async def live_daemon(
    client: Client, root: Path, token: str | None = None
) -> AsyncIterator[LiveDaemon]:
    """API (uvicorn, free port, this process) + worker process, on `client`'s server, over a
    temp SQLite store; yields once the worker polls its task queue. With `token`, the
    daemon's strict routes are open (`LiveDaemon.client` sends it)."""
    port = free_port()
    settings = daemon_settings(root, port, client.service_client.config.target_host, token)
    settings.resolved_data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(settings.resolved_database_url)
    await asyncio.to_thread(upgrade_to_head, store.engine)
    store.dispose()
    app = create_app(settings, temporal_client=client)
    server = _Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
    )
    worker = await asyncio.to_thread(
        spawn,
        [sys.executable, "-m", "cli", "worker"],
        child_env(settings_to_env(settings)),
        settings.resolved_data_dir / "worker.log",
        root,
    )
    try:
        task = asyncio.create_task(server.serve())
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                while not server.started:
                    if task.done():
                        task.result()
                        raise RuntimeError("uvicorn stopped before starting")
                    await asyncio.sleep(0.01)
            daemon = LiveDaemon(app, settings, f"http://127.0.0.1:{port}", worker.pid)
            async with daemon.client() as http:
                await wait_worker_polling(
                    http, lambda: worker.poll() is None, settings.resolved_data_dir / "worker.log"
                )
            yield daemon
        finally:
            # Every SSE stream is closed by then: a graceful shutdown returns at once.
            server.should_exit = True
            await task
    finally:
        await asyncio.to_thread(stop, worker)
