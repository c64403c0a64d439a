"""`agentrt worker` as processes of their own, which a test can kill -9.

`WorkerProcesses.start` returns a process only once Temporal lists it among the task
queue's pollers, workflow and activity both: a request sent earlier waits on a worker
that is still importing, and under load its wait ran out (503 `worker_unavailable`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from api.temporal import describe_pollers

READY_TIMEOUT_S = 90.0


def worker_env(
    env: WorkflowEnvironment, task_queue: str, data_dir: Path, workspace: Path, **settings: str
) -> dict[str, str]:
    """The environment of `agentrt worker` on `task_queue`, its store under `data_dir`;
    `settings` adds or overrides variables (e.g. the model provider)."""
    return {
        **os.environ,
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "AGENTRT_TASK_QUEUE": task_queue,
        "AGENTRT_DATA_DIR": str(data_dir),
        "AGENTRT_WORKSPACE": str(workspace),
        "AGENTRT_LOG_LEVEL": "WARNING",
        **settings,
    }


def worker_process(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`agentrt worker` in a process of its own, with environment `env`."""
    return subprocess.Popen([sys.executable, "-m", "cli", "worker"], env=env)


def kill9(process: subprocess.Popen[Any]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


async def until_polling(
    env: WorkflowEnvironment, task_queue: str, process: subprocess.Popen[Any]
) -> None:
    """Until Temporal lists `process` (a worker built by `worker.build_worker`, whose
    identity names its pid) polling both kinds of task of `task_queue`."""
    identity = f"agentrt-worker-{process.pid}@{socket.gethostname()}"
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        seen = await describe_pollers(env.client, task_queue)
        kinds = {p["type"] for p in seen["pollers"] if p["identity"] == identity}
        if kinds == {"workflow", "activity"}:
            return
        if process.poll() is not None:
            raise AssertionError(f"the worker exited with {process.returncode} before polling")
        if time.monotonic() > deadline:
            raise AssertionError(f"the worker polled only {sorted(kinds)} after 90 s")
        await asyncio.sleep(0.1)


class WorkerProcesses:
    """The worker processes of one test; `close` kills those still running."""

    def __init__(
        self,
        env: WorkflowEnvironment,
        task_queue: str,
        data_dir: Path,
        workspace: Path,
        **settings: str,
    ) -> None:
        self._env = env
        self._task_queue = task_queue
        self._base = worker_env(env, task_queue, data_dir, workspace, **settings)
        self.processes: list[subprocess.Popen[bytes]] = []

    async def start(self, **settings: str) -> subprocess.Popen[bytes]:
        """A new worker process, once it polls both kinds of task of the queue."""
        process = self.spawn(**settings)
        await until_polling(self._env, self._task_queue, process)
        return process

    def spawn(self, **settings: str) -> subprocess.Popen[bytes]:
        """A new worker process, at once."""
        process = worker_process({**self._base, **settings})
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait()
