"""The API's sweeper repairs a wake-up lost between a store write and its signal: a due
event left unconsumed wakes its agent, and an agent whose workflow is not running gets
it started (real worker and Temporal dev server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import col, select

from api.agent_workflows import STALE_EVENT_AGE, YOUNG_INSTANCE, sweep_once
from runtime.standing_agents import control, queue
from runtime.standing_agents.contracts import AgentStatus, AgentType, EventKind
from runtime.standing_agents.models import AgentEventRow, AgentLedgerTurn
from tests.agents_helpers import AgentsDaemon, AgentsFactory


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
    woken = await sweep_once(client, d.settings, d.store, check_running=True)
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
    await sweep_once(client, d.settings, d.store, check_running=False)
    await d.wait_until(
        lambda: "MissionStateChanged" in _turn_kinds(d, soa), "the lost event's turn"
    )
