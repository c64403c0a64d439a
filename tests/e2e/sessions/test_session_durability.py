"""A prompt spanning `kill -9` of the worker, and sessions surviving a restart of everything."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from runtime.settings import Settings
from runtime.store import EventJournal, Store, upgrade_to_head
from tests.conftest import ApiFactory
from tests.e2e.agent_tools.test_agent_tools_durability import _wait_children_gone
from tests.fakes.openai_server import FakeOpenAI
from tests.session_helpers import Daemon, write_prompt
from tests.worker_processes import WorkerProcesses, kill9

WorkerFactory = Callable[..., Awaitable[subprocess.Popen[bytes]]]


@pytest.fixture
async def split(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> AsyncIterator[tuple[Daemon, WorkerFactory]]:
    """The API in process; workers as processes a test can kill -9."""
    data_dir = tmp_path / ".data"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    store = Store(Settings(data_dir=data_dir).resolved_database_url)
    upgrade_to_head(store.engine)
    workers = WorkerProcesses(dev_env, task_queue, data_dir, workspace)
    client = await api(data_dir=data_dir, task_queue=task_queue, workspace=workspace)
    yield (
        Daemon(client=client, workspace=workspace.resolve(), journal=EventJournal(store)),
        workers.start,
    )
    workers.close()
    store.dispose()


def _check(events: list[dict[str, Any]], prompt_id: str) -> None:
    ids = [e["id"] for e in events]
    assert ids == list(range(1, len(ids) + 1)), ids
    mine = [e["type"] for e in events if e.get("promptId") == prompt_id]
    assert mine.count("turn_complete") == 1, mine
    assert mine.count("permission_request") <= 1, mine


async def test_prompt_waiting_on_a_permission_spans_kill_9(
    split: tuple[Daemon, WorkerFactory],
) -> None:
    d, start_worker = split
    worker = await start_worker()
    sid = (await d.create())["sessionId"]
    response = await d.prompt(sid, write_prompt(d.workspace, "survivor.txt"))
    prompt_id = response.json()["promptId"]
    events = await d.wait_for(sid, "permission_request", prompt_id=prompt_id)
    rid = events[-1]["data"]["requestId"]
    kill9(worker)
    await start_worker()
    vote = await d.client.post(
        f"/permission/{rid}", json={"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    )
    assert vote.status_code == 200, vote.text
    events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id)
    _check(events, prompt_id)
    assert (d.workspace / "survivor.txt").read_text() == "hi\n"


async def test_prompt_spanning_kill_9_mid_model_call(
    split: tuple[Daemon, WorkerFactory],
) -> None:
    d, start_worker = split
    with FakeOpenAI() as fake:
        fake.queue_text("first answer, slowly", delay=30)
        fake.queue_text("second answer")
        env = {"AGENTRT_MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": fake.base_url}
        worker = await start_worker(**env)
        sid = (await d.create())["sessionId"]
        response = await d.prompt(sid, "take your time")
        prompt_id = response.json()["promptId"]
        deadline = time.monotonic() + 60
        while not fake.requests and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        kill9(worker)
        await start_worker(**env)
        events = await d.wait_for(sid, "turn_complete", prompt_id=prompt_id, timeout=90)
    _check(events, prompt_id)
    text = "".join(
        e["data"]["update"]["content"]["text"]
        for e in events
        if e["type"] == "session_update"
        and e["data"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "second answer"


def test_sessions_survive_a_restart_of_everything(tmp_path: Path) -> None:
    from tests.e2e.test_up_e2e import agentrt_up

    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"AGENTRT_WORKSPACE": str(workspace)}
    with agentrt_up(tmp_path, env) as up:
        up.wait_healthy()
        client = httpx.Client(base_url=up.api_url, timeout=60)
        sid = client.post("/session", json={}).json()["sessionId"]
        waited = client.post(
            f"/session/{sid}/prompt",
            headers={"Prefer": "wait"},
            json={"prompt": [{"type": "text", "text": "before the restart"}]},
        )
        assert waited.json() == {"stopReason": "end_turn"}
        os.kill(up.process.pid, signal.SIGKILL)
        up.process.wait()
    _wait_children_gone(up)
    with agentrt_up(tmp_path, env) as up:
        up.wait_healthy()
        client = httpx.Client(base_url=up.api_url, timeout=60)
        # Still live: the registry and the workflow both survived.
        ws = str(workspace.resolve()).replace("/", "%2F")
        listed = client.get(f"/workspace/{ws}/sessions").json()["sessions"]
        assert [s["sessionId"] for s in listed] == [sid]
        resumed = client.post(f"/session/{sid}/resume", json={})
        assert resumed.status_code == 200 and resumed.json()["attached"] is True
        waited = client.post(
            f"/session/{sid}/prompt",
            headers={"Prefer": "wait"},
            json={"prompt": [{"type": "text", "text": "after the restart"}]},
        )
        assert waited.json() == {"stopReason": "end_turn"}
        with client.stream(
            "GET", f"/session/{sid}/events", headers={"Last-Event-ID": "0"}
        ) as stream:
            frames: list[dict[str, Any]] = []
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    frames.append(json.loads(line[6:]))
                    if frames[-1]["type"] == "replay_complete":
                        break
    texts = [
        f["data"]["update"]["content"]["text"]
        for f in frames
        if f["type"] == "session_update"
        and f["data"]["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert texts == ["before the restart", "after the restart"]
    ids = [f["id"] for f in frames if "id" in f]
    assert ids == list(range(1, len(ids) + 1))
