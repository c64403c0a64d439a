"""The API's sweeper repairs a wake-up lost between a store write and its signal: a due
event left unconsumed wakes its agent, and an agent whose workflow is not running gets
it started (real worker and Temporal dev server)."""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from sqlmodel import col, select
from temporalio.testing import WorkflowEnvironment

from api.app import create_app
from api.standing_agents.temporal_calls import STALE_EVENT_AGE, YOUNG_INSTANCE, Sweeper
from runtime.settings import Settings
from runtime.standing_agents import control, queue
from runtime.standing_agents.contracts import AgentStatus, AgentType, EventKind
from runtime.standing_agents.models import AgentEventRow, AgentLedgerTurn
from runtime.store import EventJournal, Store
from tests.agents_helpers import TOKEN, AgentsDaemon, AgentsFactory
from tests.conftest import free_port
from worker import build_worker


def _turn_kinds(d: AgentsDaemon, instance_id: str) -> list[str]:
    with d.store.session() as db:
        rows = db.exec(
            select(AgentLedgerTurn.event_kind).where(
                col(AgentLedgerTurn.instance_id) == instance_id
            )
        ).all()
    return list(rows)


def _age_event(d: AgentsDaemon, event_id: str, by: timedelta) -> None:
    with d.store.session() as db:
        row = db.exec(select(AgentEventRow).where(col(AgentEventRow.event_id) == event_id)).one()
        row.created_at = row.created_at - by
        row.visible_at = row.visible_at - by
        db.add(row)
        db.commit()


async def test_an_agent_whose_workflow_never_started_is_started(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    await d.enable(tenant)
    # A crash right after the store write: the row and its AgentInitialized, no workflow.
    row = control.create_instance(d.store, tenant, AgentType.COMPLIANCE, AgentStatus.ACTIVE)
    d.set_instance(
        row.instance_id, created_at=datetime.now(UTC) - YOUNG_INSTANCE - timedelta(seconds=1)
    )
    client = await d.client.app.state.temporal.get()  # type: ignore[attr-defined]
    woken = await Sweeper(d.settings, d.store).repair_running(client)
    assert woken >= 1
    await d.wait_until(
        lambda: "AgentInitialized" in _turn_kinds(d, row.instance_id), "the first turn"
    )


async def test_a_due_event_left_unconsumed_wakes_its_agent(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    await d.wait_until(lambda: "AgentInitialized" in _turn_kinds(d, soa), "the greeting turn")
    # Enqueued without a wake-up (the signal was lost), and older than the sweeper's bound.
    event, _ = queue.enqueue(
        d.store,
        tenant=tenant,
        instance_id=soa,
        kind=EventKind.MISSION_STATE_CHANGED,
        payload={"mission": "m-1"},
        event_id=f"external/{soa}/lost",
        generation=d.instance(soa).generation,
    )
    _age_event(d, event.event_id, STALE_EVENT_AGE + timedelta(seconds=1))
    client = await d.client.app.state.temporal.get()  # type: ignore[attr-defined]
    await Sweeper(d.settings, d.store).sweep_once(client)
    await d.wait_until(
        lambda: "MissionStateChanged" in _turn_kinds(d, soa), "the lost event's turn"
    )


async def test_while_temporal_is_down_writes_are_kept_and_delivered_later(
    dev_env: WorkflowEnvironment, task_queue: str, tmp_path: Path
) -> None:
    """The routes answer once the store has the write; the sweeper delivers it when
    Temporal answers again (here: a worker and the sweeper on a reachable server)."""
    settings = Settings(
        workspace=tmp_path,
        data_dir=tmp_path / ".data",
        port=4170,
        task_queue=task_queue,
        token=TOKEN,
        # Nothing listens there: Temporal is down for this API.
        temporal_address=f"127.0.0.1:{free_port()}",
    )
    app = create_app(settings)
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    base = f"/api/v1/tenants/{tenant}"
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        client = await stack.enter_async_context(
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://127.0.0.1:4170",
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
        )
        enabled = await client.put(f"{base}/features/standing-agents", json={"enabled": True})
        assert enabled.status_code == 200, enabled.text
        soa = enabled.json()["soaInstanceId"]
        posted = await client.post(f"{base}/agents/{soa}/messages", json={"text": "anyone?"})
        assert posted.status_code == 202, posted.text
        store: Store = app.state.store
        # Temporal is back (another server, same store): the sweeper delivers both events.
        d = AgentsDaemon(client=client, store=store, journal=EventJournal(store), settings=settings)
        d.set_instance(soa, created_at=datetime.now(UTC) - YOUNG_INSTANCE - timedelta(seconds=1))
        for row in d.events(soa):
            _age_event(d, row.event_id, STALE_EVENT_AGE + timedelta(seconds=1))
        await stack.enter_async_context(build_worker(dev_env.client, settings, store))
        sweeper: Sweeper = app.state.agent_sweeper
        # The routes' failed wake-ups were kept for a retry.
        assert soa in sweeper.retries
        await sweeper.sweep_once(dev_env.client)
        await d.wait_until(
            lambda: {"AgentInitialized", "OperatorMessage"} <= set(_turn_kinds(d, soa)),
            "both turns",
        )


async def test_with_the_deployment_switch_off_there_is_no_sweeper(
    agents: AgentsFactory,
) -> None:
    """Spec §3.2: AGENTRT_STANDING_AGENTS_ENABLED off hosts no dispatcher: the sweeper
    returns at once, and the feature route says the deployment is off."""
    d = await agents(standing_agents_enabled=False)
    tenant = d.tenant()
    enabled = await d.enable(tenant)
    assert enabled["enabled"] is True
    state = (await d.client.get(f"/api/v1/tenants/{tenant}/features/standing-agents")).json()
    assert state["deploymentEnabled"] is False

    async def no_client() -> object:
        raise AssertionError("the sweeper asked for Temporal")

    await Sweeper(d.settings, d.store).run(no_client)  # type: ignore[arg-type]
