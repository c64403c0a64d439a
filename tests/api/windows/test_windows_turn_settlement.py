"""An agent-tools turn is the holder `turn-{turnId}` of a Windows lease in its workspace's
tenant: when the turn finishes, the lease is released (the loopback pool sees the DELETE);
under another tenant, or after the turn finished, a verb for it is refused."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from api.windows.holders import turn_ended
from runtime.agent_tools.contracts import TurnState, TurnStatus
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


@workflow.defn(name="TurnBetweenItsEndAndItsClose", sandboxed=False)
class TurnBetweenItsEndAndItsClose:
    """A turn's workflow held at the moment the race needs, which the real one passes
    through in one workflow task: its end decided (the `state` query's status), its lease
    already settled, its workflow not closed yet. The holder check queries it as it
    queries TurnWorkflow (the query `state`)."""

    def __init__(self) -> None:
        self._status: TurnStatus = "running"

    @workflow.run
    async def run(self, status: TurnStatus) -> None:
        self._status = status
        await workflow.wait_condition(lambda: False)

    @workflow.query
    def state(self) -> TurnState:
        return TurnState(turn_id="t", workspace="w", agent="deterministic", status=self._status)


@pytest.mark.parametrize(
    ("status", "ended"),
    [("completed", True), ("denied", True), ("failed", True), ("running", False)],
)
async def test_a_turn_that_decided_its_end_is_settled_before_its_workflow_closes(
    dev_env: WorkflowEnvironment, task_queue: str, status: TurnStatus, ended: bool
) -> None:
    """A verb for a turn between its settlement and its close would lease a machine that
    no settlement releases: the holder check reads the turn's decided end, not only
    whether its workflow still runs (a clean-clone run caught the window once)."""
    workflow_id = f"turn-window-{uuid.uuid4()}"
    async with Worker(
        dev_env.client, task_queue=task_queue, workflows=[TurnBetweenItsEndAndItsClose]
    ):
        handle = await dev_env.client.start_workflow(
            TurnBetweenItsEndAndItsClose.run, status, id=workflow_id, task_queue=task_queue
        )
        try:
            assert await turn_ended(dev_env.client, workflow_id) is ended
        finally:
            await handle.terminate()
    assert await turn_ended(dev_env.client, workflow_id) is True  # closed
    assert await turn_ended(dev_env.client, f"never-{workflow_id}") is True  # never started
