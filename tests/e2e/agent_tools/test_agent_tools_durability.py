"""Turns across `kill -9` of the worker: the authorization wait, and a crash mid-turn."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from runtime.investigation.demo import ensure_demo
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from tests.agent_tools_helpers import DEMO_PROMPT, Browser
from tests.conftest import ApiFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.worker_processes import WorkerProcesses, kill9

WorkerFactory = Callable[..., Awaitable[subprocess.Popen[bytes]]]


@pytest.fixture
async def durable(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> AsyncIterator[tuple[Browser, WorkerFactory]]:
    """The API in process; workers as separate processes a test can kill -9."""
    data_dir = tmp_path / ".data"
    store = Store(Settings(data_dir=data_dir).resolved_database_url)
    upgrade_to_head(store.engine)
    with store.transaction() as session:
        ensure_demo(session, "demo")
    store.dispose()
    workers = WorkerProcesses(dev_env, task_queue, data_dir, data_dir.parent)
    client = await api(data_dir=data_dir, task_queue=task_queue)
    browser = await Browser(client).open()
    yield browser, workers.start
    workers.close()


def _check_contiguous_and_single(events: list[dict[str, Any]]) -> None:
    seqs = [e["sequence"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
    types = [e["type"] for e in events]
    for once in ("agent.turn.started", "agent.authorization.required", "agent.turn.completed"):
        assert types.count(once) == 1, types
    for call_id in {e["call_id"] for e in events if e["call_id"]}:
        per_call = [e["type"] for e in events if e["call_id"] == call_id]
        assert per_call.count("agent.tool.completed") <= 1, per_call
        assert per_call.count("agent.tool.requested") == 1, per_call


async def test_authorization_wait_survives_kill_9_of_the_worker(
    durable: tuple[Browser, WorkerFactory],
) -> None:
    browser, start_worker = durable
    worker = await start_worker()
    turn = await browser.start_turn(DEMO_PROMPT)
    events = await browser.wait_for_event(turn["turn_id"], "agent.authorization.required")
    research_id = events[-1]["payload"]["research_id"]
    kill9(worker)

    # With no worker alive, the human decides; the turn is still waiting, durably.
    assert (await browser.decide(research_id, "approve")).status_code == 200
    await start_worker()
    # The kill may land after the event is journaled but before its workflow task
    # completes: see test_authorization_wait_survives_kill_9_of_everything.
    await browser.wait_for_status(turn["turn_id"], "awaiting_authorization")
    response = await browser.resume(turn["turn_id"])
    assert response.status_code == 200, response.text
    assert response.json()["result"] == "COMPLETED"
    events = [e for e in await browser.events() if e["turn_id"] == turn["turn_id"]]
    _check_contiguous_and_single(events)
    assert events[-1]["type"] == "agent.turn.completed"


async def test_a_turn_spanning_a_kill_9_mid_model_call_finishes_without_gaps(
    durable: tuple[Browser, WorkerFactory],
) -> None:
    browser, start_worker = durable
    prepare = {
        "id": "c2",
        "name": "research__prepare",
        "arguments": {"question": "Trace Kestrel funds", "scope": {"node_ids": ["o-kestrel"]}},
    }
    with FakeOpenAI() as fake:
        fake.queue_tool_calls(
            [{"id": "c1", "name": "investigation__search", "arguments": {"query": "Kestrel"}}]
        )
        # The second model call is slow: the worker dies while waiting for it.
        fake.queue_tool_calls([prepare], delay=30)
        fake.queue_tool_calls([prepare])
        env = {"AGENTRT_MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": fake.base_url}
        worker = await start_worker(**env)
        turn = await browser.start_turn("Follow the Kestrel money", agent="model")
        await browser.wait_for_event(turn["turn_id"], "agent.tool.completed")
        while len(fake.requests) < 2:  # the slow call is in flight
            await _sleep(0.05)
        kill9(worker)
        await start_worker(**env)
        events = await browser.wait_for_event(
            turn["turn_id"], "agent.authorization.required", timeout=90
        )
    research_id = events[-1]["payload"]["research_id"]
    assert (await browser.decide(research_id, "approve")).status_code == 200
    assert (await browser.resume(turn["turn_id"])).json()["result"] == "COMPLETED"
    events = [e for e in await browser.events() if e["turn_id"] == turn["turn_id"]]
    _check_contiguous_and_single(events)
    tools = [e["payload"]["tool_id"] for e in events if e["type"] == "agent.tool.requested"]
    assert tools == ["investigation.search", "research.prepare", "research.get_state"]


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def test_authorization_wait_survives_kill_9_of_everything(tmp_path: Path) -> None:
    """kill -9 of `agentrt up` takes the API, the worker and Temporal down; all restart."""
    import time

    import httpx

    from tests.e2e.test_up_e2e import agentrt_up

    def wait_event(client: httpx.Client, turn_id: str, kind: str) -> dict[str, Any]:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            page = client.get("/api/v1/agent-tools/events?cursor=0&limit=500&wait=2").json()
            for event in page["events"]:
                if event["turn_id"] == turn_id and event["type"] == kind:
                    return dict(event)
        raise AssertionError(f"{kind} never arrived")

    with agentrt_up(tmp_path) as up:
        up.wait_healthy()
        port = up.api_url.rsplit(":", 1)[1]
        origin = f"http://127.0.0.1:{port}"
        client = httpx.Client(base_url=up.api_url, timeout=30)
        csrf = client.get("/api/v1/agent-tools/session").json()["csrfToken"]
        headers = {"Origin": origin, "X-CSRF-Token": csrf}
        turn = client.post(
            "/api/v1/agent-tools/turns", json={"prompt": DEMO_PROMPT}, headers=headers
        ).json()
        event = wait_event(client, turn["turn_id"], "agent.authorization.required")
        os.kill(up.process.pid, signal.SIGKILL)
        up.process.wait()
    _wait_children_gone(up)

    with agentrt_up(tmp_path) as up:
        up.wait_healthy()
        port = up.api_url.rsplit(":", 1)[1]
        client = httpx.Client(base_url=up.api_url, timeout=60)
        csrf = client.get("/api/v1/agent-tools/session").json()["csrfToken"]
        headers = {"Origin": f"http://127.0.0.1:{port}", "X-CSRF-Token": csrf}
        research_id = event["payload"]["research_id"]
        decided = client.post(
            f"/api/v1/research/{research_id}/decision",
            json={"decision": "approve", "decided_by": "ops"},
            headers=headers,
        )
        assert decided.status_code == 200, decided.text
        # Wait (as the page does, reading the turn) until the restarted worker has the turn
        # waiting again. kill -9 can land after the event is journaled (a local activity)
        # but before its workflow task completes: that task is then run again after the
        # restart, and an update delivered with it is validated before the activity result
        # it redoes, so a resume sent at once may get 409 "running" (seen on a loaded
        # machine, with pytest-xdist).
        deadline = time.monotonic() + 90
        state: dict[str, Any] = {}
        while time.monotonic() < deadline:
            state = client.get(f"/api/v1/agent-tools/turns/{turn['turn_id']}").json()
            if state.get("status") == "awaiting_authorization":
                break
            time.sleep(0.5)
        assert state.get("status") == "awaiting_authorization", state
        resumed = client.post(
            f"/api/v1/agent-tools/turns/{turn['turn_id']}/resume", json={}, headers=headers
        )
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["result"] == "COMPLETED"
        events = [
            e
            for e in client.get("/api/v1/agent-tools/events?cursor=0&limit=500").json()["events"]
            if e["turn_id"] == turn["turn_id"]
        ]
        _check_contiguous_and_single(events)


def _wait_children_gone(up: Any) -> None:
    """After kill -9 of `agentrt up`, its children die with it (PDEATHSIG); wait until
    the API, the Web UI and the Temporal frontend have all let go of their ports, so
    the next start does not meet the old dev server still holding temporal.db."""
    import socket
    import time

    ports = [
        int(up.api_url.rsplit(":", 1)[1]),
        int(up.ui_url.rsplit(":", 1)[1]),
        int(up.frontend.rsplit(":", 1)[1]),
    ]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        busy = []
        for port in ports:
            with socket.socket() as sock:
                sock.settimeout(0.5)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    busy.append(port)
        if not busy:
            return
        time.sleep(0.2)
    raise AssertionError(f"ports still in use after kill -9: {busy}")
