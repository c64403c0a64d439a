"""End to end: `agentrt up` as a user runs it, on free ports, then stopped and started again."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from runtime.store import EventJournal, Store
from runtime.temporal import connect
from tests.conftest import free_port


class Up:
    def __init__(self, process: subprocess.Popen[str], api: int, frontend: int, ui: int) -> None:
        self.process = process
        self.api_url = f"http://127.0.0.1:{api}"
        self.frontend = f"127.0.0.1:{frontend}"
        self.ui_url = f"http://127.0.0.1:{ui}"

    def output(self) -> str:
        return self.process.stdout.read() if self.process.stdout else ""


def _wait_http(url: str, timeout: float = 90.0) -> httpx.Response:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            return httpx.get(url, timeout=2)
        except httpx.HTTPError as err:
            last = err
            time.sleep(0.25)
    raise AssertionError(f"{url} did not answer: {last}")


def _port_closed(port: int) -> bool:
    try:
        httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
    except httpx.HTTPError:
        return True
    return False


@contextmanager
def agentrt_up(workdir: Path, env_extra: dict[str, str] | None = None) -> Iterator[Up]:
    api, frontend, ui = free_port(), free_port(), free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENTRT_")},
        "AGENTRT_PORT": str(api),
        "AGENTRT_TEMPORAL_PORT": str(frontend),
        "AGENTRT_TEMPORAL_UI_PORT": str(ui),
        "AGENTRT_LOG_LEVEL": "WARNING",
        **(env_extra or {}),
    }
    env.pop("TEMPORAL_ADDRESS", None) if "TEMPORAL_ADDRESS" not in (env_extra or {}) else None
    process = subprocess.Popen(
        [sys.executable, "-m", "runtime.cli", "up"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    up = Up(process, api, frontend, ui)
    try:
        yield up
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _stop(up: Up) -> str:
    up.process.send_signal(signal.SIGTERM)
    assert up.process.wait(60) == 0
    return up.output()


def _wait_worker_live(url: str, timeout: float = 60.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    body: dict[str, object] = {}
    while time.monotonic() < deadline:
        body = httpx.get(f"{url}/daemon/status?detail=full", timeout=10).json()
        temporal = body["temporal"]
        assert isinstance(temporal, dict)
        if temporal["workerPolling"]:
            return body
        time.sleep(0.5)
    raise AssertionError(f"worker never polled: {body}")


def test_up_serves_everything_and_stops_cleanly(tmp_path: Path) -> None:
    with agentrt_up(tmp_path) as up:
        assert _wait_http(f"{up.api_url}/health").json() == {"status": "ok"}
        caps = httpx.get(f"{up.api_url}/capabilities").json()
        assert caps["workspaceCwd"] == str(tmp_path.resolve())
        assert "health" in caps["features"]
        status = _wait_worker_live(up.api_url)
        assert status["status"] == "ok", status["issues"]
        assert status["temporal"]["embedded"] is True  # type: ignore[index]
        assert _wait_http(up.ui_url).status_code == 200

        # Leave a workflow and a row behind, then stop everything.
        workflow_id = f"probe-{uuid.uuid4()}"

        async def start_probe() -> None:
            client = await connect(up.frontend)
            # No worker runs this type: it stays Running, exactly where it was left.
            await client.start_workflow("ProbeWorkflow", id=workflow_id, task_queue="probe")

        asyncio.run(start_probe())
        journal = EventJournal(Store(f"sqlite:///{tmp_path / '.data' / 'agentrt.db'}"))
        journal.append("probe", "left.here", {"n": 1})
        output = _stop(up)
    assert "http://127.0.0.1:" in output and "Web UI" in output
    assert "agentrt stopped" in output
    ports = (up.api_url.rsplit(":", 1)[1], up.ui_url.rsplit(":", 1)[1])
    assert all(_port_closed(int(port)) for port in ports)
    for name in ("temporal.db", "agentrt.db", "api.log", "worker.log"):
        assert (tmp_path / ".data" / name).exists()

    # A second start finds every workflow and row where the first left them.
    with agentrt_up(tmp_path) as up:
        _wait_http(f"{up.api_url}/health")

        async def describe() -> WorkflowExecutionStatus | None:
            client = await connect(up.frontend, timeout=30)
            return (await client.get_workflow_handle(workflow_id).describe()).status

        assert asyncio.run(describe()) == WorkflowExecutionStatus.RUNNING
        page = EventJournal(Store(f"sqlite:///{tmp_path / '.data' / 'agentrt.db'}")).read("probe")
        assert [(e.seq, e.type) for e in page.entries] == [(1, "left.here")]
        _stop(up)


def test_up_uses_a_reachable_temporal_address(tmp_path: Path, dev_env: WorkflowEnvironment) -> None:
    address = dev_env.client.service_client.config.target_host
    with agentrt_up(tmp_path, {"TEMPORAL_ADDRESS": address}) as up:
        _wait_http(f"{up.api_url}/health")
        status = _wait_worker_live(up.api_url)
        temporal = status["temporal"]
        assert isinstance(temporal, dict)
        assert temporal["address"] == address
        assert temporal["embedded"] is False
        assert _port_closed(int(up.ui_url.rsplit(":", 1)[1]))
        output = _stop(up)
    assert "Web UI" not in output
    assert not (tmp_path / ".data" / "temporal.db").exists()


def test_up_refuses_bad_configuration(tmp_path: Path) -> None:
    with agentrt_up(tmp_path, {"AGENTRT_HOSTNAME": "0.0.0.0"}) as up:
        assert up.process.wait(60) == 2
        output = up.output()
    assert output.strip().splitlines() == [
        "agentrt: refusing to bind non-loopback hostname '0.0.0.0' without a bearer token: "
        "pass --token or set QWEN_SERVER_TOKEN"
    ]


@pytest.mark.parametrize("signum", [signal.SIGINT])
def test_up_stops_on_ctrl_c(tmp_path: Path, signum: int) -> None:
    with agentrt_up(tmp_path) as up:
        _wait_http(f"{up.api_url}/health")
        up.process.send_signal(signum)
        assert up.process.wait(60) == 0
    assert _port_closed(int(up.api_url.rsplit(":", 1)[1]))
