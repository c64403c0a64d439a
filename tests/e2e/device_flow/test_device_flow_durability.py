"""A pending device flow survives `kill -9` of the worker, and a restart of everything:
the user approves at the IdP while agentrt is down, agentrt comes back, the flow
completes. The IdP is a real RFC 8628 server on loopback (tests/fakes/device_idp.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.conftest import ApiFactory
from tests.e2e.agent_tools.test_agent_tools_durability import _wait_children_gone
from tests.fakes.device_idp import FakeIdP
from tests.worker_processes import WorkerProcesses

TOKEN = "device-flow-durability"
FLOW = "/workspace/auth/device-flow"
WorkerFactory = Callable[[], Awaitable[subprocess.Popen[bytes]]]


def _providers(idp: FakeIdP) -> str:
    return json.dumps({"test-idp": idp.provider_config()})


@pytest.fixture
async def split(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> AsyncIterator[tuple[httpx.AsyncClient, FakeIdP, Path, WorkerFactory]]:
    """The API in process; workers as processes a test can kill -9."""
    data_dir = tmp_path / ".data"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeIdP(interval=1) as idp:
        workers = WorkerProcesses(
            dev_env, task_queue, data_dir, workspace, AGENTRT_DEVICE_FLOW_PROVIDERS=_providers(idp)
        )
        client = await api(
            data_dir=data_dir,
            task_queue=task_queue,
            workspace=workspace,
            token=TOKEN,
            device_flow_providers=_providers(idp),
        )
        client.headers["Authorization"] = f"Bearer {TOKEN}"
        yield client, idp, data_dir, workers.start
        workers.close()


async def _until_authorized(client: httpx.AsyncClient, flow_id: str) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        body = (await client.get(f"{FLOW}/{flow_id}")).json()
        if body.get("status") == "authorized":
            return
        assert body.get("status") == "pending", body
        await asyncio.sleep(0.2)
    raise AssertionError(f"{flow_id} never became authorized")


async def test_a_pending_flow_spans_kill_9_of_the_worker(
    split: tuple[httpx.AsyncClient, FakeIdP, Path, WorkerFactory],
) -> None:
    client, idp, data_dir, start_worker = split
    worker = await start_worker()
    response = await client.post(FLOW, json={"providerId": "test-idp"})
    assert response.status_code == 201, response.text
    flow_id = response.json()["deviceFlowId"]
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    idp.approve(idp.latest().user_code)  # while no worker runs
    await start_worker()
    await _until_authorized(client, flow_id)
    stored = json.loads((data_dir / "credentials" / "test-idp.json").read_text())
    assert stored["access_token"].startswith("at-")
    assert len(idp.devices) == 1  # the same device code, polled by the new worker


# Long by design (up to 40 s under load): two whole `agentrt up` starts around a kill -9 of
# everything, then the flow's next poll of the IdP after the restart.
def test_a_pending_flow_survives_a_restart_of_everything(tmp_path: Path) -> None:
    from tests.e2e.test_up_e2e import agentrt_up

    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeIdP(interval=1) as idp:
        env = {
            "AGENTRT_WORKSPACE": str(workspace),
            "AGENTRT_TOKEN": TOKEN,
            "AGENTRT_DEVICE_FLOW_PROVIDERS": _providers(idp),
        }
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with agentrt_up(tmp_path, env) as up:
            up.wait_healthy()
            client = httpx.Client(base_url=up.api_url, timeout=60, headers=headers)
            response = client.post(FLOW, json={"providerId": "test-idp"})
            assert response.status_code == 201, response.text
            flow_id = response.json()["deviceFlowId"]
            os.kill(up.process.pid, signal.SIGKILL)
            up.process.wait()
        _wait_children_gone(up)
        idp.approve(idp.latest().user_code)  # while agentrt is down
        with agentrt_up(tmp_path, env) as up:
            up.wait_healthy()
            client = httpx.Client(base_url=up.api_url, timeout=60, headers=headers)
            deadline = time.monotonic() + 120
            status = None
            while time.monotonic() < deadline:
                answer = client.get(f"{FLOW}/{flow_id}")
                status = answer.json().get("status") if answer.status_code == 200 else None
                if status == "authorized":
                    break
                time.sleep(0.5)
            assert status == "authorized"
    credentials = tmp_path / ".data" / "credentials" / "test-idp.json"
    assert json.loads(credentials.read_text())["access_token"].startswith("at-")
