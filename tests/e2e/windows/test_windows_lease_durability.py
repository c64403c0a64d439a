"""A Windows lease survives `kill -9` of the worker, and a restart of everything: the
pool session is workflow state, so the next verb uses the same machine (the notepad it
launched is still there). The pool is the loopback fake (tests/fakes/windows_pool.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.conftest import ApiFactory
from tests.e2e.agent_tools.test_agent_tools_durability import _wait_children_gone
from tests.fakes.windows_pool import FakeWindowsPool
from tests.windows_helpers import POOL_TOKEN, end_leases
from tests.worker_processes import WorkerProcesses

TOKEN = "windows-durability"
BASE = "/api/v1/tenants/acme"
WorkerFactory = Callable[[], Awaitable[subprocess.Popen[bytes]]]


@pytest.fixture
def pool() -> Iterator[FakeWindowsPool]:
    with FakeWindowsPool(token=POOL_TOKEN) as fake:
        yield fake


def _pool_env(pool: FakeWindowsPool) -> dict[str, str]:
    return {"AGENTRT_WINDOWS_POOL_URL": pool.base_url, "AGENTRT_WINDOWS_POOL_TOKEN": POOL_TOKEN}


@pytest.fixture
async def split(
    api: ApiFactory,
    dev_env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    pool: FakeWindowsPool,
) -> AsyncIterator[tuple[httpx.AsyncClient, WorkerFactory]]:
    """The API in process; workers as processes a test can kill -9."""
    data_dir = tmp_path / ".data"
    workers = WorkerProcesses(dev_env, task_queue, data_dir, tmp_path, **_pool_env(pool))
    client = await api(
        data_dir=data_dir,
        task_queue=task_queue,
        workspace=tmp_path,
        token=TOKEN,
        windows_pool_url=pool.base_url,
        windows_pool_token=POOL_TOKEN,
    )
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    yield client, workers.start
    workers.close()
    # The lease is still held, on this test's task queue, on the shared dev server: a later
    # test listing tenant acme's leases would wait on it and see it.
    await end_leases(dev_env.client, task_queue)


async def test_a_lease_spans_kill_9_of_the_worker(
    split: tuple[httpx.AsyncClient, WorkerFactory], pool: FakeWindowsPool
) -> None:
    client, start_worker = split
    worker = await start_worker()
    assert (
        await client.put(f"{BASE}/features/windows-pool", json={"enabled": True})
    ).status_code == 200
    launched = await client.post(
        f"{BASE}/windows/coder/windows_launch", json={"program": "notepad.exe"}
    )
    assert launched.status_code == 200, launched.text
    hwnd = launched.json()["result"]["hwnd"]
    (sid,) = list(pool.sessions)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    await start_worker()
    listed = await client.post(f"{BASE}/windows/coder/windows_windows", json={})
    assert listed.status_code == 200, listed.text
    assert hwnd in [w["hwnd"] for w in listed.json()["result"]["windows"]]
    assert list(pool.sessions) == [sid]  # the same machine, not a new lease


def test_a_lease_survives_a_restart_of_everything(tmp_path: Path, pool: FakeWindowsPool) -> None:
    from tests.e2e.test_up_e2e import agentrt_up

    env = {"AGENTRT_WORKSPACE": str(tmp_path), "AGENTRT_TOKEN": TOKEN, **_pool_env(pool)}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with agentrt_up(tmp_path, env) as up:
        up.wait_healthy()
        client = httpx.Client(base_url=up.api_url, timeout=60, headers=headers)
        enabled = client.put(f"{BASE}/features/windows-pool", json={"enabled": True})
        assert enabled.status_code == 200, enabled.text
        launched = _until_ok(client, "windows_launch", {"program": "notepad.exe"})
        hwnd = launched["hwnd"]
        (sid,) = list(pool.sessions)
        os.kill(up.process.pid, signal.SIGKILL)
        up.process.wait()
    _wait_children_gone(up)
    with agentrt_up(tmp_path, env) as up:
        up.wait_healthy()
        client = httpx.Client(base_url=up.api_url, timeout=60, headers=headers)
        listed = _until_ok(client, "windows_windows", {})
        assert hwnd in [w["hwnd"] for w in listed["windows"]]
        assert list(pool.sessions) == [sid]
        leases = client.get(f"{BASE}/windows/leases").json()["leases"]
        assert [(lease["holder"], lease["sessionId"]) for lease in leases] == [("coder", sid)]


def _until_ok(client: httpx.Client, verb: str, args: dict[str, Any]) -> dict[str, Any]:
    """The verb's result; retried while the freshly started worker is not polling yet."""
    deadline = time.monotonic() + 120
    while True:
        response = client.post(f"{BASE}/windows/coder/{verb}", json=args)
        if response.status_code == 200:
            result: dict[str, Any] = response.json()["result"]
            return result
        assert response.status_code == 503 and time.monotonic() < deadline, response.text
        time.sleep(0.5)
