"""The API's side of agent schedules (runtime/standing_agents/schedules.py): their
Temporal Schedules, created, described, deleted, and reconciled with the rows.

The row is written first and its Temporal Schedule second; a deletion marks the row,
deletes the Temporal Schedule, then the row. `reconcile` (the sweeper's, at start-up
and every few minutes) finishes whatever a crash or an outage left between the two.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from datetime import UTC, datetime, timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.common import TypedSearchAttributes
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from runtime.search_attributes import starting
from runtime.settings import Settings
from runtime.standing_agents import schedules
from runtime.standing_agents.models import AgentSchedule
from runtime.store.engine import Store

log = logging.getLogger(__name__)

RPC_TIMEOUT = timedelta(seconds=10)
# The AgentrtKind of each firing's workflow (an agent's own is "agent").
SCHEDULE_KIND = "agent_schedule"
OVERLAP = {
    schedules.Overlap.SKIP: ScheduleOverlapPolicy.SKIP,
    schedules.Overlap.BUFFER_ONE: ScheduleOverlapPolicy.BUFFER_ONE,
}
# A firing's workflow ends by itself within MAX_WAIT; this bounds one whose activities
# keep failing (it times out, visible in the Web UI, and frees the overlap slot).
FIRING_TIMEOUT = schedules.MAX_WAIT + timedelta(minutes=10)
INVALID_SPEC = "Invalid schedule spec: "


def temporal_schedule(row: AgentSchedule, task_queue: str) -> Schedule:
    """The Temporal Schedule of `row`: its cron in its time zone, its explicit policies."""
    return Schedule(
        action=ScheduleActionStartWorkflow(
            schedules.WORKFLOW_NAME,
            schedules.ScheduleFireInput(tenant=row.tenant, schedule_id=row.schedule_id),
            id=schedules.fire_workflow_id(row.tenant, row.schedule_id),
            task_queue=task_queue,
            execution_timeout=FIRING_TIMEOUT,
            memo={"tenant": row.tenant, "instanceId": row.instance_id},
            typed_search_attributes=TypedSearchAttributes(starting(SCHEDULE_KIND, row.tenant)),
        ),
        spec=ScheduleSpec(cron_expressions=[row.cron], time_zone_name=row.time_zone),
        policy=SchedulePolicy(
            overlap=OVERLAP[schedules.Overlap(row.overlap)],
            catchup_window=timedelta(seconds=row.catchup_window_s),
        ),
        state=ScheduleState(note=f"standing agent {row.instance_id} of {row.tenant}"),
    )


async def create_temporal(client: Client, settings: Settings, row: AgentSchedule) -> None:
    """Create the row's Temporal Schedule (one that exists already is left as it is).

    Raises:
        ApplicationError(InvalidSchedule): Temporal refused the cron or the time zone.
        RPCError: Temporal did not answer (DEADLINE_EXCEEDED after RPC_TIMEOUT).
    """
    try:
        await client.create_schedule(
            schedules.temporal_schedule_id(row.tenant, row.schedule_id),
            temporal_schedule(row, settings.task_queue),
            rpc_timeout=RPC_TIMEOUT,
        )
    except ScheduleAlreadyRunningError:
        return
    except RPCError as err:
        # Only the spec's refusal is the client's; any other (a search attribute not
        # registered on this server, say) is the deployment's, and stays an RPCError.
        if err.status == RPCStatusCode.INVALID_ARGUMENT and err.message.startswith(INVALID_SPEC):
            reason = err.message.removeprefix(INVALID_SPEC)
            raise schedules.InvalidSchedule(reason=reason).application_error() from None
        raise


async def delete_temporal(client: Client, row: AgentSchedule) -> None:
    """Delete the row's Temporal Schedule; one already gone is fine. Raises RPCError."""
    handle = client.get_schedule_handle(schedules.temporal_schedule_id(row.tenant, row.schedule_id))
    try:
        await handle.delete(rpc_timeout=RPC_TIMEOUT)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise


async def withdraw(client: Client | None, store: Store, row: AgentSchedule) -> None:
    """Delete a schedule (or undo a create): the row marked first, so no firing enqueues
    anything from then on; then its Temporal Schedule and the row. Whatever does not
    happen now (Temporal down: `client` None, or its call failing) the sweeper finishes."""
    await asyncio.to_thread(schedules.mark_deleted, store, row.schedule_id, datetime.now(UTC))
    if client is None:
        return
    try:
        await delete_temporal(client, row)
    except Exception:
        log.info("schedule %s marked deleted; the sweeper deletes it", row.schedule_id)
        return
    await asyncio.to_thread(schedules.remove_row, store, row.schedule_id)


async def next_fire_times(client: Client, row: AgentSchedule) -> list[datetime] | None:
    """The next few times Temporal will fire the schedule; None when it cannot say."""
    handle = client.get_schedule_handle(schedules.temporal_schedule_id(row.tenant, row.schedule_id))
    try:
        description = await handle.describe(rpc_timeout=RPC_TIMEOUT)
    except RPCError:  # its rpc_timeout included
        return None
    return list(description.info.next_action_times[:5])


def closer_than(times: list[datetime], minimum_s: int) -> float | None:
    """The smallest gap between consecutive firing times when it is below `minimum_s`."""
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    small = [gap for gap in gaps if gap < minimum_s]
    return min(small) if small else None


async def reconcile(
    client: Client, settings: Settings, store: Store, *, orphans: bool = True
) -> int:
    """Make Temporal match the rows; returns how many it repaired.

    - A marked row's deletion is finished (its Temporal Schedule, then the row).
    - A live row whose Temporal Schedule is missing (a wiped Temporal database, a crash
      between the row and the create) gets it, if the row is still live when read again
      (a deletion may have run meanwhile); one whose spec Temporal refuses is a row no
      route accepted (the process died before Temporal's check): removed.
    - With `orphans`, a Temporal Schedule of ours with no row at all (none of agentrt's
      paths leaves one; a hand-made one, a row deleted by hand) is deleted: a listing of
      every schedule of the namespace, so the sweeper does it on its periodic passes,
      not at each start. Temporal is listed before the rows are read, and a route writes
      its row before its Temporal Schedule, so one being created is never taken for it.
    """
    repaired = 0
    ours = (
        [
            listed.id
            async for listed in await client.list_schedules()
            if listed.id.startswith(schedules.TEMPORAL_PREFIX)
        ]
        if orphans
        else []
    )
    rows = await asyncio.to_thread(schedules.all_rows, store)
    known = {schedules.temporal_schedule_id(r.tenant, r.schedule_id) for r in rows}
    for orphan in set(ours) - known:
        try:
            await client.get_schedule_handle(orphan).delete(rpc_timeout=RPC_TIMEOUT)
            repaired += 1
        except Exception:
            log.warning("could not delete the orphan schedule %s", orphan, exc_info=True)
    for row in rows:
        try:
            repaired += await _reconcile_row(client, settings, store, row)
        except Exception:
            log.warning("could not reconcile schedule %s", row.schedule_id, exc_info=True)
    return repaired


async def _reconcile_row(
    client: Client, settings: Settings, store: Store, row: AgentSchedule
) -> int:
    if row.deleted_at is not None:
        await delete_temporal(client, row)
        await asyncio.to_thread(schedules.remove_row, store, row.schedule_id)
        return 1
    handle = client.get_schedule_handle(schedules.temporal_schedule_id(row.tenant, row.schedule_id))
    try:
        await handle.describe(rpc_timeout=RPC_TIMEOUT)
        return 0
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
    live = await asyncio.to_thread(schedules.live_row, store, row.schedule_id)
    if live is None:
        return 0  # deleted since the rows were read
    try:
        await create_temporal(client, settings, live)
    except ApplicationError as err:
        log.warning("schedule %s is not valid: removed (%s)", row.schedule_id, err)
        await asyncio.to_thread(schedules.remove_row, store, row.schedule_id)
    return 1
