"""Cron schedules of standing agents (issue 21, item 11): strict routes, Temporal
Schedules with an explicit overlap and catch-up policy, one tick per firing, and the
sweeper's reconciliation of rows and Temporal Schedules (real worker, real dev server).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlmodel import col, select
from temporalio.client import (
    Client,
    ScheduleDescription,
    ScheduleHandle,
    ScheduleOverlapPolicy,
)
from temporalio.service import RPCError, RPCStatusCode

from api.standing_agents import temporal_schedules
from runtime.standing_agents import control, schedules
from runtime.standing_agents.contracts import AgentStatus, AgentType
from runtime.standing_agents.models import AgentEventRow, AgentSchedule
from tests.agents_helpers import AgentsDaemon, AgentsFactory

WEEKDAYS_PARIS = {"cron": "0 9 * * MON-FRI", "timeZone": "Europe/Paris"}
# What Temporal's Schedules do (policies, listing, firing through the worker) is the same
# on either store: those tests run on SQLite only. The store's side of a firing (one
# tick, coalescing, generations, the lock) and the reconciliation run on both.
TEMPORAL_SIDE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


async def _client(d: AgentsDaemon) -> Client:
    client: Client = await d.client.app.state.temporal.get()  # type: ignore[attr-defined]
    return client


def _schedule_events(d: AgentsDaemon, instance_id: str) -> list[AgentEventRow]:
    with d.store.session() as db:
        return list(
            db.exec(
                select(AgentEventRow)
                .where(
                    col(AgentEventRow.instance_id) == instance_id,
                    col(AgentEventRow.event_id).startswith(schedules.EVENT_PREFIX),
                )
                .order_by(col(AgentEventRow.sequence_number))
            ).all()
        )


def kept_row(d: AgentsDaemon, schedule_id: str) -> dict[str, Any]:
    with d.store.session() as db:
        row = db.get(AgentSchedule, schedule_id)
        assert row is not None
        return row.model_dump()


def _consume(d: AgentsDaemon, event_id: str) -> None:
    with d.store.session() as db:
        row = db.exec(select(AgentEventRow).where(col(AgentEventRow.event_id) == event_id)).one()
        row.consumed_at = datetime.now(UTC)
        db.add(row)
        db.commit()


async def _create(d: AgentsDaemon, tenant: str, instance_id: str, **body: Any) -> dict[str, Any]:
    response = await d.client.post(f"{d.base(tenant)}/agents/{instance_id}/schedules", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def _idle_agent(d: AgentsDaemon) -> tuple[str, str]:
    """An Active agent in the middle of a tick (its lease held) whose workflow is not
    running: the API's sweeper never wakes an agent that is ticking, so its queued ticks
    stay queued and a firing holds its overlap slot until the test consumes its tick."""
    tenant = d.tenant()
    await d.enable(tenant)
    row = control.create_instance(d.store, tenant, AgentType.COMPLIANCE, AgentStatus.ACTIVE)
    d.set_instance(row.instance_id, tick_in_progress=True, tick_started_at=datetime.now(UTC))
    return tenant, row.instance_id


@TEMPORAL_SIDE
async def test_a_schedule_is_created_listed_and_deleted(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    created = await _create(d, tenant, soa, **WEEKDAYS_PARIS, note="the morning review")
    assert created["scheduleId"].startswith("sch_")
    assert (created["overlap"], created["catchupWindowSeconds"], created["firings"]) == (
        "skip",
        3600,
        0,
    )
    # 09:00 in Paris is 08:00 UTC in winter, a weekday.
    upcoming = [datetime.fromisoformat(t) for t in created["nextFireTimes"]]
    assert upcoming and all((t.hour, t.minute) == (8, 0) and t.weekday() < 5 for t in upcoming)
    temporal_id = schedules.temporal_schedule_id(tenant, created["scheduleId"])
    described = await (await _client(d)).get_schedule_handle(temporal_id).describe()
    assert described.schedule.policy.overlap is ScheduleOverlapPolicy.SKIP
    assert described.schedule.policy.catchup_window == timedelta(hours=1)
    assert described.schedule.spec.time_zone_name == "Europe/Paris"

    listed = (await d.client.get(f"{d.base(tenant)}/agents/{soa}/schedules")).json()
    assert [s["scheduleId"] for s in listed["schedules"]] == [created["scheduleId"]]
    tenant_wide = (await d.client.get(f"{d.base(tenant)}/schedules")).json()
    assert [s["scheduleId"] for s in tenant_wide["schedules"]] == [created["scheduleId"]]

    path = f"{d.base(tenant)}/agents/{soa}/schedules/{created['scheduleId']}"
    assert (await d.client.delete(path)).status_code == 204
    assert (await d.client.delete(path)).status_code == 404
    assert (await d.client.get(f"{d.base(tenant)}/schedules")).json() == {"schedules": []}
    with pytest.raises(RPCError) as gone:
        await (await _client(d)).get_schedule_handle(temporal_id).describe()
    assert gone.value.status == RPCStatusCode.NOT_FOUND


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"cron": "every morning"}, "invalid_schedule"),
    ({"cron": "61 * * * *"}, "invalid_schedule"),
    ({"cron": "0 9 * * *", "timeZone": "Mars/Olympus"}, "invalid_schedule"),
    ({"cron": "0 9 * * *", "overlap": "allowAll"}, "invalid_request"),
    ({"cron": "0 9 * * *", "catchupWindowSeconds": 5}, "invalid_request"),
    ({"cron": "0 9 * * *", "catchupWindowSeconds": "60"}, "invalid_request"),
    ({"cron": "0 9 * * *", "jitter": 5}, "invalid_request"),
    ({"timeZone": "UTC"}, "invalid_request"),
    ({"cron": "@every 10s"}, "invalid_schedule"),  # more often than the 60 s allowed
    ({"cron": "CRON_TZ=Europe/Paris 0 9 * * *"}, "invalid_schedule"),
    ({"cron": "0 9 * * *", "timeZone": "Local"}, "invalid_schedule"),
    ({"cron": "0 9 * * *", "note": "a\u0000b"}, "invalid_request"),
]


@TEMPORAL_SIDE
async def test_a_schedule_temporal_or_the_body_refuses_is_not_kept(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    for body, code in REFUSED:
        response = await d.client.post(f"{d.base(tenant)}/agents/{soa}/schedules", json=body)
        assert (response.status_code, response.json()["code"]) == (400, code), body
    assert (await d.client.get(f"{d.base(tenant)}/schedules")).json() == {"schedules": []}
    with d.store.session() as db:
        assert db.exec(select(AgentSchedule)).all() == []


@TEMPORAL_SIDE
async def test_a_schedule_of_an_unknown_agent_or_without_the_token_is_refused(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    await d.soa(tenant)
    missing = await d.client.post(
        f"{d.base(tenant)}/agents/nobody/schedules", json={"cron": "@daily"}
    )
    assert (missing.status_code, missing.json()["code"]) == (404, "agent_not_found")
    anonymous = await d.client.post(
        f"{d.base(tenant)}/agents/nobody/schedules",
        json={"cron": "@daily"},
        headers={"Authorization": ""},
    )
    assert anonymous.status_code == 401


@TEMPORAL_SIDE
async def test_a_firing_enqueues_one_tick_that_the_agent_takes(agents: AgentsFactory) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    await d.wait_until(lambda: d.turns(soa), "the greeting turn")
    created = await _create(d, tenant, soa, cron="0 3 * * *", note="the nightly digest")
    handle = (await _client(d)).get_schedule_handle(
        schedules.temporal_schedule_id(tenant, created["scheduleId"])
    )
    await handle.trigger()
    [event] = await d.wait_until(lambda: _schedule_events(d, soa), "the firing's tick")
    assert event.event_kind == "AgentTick"
    assert event.payload["schedule"]["scheduleId"] == created["scheduleId"]
    assert event.payload["schedule"]["note"] == "the nightly digest"
    when = event.payload["schedule"]["scheduledTime"]
    assert event.event_id.startswith(f"schedule/{created['scheduleId']}/{when}/")
    # The agent's workflow was woken and took it: a turn of the scheduled tick.
    await d.wait_until(
        lambda: _schedule_events(d, soa)[0].consumed_at is not None, "the scheduled tick"
    )
    listed = (await d.client.get(f"{d.base(tenant)}/agents/{soa}/schedules")).json()
    [view] = listed["schedules"]
    assert view["firings"] == 1 and view["lastFiredAt"] is not None


async def _eventually(
    check: Callable[[], Awaitable[bool]], what: str, seen: Callable[[], object] = lambda: None
) -> None:
    """`check` true within a bound (a bound on a loaded machine's scheduler, not a timing
    claim); else an error naming `what` and the last state `seen` returns."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{what} never happened; last seen: {seen()}")


async def _settled(
    handle: ScheduleHandle, triggers: int, *, slot_free: bool = True
) -> ScheduleDescription:
    """The schedule once every trigger is accounted for (started or skipped), none held in
    Temporal's buffer (it may hold a trigger that arrives while a firing runs and decide
    on it only when that firing ends) and, with `slot_free`, no firing running as Temporal
    sees it. Temporal learns that a firing ended from a watcher it runs only while a
    trigger is buffered, else from the refresh a describe asks for, a chain of the
    server's own tasks that took over a minute on a loaded 2-core machine: a test that
    sends no further trigger does not wait for it."""
    described: list[ScheduleDescription] = []

    async def done() -> bool:
        described[:] = [await handle.describe()]
        info = described[0].info
        accounted = info.num_actions + info.num_actions_skipped_overlap
        buffered = described[0].raw_description.info.buffer_size
        return accounted == triggers and not buffered and not (slot_free and info.running_actions)

    def seen() -> object:
        if not described:
            return None
        info = described[0].info
        return {
            "actions": info.num_actions,
            "skipped": info.num_actions_skipped_overlap,
            "buffered": described[0].raw_description.info.buffer_size,
            "running": len(info.running_actions),
        }

    what = "none running" if slot_free else "none buffered"
    await _eventually(done, f"all {triggers} firings started or skipped, {what}", seen)
    return described[0]


async def _buffered(handle: ScheduleHandle, count: int) -> None:
    """Until Temporal's scheduler holds `count` firings in its buffer."""

    async def done() -> bool:
        return (await handle.describe()).raw_description.info.buffer_size == count

    await _eventually(done, f"{count} firing(s) buffered")


@TEMPORAL_SIDE
async def test_overlap_skip_drops_a_firing_while_the_previous_tick_is_pending(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant, agent = await _idle_agent(d)
    created = await _create(d, tenant, agent, cron="0 3 * * *", overlap="skip")
    handle = (await _client(d)).get_schedule_handle(
        schedules.temporal_schedule_id(tenant, created["scheduleId"])
    )
    await handle.trigger()
    [first] = await d.wait_until(lambda: _schedule_events(d, agent), "the first tick")
    await handle.trigger()
    # Each trigger taken before the next: two that reach Temporal's scheduler at one
    # instant are one firing at that instant (as a cron's would be), not two.
    await _settled(handle, 2, slot_free=False)
    await handle.trigger()
    # Its tick done, the firing ends: the two that came while it ran were skipped.
    _consume(d, first.event_id)
    described = await _settled(handle, 3)
    assert described.info.num_actions_skipped_overlap == 2
    assert len(_schedule_events(d, agent)) == 1
    # The slot is free: the next firing enqueues.
    await handle.trigger()
    await d.wait_until(lambda: len(_schedule_events(d, agent)) == 2, "the next firing's tick")


@TEMPORAL_SIDE
async def test_overlap_buffer_one_runs_one_firing_after_the_pending_tick(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant, agent = await _idle_agent(d)
    created = await _create(d, tenant, agent, cron="0 3 * * *", overlap="bufferOne")
    handle = (await _client(d)).get_schedule_handle(
        schedules.temporal_schedule_id(tenant, created["scheduleId"])
    )
    assert (await handle.describe()).schedule.policy.overlap is ScheduleOverlapPolicy.BUFFER_ONE
    await handle.trigger()
    [first] = await d.wait_until(lambda: _schedule_events(d, agent), "the first tick")
    await handle.trigger()  # buffered
    # Taken before the next (two triggers at one instant are one firing at that instant).
    await _buffered(handle, 1)
    await handle.trigger()  # dropped: one is buffered already
    assert len(_schedule_events(d, agent)) == 1
    _consume(d, first.event_id)
    events = await d.wait_until(
        lambda: (e := _schedule_events(d, agent)) and len(e) == 2 and e, "the buffered firing"
    )
    _consume(d, events[1].event_id)
    described = await _settled(handle, 3, slot_free=False)
    assert described.info.num_actions == 2 and described.info.num_actions_skipped_overlap == 1
    assert len(_schedule_events(d, agent)) == 2


@TEMPORAL_SIDE
async def test_a_paused_agent_keeps_one_pending_firing_per_schedule(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant, agent = await _idle_agent(d)
    d.set_instance(agent, status=AgentStatus.PAUSED.value)
    created = await _create(d, tenant, agent, cron="0 3 * * *")
    handle = (await _client(d)).get_schedule_handle(
        schedules.temporal_schedule_id(tenant, created["scheduleId"])
    )
    for _ in range(3):
        await handle.trigger()

        async def done() -> bool:
            return not (await handle.describe()).info.running_actions

        await d.wait_until(lambda: _schedule_events(d, agent), "a tick")
        await _eventually(done, "the firing to end (a paused agent holds no slot)")
    info = (await handle.describe()).info
    assert len(info.recent_actions) == 3 and info.num_actions_skipped_overlap == 0
    assert len(_schedule_events(d, agent)) == 1  # coalesced onto the one still queued


async def test_the_sweeper_recreates_a_lost_temporal_schedule_and_finishes_a_deletion(
    agents: AgentsFactory,
) -> None:
    d = await agents()
    tenant = d.tenant()
    soa = await d.soa(tenant)
    kept = await _create(d, tenant, soa, cron="0 3 * * *")
    going = await _create(d, tenant, soa, cron="0 4 * * *")
    client = await _client(d)
    # Temporal lost the first (its database wiped); the API died mid-deletion of the second.
    kept_id = schedules.temporal_schedule_id(tenant, kept["scheduleId"])
    going_id = schedules.temporal_schedule_id(tenant, going["scheduleId"])
    await client.get_schedule_handle(kept_id).delete()
    schedules.mark_deleted(d.store, going["scheduleId"], datetime.now(UTC))
    assert await temporal_schedules.reconcile(client, d.settings, d.store) >= 2
    restored = await client.get_schedule_handle(kept_id).describe()
    assert restored.schedule.spec.calendars  # 0 3 * * *, as Temporal reads it
    with pytest.raises(RPCError):
        await client.get_schedule_handle(going_id).describe()
    # A Temporal Schedule of ours with no row (a create whose answer was lost): deleted.
    orphan_row = AgentSchedule(**{**kept_row(d, kept["scheduleId"]), "schedule_id": "sch_orphan"})
    orphan_id = schedules.temporal_schedule_id(tenant, "sch_orphan")
    await client.create_schedule(orphan_id, temporal_schedules.temporal_schedule(orphan_row, "q"))

    async def listed() -> bool:
        # The orphan is found by a listing, which reads Temporal's visibility store: a
        # schedule shows there some moments after its create (the sweeper's next pass
        # would find it; this test reconciles once it is there).
        return any([s.id == orphan_id async for s in await client.list_schedules()])

    await _eventually(listed, "the orphan schedule to be listed")
    assert await temporal_schedules.reconcile(client, d.settings, d.store) >= 1
    with pytest.raises(RPCError):
        await client.get_schedule_handle(orphan_id).describe()
    with d.store.session() as db:
        left = [r.schedule_id for r in db.exec(select(AgentSchedule)).all()]
    assert left == [kept["scheduleId"]]
    # A deleted schedule's firing enqueues nothing, even if its Temporal Schedule fired.
    request = schedules.FireRequest(
        schedule_id=going["scheduleId"], scheduled_time=datetime.now(UTC), firing_id="run-1"
    )
    assert (
        schedules.fire(d.store, request, datetime.now(UTC)).outcome is schedules.FireOutcome.DELETED
    )


async def test_a_retried_firing_enqueues_once(agents: AgentsFactory) -> None:
    d = await agents()
    tenant, agent = await _idle_agent(d)
    created = await _create(d, tenant, agent, cron="0 3 * * *")
    when = datetime(2026, 12, 3, 3, 0, tzinfo=UTC)
    request = schedules.FireRequest(
        schedule_id=created["scheduleId"], scheduled_time=when, firing_id="run-1"
    )
    first = schedules.fire(d.store, request, datetime.now(UTC))
    again = schedules.fire(d.store, request, datetime.now(UTC))
    assert (first.outcome, again.outcome) == (
        schedules.FireOutcome.ENQUEUED,
        schedules.FireOutcome.DUPLICATE,
    )
    assert (
        first.event_id
        == again.event_id
        == f"schedule/{created['scheduleId']}/2026-12-03T03:00:00.000Z/run-1"
    )
    later = schedules.FireRequest(
        schedule_id=created["scheduleId"],
        scheduled_time=when + timedelta(days=1),
        firing_id="run-2",
    )
    coalesced = schedules.fire(d.store, later, datetime.now(UTC))
    assert (coalesced.outcome, coalesced.event_id) == (
        schedules.FireOutcome.COALESCED,
        first.event_id,
    )
    assert len(_schedule_events(d, agent)) == 1
    with d.store.session() as db:
        row = db.get(AgentSchedule, created["scheduleId"])
        assert row is not None and row.firings == 1
    # A reset (a new generation) leaves that tick never due: it holds nothing, and the
    # next firing enqueues one of the new generation.
    d.set_instance(agent, generation=d.instance(agent).generation + 1)
    after_reset = schedules.FireRequest(
        schedule_id=created["scheduleId"],
        scheduled_time=when + timedelta(days=2),
        firing_id="run-3",
    )
    assert schedules.fire(d.store, after_reset, datetime.now(UTC)).outcome is (
        schedules.FireOutcome.ENQUEUED
    )
    d.set_instance(agent, status=AgentStatus.CLOSED.value)
    assert schedules.fire(d.store, later, datetime.now(UTC)).outcome is schedules.FireOutcome.CLOSED
