"""An approved MCP call survives `kill -9` of the worker without reaching the server twice.

The API runs in process; the worker is a process of its own (tests/worker_processes.py).
The call is in flight when the worker dies: the fault server (built on the MCP SDK) has
recorded it and not answered yet. The next worker's attempt finds the operation `started`
and never finished, so the tool (not annotated idempotent) reports `outcome_unknown` and
is not called again: the server counted one call, never two.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from runtime.store import EventJournal, Store
from tests.conftest import ApiFactory
from tests.mcp_helpers import FaultServer, fault_server, write_settings
from tests.session_helpers import Daemon
from tests.worker_processes import WorkerProcesses, kill9

pytestmark = pytest.mark.stack


@pytest.fixture
def faults(tmp_path: Path) -> Iterator[FaultServer]:
    with fault_server(tmp_path) as server:
        yield server


async def _until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition never held")


async def test_an_approved_call_in_flight_when_the_worker_dies_reaches_the_server_once(
    api: ApiFactory,
    dev_env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    faults: FaultServer,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    data_dir = tmp_path / ".data"
    write_settings(workspace, {"faults": {"httpUrl": faults.url, "timeout": 60_000}})
    trusted = "trusted"  # the test wrote the settings file, as the workspace's owner
    workers = WorkerProcesses(
        dev_env, task_queue, data_dir, workspace, AGENTRT_MCP_WORKSPACE_SERVERS=trusted
    )
    try:
        client = await api(
            data_dir=data_dir,
            task_queue=task_queue,
            workspace=workspace,
            mcp_workspace_servers=trusted,
        )
        store = Store(f"sqlite:///{data_dir / 'agentrt.db'}")
        d = Daemon(client=client, workspace=workspace.resolve(), journal=EventJournal(store))
        first = await workers.start()
        sid = (await d.create())["sessionId"]
        line = '/call mcp__faults__record_slowly {"value": "once", "seconds": 30}'
        prompt_id = (await d.prompt(sid, line)).json()["promptId"]
        events = await d.wait_for(sid, "permission_request", prompt_id=prompt_id)
        request = [e for e in events if e["type"] == "permission_request"][-1]["data"]
        vote = {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
        assert (await d.client.post(f"/permission/{request['requestId']}", json=vote)).is_success
        await _until(lambda: len(faults.calls()) == 1)  # the server has it, and is slow
        kill9(first)
        await workers.start()
        events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id, timeout=120)
        updates = [
            e["data"]["update"]
            for e in events
            if e["type"] == "session_update"
            and e["data"]["update"]["sessionUpdate"] == "tool_call_update"
        ]
        (update,) = updates
        assert update["status"] == "failed"
        assert "outcome_unknown" in update["content"][0]["content"]["text"]
        (call,) = faults.calls()
        assert call["operationId"].startswith(f"session/{sid}/{prompt_id}/")
        store.dispose()
    finally:
        workers.close()
