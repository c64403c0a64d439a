"""The API's side of agent schedules (runtime/standing_agents/schedules.py): their
Temporal Schedules, created, described, deleted, and reconciled with the rows.

The row is written first and its Temporal Schedule second; a deletion marks the row,
deletes the Temporal Schedule, then the row. `reconcile` (the sweeper's, at start-up
and every few minutes) finishes whatever a crash or an outage left between the two.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from runtime.settings import Settings
from runtime.standing_agents import schedules
from runtime.standing_agents.models import AgentSchedule
from runtime.store.engine import Store
from workflows.search_attributes import KIND, TENANT

log = logging.getLogger(__name__)

RPC_TIMEOUT = 10.0
# The AgentrtKind of each firing's workflow (an agent's own is "agent").
SCHEDULE_KIND = "agent_schedule"


def temporal_schedule(row: AgentSchedule, task_queue: str) -> Schedule:
    """The Temporal Schedule of `row`: its cron in its time zone, its explicit policies."""
    return Schedule(
        action=ScheduleActionStartWorkflow(
            schedules.WORKFLOW_NAME,
            schedules.ScheduleFireInput(tenant=row.tenant, schedule_id=row.schedule_id),
            id=schedules.fire_workflow_id(row.tenant, row.schedule_id),
            task_queue=task_queue,
            memo={"tenant": row.tenant, "instanceId": row.instance_id},
            typed_search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(KIND, SCHEDULE_KIND),
                    SearchAttributePair(TENANT, row.tenant),
                ]
            ),
        ),
        spec=ScheduleSpec(cron_expressions=[row.cron], time_zone_name=row.time_zone),
        policy=SchedulePolicy(
            overlap=schedules.Overlap(row.overlap).temporal,
            catchup_window=timedelta(seconds=row.catchup_window_s),
        ),
        state=ScheduleState(note=f"standing agent {row.instance_id} of {row.tenant}"),
    )


async def create_temporal(client: Client, settings: Settings, row: AgentSchedule) -> None:
    """Create the row's Temporal Schedule (one that exists already is left as it is).

    Raises:
        ApplicationError(InvalidSchedule): Temporal refused the cron or the time zone.
        RPCError: Temporal did not answer.
    """
    try:
        await asyncio.wait_for(
            client.create_schedule(
                schedules.temporal_schedule_id(row.tenant, row.schedule_id),
                temporal_schedule(row, settings.task_queue),
            ),
            RPC_TIMEOUT,
        )
    except ScheduleAlreadyRunningError:
        return
    except RPCError as err:
        if err.status == RPCStatusCode.INVALID_ARGUMENT:
            reason = err.message.removeprefix("Invalid schedule spec: ")
            raise schedules.InvalidSchedule(reason=reason).application_error() from None
        raise


async def delete_temporal(client: Client, row: AgentSchedule) -> None:
    """Delete the row's Temporal Schedule; one already gone is fine. Raises RPCError."""
    handle = client.get_schedule_handle(schedules.temporal_schedule_id(row.tenant, row.schedule_id))
    try:
        await asyncio.wait_for(handle.delete(), RPC_TIMEOUT)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise


async def next_fire_times(client: Client, row: AgentSchedule) -> list[datetime] | None:
    """The next few times Temporal will fire the schedule; None when it cannot say."""
    handle = client.get_schedule_handle(schedules.temporal_schedule_id(row.tenant, row.schedule_id))
    try:
        description = await asyncio.wait_for(handle.describe(), RPC_TIMEOUT)
    except (RPCError, TimeoutError):
        return None
    return list(description.info.next_action_times[:3])


async def reconcile(client: Client, settings: Settings, store: Store) -> int:
    """Make Temporal match the rows: a live row's missing Temporal Schedule is created
    (one Temporal refuses is a row no route accepted: removed), a marked row's deletion
    is finished. Returns how many it repaired."""
    repaired = 0
    for row in await asyncio.to_thread(schedules.all_rows, store):
        try:
            if row.deleted_at is not None:
                await delete_temporal(client, row)
                await asyncio.to_thread(schedules.remove_row, store, row.schedule_id)
                repaired += 1
                continue
            handle = client.get_schedule_handle(
                schedules.temporal_schedule_id(row.tenant, row.schedule_id)
            )
            try:
                await asyncio.wait_for(handle.describe(), RPC_TIMEOUT)
                continue
            except RPCError as err:
                if err.status != RPCStatusCode.NOT_FOUND:
                    raise
            try:
                await create_temporal(client, settings, row)
            except ApplicationError as err:
                log.warning("schedule %s is not valid: removed (%s)", row.schedule_id, err)
                await asyncio.to_thread(schedules.remove_row, store, row.schedule_id)
            repaired += 1
        except Exception:
            log.warning("could not reconcile schedule %s", row.schedule_id, exc_info=True)
    return repaired
