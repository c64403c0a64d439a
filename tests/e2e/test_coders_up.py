"""The coders' loop on a real `agentrt up`, an MCP coder built on the official SDK's client:
the scripted SOA proposes a task for any coder with a capability; the coder registers with
it, claims the task, leases a Windows machine from the loopback pool through it and takes
a screenshot, then completes it; the SOA's next turn carries the outcome, and the lease is
released."""

from __future__ import annotations

import asyncio
import json
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


async def test_an_mcp_coder_works_a_soa_task_with_the_windows_lane(tmp_path: Path) -> None:
    with FakeWindowsPool(token=POOL_TOKEN) as pool:
        env = {
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
