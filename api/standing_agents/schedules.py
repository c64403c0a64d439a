"""Cron schedules that trigger a standing agent (issue 21, item 11).

Strict, bearer: `POST`/`GET .../agents/{id}/schedules`,
`DELETE .../agents/{id}/schedules/{scheduleId}`, `GET /api/v1/tenants/{tenant}/schedules`.
Each is a Temporal Schedule (runtime/standing_agents/schedules.py,
api/standing_agents/temporal_schedules.py):
a create needs Temporal (503 `temporal_unavailable` otherwise, and nothing is kept),
and Temporal checks the cron and the time zone (400 `invalid_schedule`).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from fastapi import APIRouter, Depends, Path, Response
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from api.deps import ConnectorDep, SettingsDep, StoreDep
from api.errors import rpc_error, temporal_unavailable
from api.input_bounds import StrictJsonRoute
from api.openapi import errors
from api.security import require_configured_token
from api.standing_agents import temporal_schedules
from api.standing_agents.deps import EnabledTenant, InstancePath
from api.standing_agents.models import ScheduleBody, ScheduleList, ScheduleView
from api.temporal import is_unavailable
from runtime.standing_agents import control, schedules
from runtime.standing_agents.models import AgentSchedule
from runtime.timestamps import iso_ms

router = APIRouter(prefix="/api/v1/tenants/{tenant}", route_class=StrictJsonRoute)
MUTATION = [Depends(require_configured_token)]
SCHEDULE_ID = r"^sch_[0-9a-f]{24}$"
DESCRIBES_AT_ONCE = 8


async def _view(client: Client | None, row: AgentSchedule) -> ScheduleView:
    upcoming = await temporal_schedules.next_fire_times(client, row) if client else None
    return ScheduleView(
        schedule_id=row.schedule_id,
        instance_id=row.instance_id,
        cron=row.cron,
        time_zone=row.time_zone,
        overlap=row.overlap,
        catchup_window_seconds=row.catchup_window_s,
        note=row.note,
        created_at=iso_ms(row.created_at),
        firings=row.firings,
        last_fired_at=iso_ms(row.last_fired_at) if row.last_fired_at else None,
        next_fire_times=[iso_ms(t) for t in upcoming] if upcoming is not None else None,
    )


async def _views(connector: ConnectorDep, rows: list[AgentSchedule]) -> ScheduleList:
    client: Client | None = None
    if rows:
        try:
            client = await connector.get()
        except Exception:
            client = None  # a listing still answers from the store
    bound = asyncio.Semaphore(DESCRIBES_AT_ONCE)

    async def view(row: AgentSchedule) -> ScheduleView:
        async with bound:
            return await _view(client, row)

    return ScheduleList(schedules=list(await asyncio.gather(*(view(r) for r in rows))))


@router.post(
    "/agents/{instance_id}/schedules",
    status_code=201,
    dependencies=MUTATION,
    responses=errors(400, 401, 403, 404, 409, 503),
)
async def create_schedule(
    body: ScheduleBody,
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    settings: SettingsDep,
    connector: ConnectorDep,
) -> ScheduleView:
    """A cron schedule in a time zone: each firing enqueues one `AgentTick` whose payload
    names the schedule and the scheduled time."""
    instance = await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    cron = body.cron.strip()
    if "TZ=" in cron.upper() or body.time_zone == "Local":
        reason = "give the time zone in timeZone (an IANA name), not in the cron or as Local"
        raise schedules.InvalidSchedule(reason=reason).application_error()
    client = await connector.get()
    spec = schedules.NewSchedule(
        cron=cron,
        time_zone=body.time_zone,
        overlap=schedules.Overlap(body.overlap),
        catchup_window_s=body.catchup_window_seconds,
        note=body.note,
    )
    row = await asyncio.to_thread(schedules.create_row, store, instance, spec, datetime.now(UTC))
    try:
        await temporal_schedules.create_temporal(client, settings, row)
    except ApplicationError:
        # Temporal refused the spec: it created nothing.
        await asyncio.to_thread(schedules.remove_row, store, row.schedule_id)
        raise
    except RPCError as err:
        # Temporal may have created it all the same (an answer lost): the row is marked
        # deleted, so no firing enqueues anything, and the sweeper deletes whatever exists.
        await asyncio.to_thread(schedules.mark_deleted, store, row.schedule_id, datetime.now(UTC))
        if is_unavailable(err):
            connector.mark_down()
        if err.status == RPCStatusCode.DEADLINE_EXCEEDED:  # its rpc_timeout
            raise temporal_unavailable() from None
        raise rpc_error(err) from None
    view = await _view(client, row)
    too_close = temporal_schedules.closer_than(
        view_times(view), settings.agent_schedule_min_interval_s
    )
    if too_close:
        await temporal_schedules.withdraw(client, store, row)
        reason = (
            f"it fires {too_close:g} s apart; at least "
            f"{settings.agent_schedule_min_interval_s} s (AGENTRT_AGENT_SCHEDULE_MIN_INTERVAL_S)"
        )
        raise schedules.InvalidSchedule(reason=reason).application_error()
    return view


def view_times(view: ScheduleView) -> list[datetime]:
    return [datetime.fromisoformat(t) for t in view.next_fire_times or []]


@router.get("/agents/{instance_id}/schedules", responses=errors(400, 403, 404))
async def list_agent_schedules(
    tenant: EnabledTenant, instance_id: InstancePath, store: StoreDep, connector: ConnectorDep
) -> ScheduleList:
    await asyncio.to_thread(control.get_instance, store, tenant, instance_id)
    rows = await asyncio.to_thread(schedules.list_for, store, tenant, instance_id)
    return await _views(connector, rows)


@router.get("/schedules", responses=errors(400, 403))
async def list_tenant_schedules(
    tenant: EnabledTenant, store: StoreDep, connector: ConnectorDep
) -> ScheduleList:
    rows = await asyncio.to_thread(schedules.list_for, store, tenant)
    return await _views(connector, rows)


@router.delete(
    "/agents/{instance_id}/schedules/{schedule_id}",
    status_code=204,
    dependencies=MUTATION,
    responses=errors(400, 401, 403, 404),
)
async def delete_schedule(
    tenant: EnabledTenant,
    instance_id: InstancePath,
    store: StoreDep,
    connector: ConnectorDep,
    schedule_id: str = Path(pattern=SCHEDULE_ID),
) -> Response:
    """Deleted at once for the agent (no firing enqueues anything after this answer);
    its Temporal Schedule goes now, or at the sweeper's next pass if Temporal is down."""
    row = await asyncio.to_thread(schedules.get, store, tenant, instance_id, schedule_id)
    client: Client | None
    try:
        client = await connector.get()
    except Exception:
        client = None  # Temporal down: marked now, the sweeper finishes it
    await temporal_schedules.withdraw(client, store, row)
    return Response(status_code=204)
