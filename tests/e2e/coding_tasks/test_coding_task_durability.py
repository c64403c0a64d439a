"""A coding task survives `kill -9` of the worker between its claim and its completion:
one holder, one `DependencyCompleted` for the proposing agent, no leaked Windows lease.

The API runs in process under uvicorn (a real MCP client drives `/mcp`); the worker is a
process of its own (tests/worker_processes.py); the Windows pool is the loopback fake.
The coder claims the task and leases a machine through it (a screenshot); the worker is
killed; the coder completes the task while no worker runs (the API's write is durable,
the wake-up waits in Temporal); a new worker settles the lease and wakes the agent.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from sqlmodel import col, select
from temporalio.testing import WorkflowEnvironment

from runtime.coding_tasks import store as tasks
from runtime.settings import Settings
from runtime.standing_agents.models import AgentEventRow, AgentLedgerTurn
from runtime.store import EventJournal, Store
from tests.agents_helpers import AgentsDaemon, served
from tests.conftest import ApiFactory, free_port
from tests.fakes.windows_pool import FakeWindowsPool
from tests.windows_helpers import POOL_TOKEN
from tests.worker_processes import WorkerProcesses, kill9

pytestmark = pytest.mark.stack
TOKEN = "coding-task-durability"


async def _until(predicate: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await asyncio.to_thread(predicate):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what} never happened")


async def _call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    body: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert not result.is_error, body
    return body


async def test_a_kill_between_claim_and_completion_loses_nothing_and_leaks_nothing(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    data_dir = tmp_path / ".data"
    with FakeWindowsPool(token=POOL_TOKEN) as pool:
        env = {
            "AGENTRT_TOKEN": TOKEN,
            "AGENTRT_WINDOWS_POOL_URL": pool.base_url,
            "AGENTRT_WINDOWS_POOL_TOKEN": POOL_TOKEN,
        }
        workers = WorkerProcesses(dev_env, task_queue, data_dir, workspace, **env)
        try:
            values: dict[str, Any] = {
                "data_dir": data_dir,
                "task_queue": task_queue,
                "workspace": workspace,
                "token": TOKEN,
                "port": free_port(),
                "windows_pool_url": pool.base_url,
                "windows_pool_token": POOL_TOKEN,
            }
            client = await api(**values)
            client.headers["Authorization"] = f"Bearer {TOKEN}"
            store = Store(f"sqlite:///{data_dir / 'agentrt.db'}")
            d = AgentsDaemon(client, store, EventJournal(store), Settings(**values))
            first = await workers.start()
            tenant = d.tenant()
            soa = await d.soa(tenant)
            base = d.base(tenant)
            await client.put(f"{base}/features/windows-pool", json={"enabled": True})
            made = await client.post(f"{base}/tokens", json={"name": "c", "role": "coder"})
            bearer = {"Authorization": f"Bearer {made.json()['token']}"}
            row = tasks.create(
                store,
                tenant=tenant,
                title="Check the installer",
                instructions="run it",
                proposed_by=f"agent:{soa}",
                now=datetime.now(UTC),
                op_id="durable-1",
                instance_id=soa,
            )
            async with served(d) as http:
                url = f"{str(http.base_url).rstrip('/')}/mcp"
                transport = httpx2.AsyncClient(headers=bearer, timeout=httpx2.Timeout(60.0))
                async with (
                    transport,
                    Client(streamable_http_client(url, http_client=transport)) as coder,
                ):
                    await _call(coder, "coding_task_claim", taskId=row.task_id)
                    await _call(coder, "windows_windows", taskId=row.task_id)
                    assert pool.holders() == [f"task-{row.task_id}"]
                    kill9(first)
                    done = await _call(
                        coder, "coding_task_complete", taskId=row.task_id, outcome="succeeded"
                    )
                    assert (done["state"], done["holder"]) == ("succeeded", "coder:c")
                    await workers.start()
                    await _until(lambda: pool.holders() == [], "the lease's release")

            def turns() -> list[AgentLedgerTurn]:
                with store.session() as db:
                    return list(
                        db.exec(
                            select(AgentLedgerTurn).where(
                                col(AgentLedgerTurn.instance_id) == soa,
                                col(AgentLedgerTurn.event_kind) == "DependencyCompleted",
                            )
                        ).all()
                    )

            await _until(lambda: bool(turns()), "the agent's turn on the completion")
            with store.session() as db:
                events = db.exec(
                    select(AgentEventRow).where(
                        col(AgentEventRow.event_id) == tasks.settled_event_id(row.task_id)
                    )
                ).all()
            assert len(events) == 1 and len(turns()) == 1
            assert tasks.get(store, tenant, row.task_id).holder == "coder:c"
            store.dispose()
        finally:
            workers.close()
