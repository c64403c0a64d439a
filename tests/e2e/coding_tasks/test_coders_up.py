"""The coders' loop on a real `agentrt up`, both ways.

An MCP coder built on the official SDK's client: the scripted SOA proposes a task for any
coder with a capability; the coder registers with it, claims the task, leases a Windows
machine from the loopback pool through it and takes a screenshot, then completes it; the
SOA's next turn carries the outcome, and the lease is released.

agentrt's own coder: the SOA proposes a task for it; its session runs in the task's git
worktree, asks before writing (a decision of the tenant, answered over REST), writes, and
its prompt's end settles the task; the SOA's next turn carries that outcome too."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_up_e2e import agentrt_up
from tests.fakes.windows_pool import FakeWindowsPool
from tests.windows_helpers import POOL_TOKEN

pytestmark = pytest.mark.stack
TOKEN = "coders-up-token"
TENANT = "acme-up"


async def _until(check: Any, what: str, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.25)
    raise AssertionError(f"{what} never happened")


def _repository(root: Path) -> None:
    """`root` a git repository with one commit: agentrt's coder works in a worktree of it."""
    git = ["git", "-c", "user.name=agentrt tests", "-c", "user.email=tests@agentrt.invalid"]
    (root / "README").write_text("the project\n")
    for args in (["init", "-q"], ["add", "README"], ["commit", "-q", "-m", "first"]):
        subprocess.run([*git, "-C", str(root), *args], check=True, capture_output=True)


async def test_both_coders_work_a_soas_tasks(tmp_path: Path) -> None:
    project = tmp_path / "project"  # the workspace, a git repository
    project.mkdir()
    _repository(project)
    with FakeWindowsPool(token=POOL_TOKEN) as pool:
        env = {
            "AGENTRT_WORKSPACE": str(project),
            "AGENTRT_TOKEN": TOKEN,
            "AGENTRT_WINDOWS_POOL_URL": pool.base_url,
            "AGENTRT_WINDOWS_POOL_TOKEN": POOL_TOKEN,
        }
        with agentrt_up(tmp_path, env) as up:
            up.wait_healthy()
            admin = {"Authorization": f"Bearer {TOKEN}"}
            base = f"{up.api_url}/api/v1/tenants/{TENANT}"
            async with httpx.AsyncClient(headers=admin, timeout=30) as rest:
                soa = await rest.put(f"{base}/features/standing-agents", json={"enabled": True})
                soa_id = soa.json()["soaInstanceId"]
                pool_on = await rest.put(f"{base}/features/windows-pool", json={"enabled": True})
                assert pool_on.is_success
                made = await rest.post(f"{base}/tokens", json={"name": "up", "role": "coder"})
                token = made.json()
                proposal = {
                    "title": "Check the installer",
                    "prompt": "Run it on Windows.",
                    "coder": "any",
                    "capabilities": ["windows"],
                }
                line = f"/call soa_propose_task {json.dumps(proposal)}"
                sent = await rest.post(f"{base}/agents/{soa_id}/messages", json={"text": line})
                assert sent.status_code == 202

                async def open_task() -> str | None:
                    listed = await rest.get(f"{base}/coding-tasks", params={"state": "open"})
                    tasks = listed.json()["tasks"]
                    return tasks[0]["taskId"] if tasks else None

                task_id = await _until(open_task, "the SOA's proposal")
            bearer = {"Authorization": f"Bearer {token['token']}"}
            http = httpx2.AsyncClient(headers=bearer, timeout=httpx2.Timeout(60.0))
            transport = streamable_http_client(f"{up.api_url}/mcp", http_client=http)
            async with http, Client(transport) as coder:

                async def call(tool: str, **args: Any) -> Any:
                    result = await coder.call_tool(tool, args)
                    assert not result.is_error, result.content
                    return result

                await call("agent_register", agentId="up-1", role="Coder", capabilities=["windows"])
                await call("coding_task_claim", taskId=task_id, agentId="up-1")
                await call("windows_windows", taskId=task_id, requestId="w1")
                shot = await call("windows_screenshot", taskId=task_id, requestId="s1")
                assert [c.type for c in shot.content] == ["text", "image"]
                assert pool.holders() == [f"task-{task_id}"]
                await call("coding_task_complete", taskId=task_id, outcome="succeeded")
            async with httpx.AsyncClient(headers=admin, timeout=30) as rest:

                async def heard() -> bool:
                    turns = (await rest.get(f"{base}/agents/{soa_id}/ledger")).json()["turns"]
                    return any(t["eventKind"] == "DependencyCompleted" for t in turns)

                await _until(heard, "the SOA's turn on the outcome")

            async def released() -> bool:
                return pool.holders() == []

            await _until(released, "the lease's release")
            async with httpx.AsyncClient(headers=admin, timeout=30) as rest:
                await _own_coder_loop(rest, base, soa_id, project)


async def _own_coder_loop(rest: httpx.AsyncClient, base: str, soa_id: str, root: Path) -> None:
    write = {"file_path": "hello.txt", "content": "hi\n"}
    proposal = {"title": "Say hi", "prompt": f"/call write_file {json.dumps(write)}"}
    line = f"/call soa_propose_task {json.dumps(proposal)}"
    sent = await rest.post(f"{base}/agents/{soa_id}/messages", json={"text": line})
    assert sent.status_code == 202

    async def asked() -> dict[str, Any] | None:
        listed = await rest.get(f"{base}/decisions", params={"status": "open"})
        return next((d for d in listed.json()["decisions"] if d["source"] == "coder"), None)

    question = await _until(asked, "agentrt's coder's permission request")
    task_id = question["payload"]["taskId"]
    respond = f"{base}/decisions/{question['decisionId']}/respond"
    answered = await rest.post(respond, json={"resolution": "proceed_once"})
    assert answered.status_code == 200, answered.text

    async def settled() -> dict[str, Any] | None:
        task = (await rest.get(f"{base}/coding-tasks/{task_id}")).json()
        return task if task["state"] in ("succeeded", "failed") else None

    task = await _until(settled, "the settlement by agentrt's coder")
    assert (task["state"], task["holder"]) == ("succeeded", "agentrt-coder")
    own_dir = root / ".agentrt-tasks" / task_id
    assert (own_dir / "hello.txt").read_text() == "hi\n"
    assert (own_dir / "README").read_text() == "the project\n"  # a worktree of HEAD
    assert not (root / "hello.txt").exists()
    status = await asyncio.to_thread(
        subprocess.run, ["git", "-C", str(root), "status", "--porcelain"], capture_output=True
    )
    assert status.stdout == b""  # the repository's own status does not list the worktrees

    async def heard_both() -> bool:
        turns = (await rest.get(f"{base}/agents/{soa_id}/ledger")).json()["turns"]
        return sum(1 for t in turns if t["eventKind"] == "DependencyCompleted") >= 2

    await _until(heard_both, "the SOA's turn on its coder's outcome")
