"""An agent-tools turn is the holder `turn-{turnId}` of a Windows lease in its workspace's
tenant: when the turn finishes, the lease is released (the loopback pool sees the DELETE);
under another tenant, or after the turn finished, a verb for it is refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from runtime.investigation.demo import ensure_demo
from runtime.settings import Settings
from runtime.store import Store, upgrade_to_head
from tests.agent_tools_helpers import DEMO_PROMPT, Browser
from tests.conftest import ApiFactory
from tests.fakes.windows_pool import FakeWindowsPool
from tests.windows_helpers import POOL_TOKEN
from worker import build_worker

TOKEN = "turn-settlement"


@pytest.fixture
async def browser(
    api: ApiFactory, dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> AsyncIterator[tuple[Browser, FakeWindowsPool]]:
    with FakeWindowsPool(token=POOL_TOKEN) as pool:
        values: dict[str, Any] = {
            "data_dir": tmp_path / ".data",
            "task_queue": task_queue,
            "token": TOKEN,
            "windows_pool_url": pool.base_url,
            "windows_pool_token": POOL_TOKEN,
        }
        settings = Settings(**values)
        store = Store(settings.resolved_database_url)
        upgrade_to_head(store.engine)
        with store.transaction() as session:
            ensure_demo(session, "demo")
        async with AsyncExitStack() as stack:
            stack.callback(store.dispose)
            await stack.enter_async_context(build_worker(dev_env.client, settings, store))
            client = await api(**values)
            client.headers["Authorization"] = f"Bearer {TOKEN}"
            yield await Browser(client).open(), pool


async def test_a_finished_turn_releases_its_lease(
    browser: tuple[Browser, FakeWindowsPool],
) -> None:
    page, pool = browser
    tenant = "/api/v1/tenants/demo"
    enabled = await page.client.put(f"{tenant}/features/windows-pool", json={"enabled": True})
    assert enabled.status_code == 200, enabled.text
    turn = await page.start_turn(DEMO_PROMPT)
    turn_id = turn["turn_id"]
    events = await page.wait_for_event(turn_id, "agent.authorization.required")
    research_id = events[-1]["payload"]["research_id"]
    # Under another tenant the turn's settlement (its workspace's lease) would miss it.
    await page.client.put("/api/v1/tenants/other/features/windows-pool", json={"enabled": True})
    elsewhere = await page.client.post(
        f"/api/v1/tenants/other/windows/turn-{turn_id}/windows_windows", json={}
    )
    assert elsewhere.status_code == 400, elsewhere.text
    assert elsewhere.json()["error"]["data"]["reason"] == "unknown_holder"
    assert not pool.sessions
    leased = await page.client.post(f"{tenant}/windows/turn-{turn_id}/windows_windows", json={})
    assert leased.status_code == 200, leased.text
    assert pool.holders() == [f"turn-{turn_id}"]
    assert (await page.decide(research_id, "deny")).status_code == 200
    await page.wait_for_event(turn_id, "agent.turn.completed")
    for _ in range(200):
        if not pool.sessions:
            break
        await asyncio.sleep(0.05)
    assert not pool.sessions
    # Finished: a verb for the turn leases nothing for nobody.
    late = await page.client.post(f"{tenant}/windows/turn-{turn_id}/windows_windows", json={})
    assert late.status_code == 400, late.text
    error = late.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["data"]["reason"] == "holder_settled"
    assert not pool.sessions
