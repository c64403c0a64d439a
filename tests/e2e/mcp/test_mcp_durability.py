"""An approved MCP call survives `kill -9` of the worker without reaching the server twice:
a session's (after its permission vote) and a standing agent's (after its decision).

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
from sqlmodel import col, select
from temporalio.testing import WorkflowEnvironment

from runtime.standing_agents.models import AgentLedgerTurn, AttentionRequest
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


async def test_an_agents_approved_call_in_flight_when_the_worker_dies_reaches_the_server_once(
    api: ApiFactory,
    dev_env: WorkflowEnvironment,
    task_queue: str,
    tmp_path: Path,
    faults: FaultServer,
) -> None:
    """A standing agent's consequential MCP call: a decision, approved, in flight when the
    worker is killed: the next worker's tick reports `outcome_unknown` into the answer's
    event and the server counted one call."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    data_dir = tmp_path / ".data"
    token = "agents-mcp-token"
    workers = WorkerProcesses(dev_env, task_queue, data_dir, workspace, AGENTRT_TOKEN=token)
    try:
        client = await api(
            data_dir=data_dir, task_queue=task_queue, workspace=workspace, token=token
        )
        client.headers["Authorization"] = f"Bearer {token}"
        store = Store(f"sqlite:///{data_dir / 'agentrt.db'}")
        first = await workers.start()
        tenant = "t-mcp-durable"
        base = f"/api/v1/tenants/{tenant}"
        enabled = await client.put(f"{base}/features/standing-agents", json={"enabled": True})
        soa = enabled.json()["soaInstanceId"]
        server = {"httpUrl": faults.url, "timeout": 60_000}
        assert (await client.put(f"{base}/mcp/servers/faults", json=server)).is_success
        grant = {"tools": ["mcp__faults__record_slowly"]}
        assert (await client.put(f"{base}/mcp/grants/Soa", json=grant)).is_success
        modes = (await client.get("/api/v1/agent-modes/Soa")).json()["modes"]
        tools = next(m for m in modes if m["name"] == "Strategic")["tools"]
        changed = {"tools": [*tools, "mcp__faults__record_slowly"]}
        assert (
            await client.put("/api/v1/agent-modes/Soa/Strategic/tools", json=changed)
        ).is_success
        line = '/call mcp__faults__record_slowly {"value": "once", "seconds": 30}'
        sent = await client.post(f"{base}/agents/{soa}/messages", json={"text": line})
        assert sent.status_code == 202, sent.text

        def decision() -> AttentionRequest | None:
            with store.session() as db:
                return db.exec(
                    select(AttentionRequest).where(col(AttentionRequest.kind) == "mcp_call")
                ).first()

        await _until(lambda: decision() is not None, timeout=90)
        asked = decision()
        assert asked is not None
        answer = {"resolution": "approve", "respondedBy": "ops"}
        url = f"{base}/decisions/{asked.decision_id}/respond"
        assert (await client.post(url, json=answer)).status_code == 200
        await _until(lambda: len(faults.calls()) == 1, timeout=90)  # in flight, and slow
        kill9(first)
        await workers.start()

        def answered() -> AgentLedgerTurn | None:
            with store.session() as db:
                return db.exec(
                    select(AgentLedgerTurn).where(
                        col(AgentLedgerTurn.event_id) == f"escalation/{asked.decision_id}"
                    )
                ).first()

        await _until(lambda: answered() is not None, timeout=120)
        turn = answered()
        assert turn is not None
        outcome = turn.event_payload["mcpCall"]
        assert outcome["outcome"] == "error"
        assert "outcome_unknown" in outcome["error"]
        (call,) = faults.calls()
        assert call["operationId"] == f"agent-mcp/{tenant}/{asked.decision_id}"
        store.dispose()
    finally:
        workers.close()
