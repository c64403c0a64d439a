"""The API's side of `StandingAgentWorkflow`: wake an agent (starting it if it is not
running), and the sweeper that repairs a lost wake-up.

Routes write the store first and wake the workflow second. A wake-up is one
signal-with-start of `wake` (no payload): it signals a running workflow, or starts it
and signals it, so an instance whose workflow is gone is brought back by the same
call. When Temporal does not answer, the event waits in `agent_event_queue`; the
`Sweeper` starts, at API start-up, the workflow of any open instance whose workflow is
not running, and every few seconds retries the failed wake-ups and wakes instances
with due events left unconsumed for a while. Nothing is lost between a store write
and a signal.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import col, select
from temporalio.client import Client
from temporalio.common import TypedSearchAttributes

from api.deps import TENANT_PATTERN, ConnectorDep, SettingsDep
from api.standing_agents import temporal_schedules
from api.temporal import TemporalConnector, is_unavailable
from runtime.search_attributes import KIND, TENANT, starting
from runtime.settings import Settings
from runtime.standing_agents import budget_pause, control, ops_watch
from runtime.standing_agents.contracts import (
    STANDING_AGENTS_FEATURE,
    AgentStatus,
    AgentType,
    agent_workflow_id,
)
from runtime.standing_agents.models import AgentEventRow, AgentInstance
from runtime.standing_agents.workflow_contracts import (
    WAKE_SIGNAL,
    WORKFLOW_NAME,
    StandingAgentInput,
)
from runtime.store.engine import Store
from runtime.store.journal import EventJournal
from runtime.store.tenants import TenantFeature, enabled_tenants

log = logging.getLogger(__name__)

AGENT_KIND = "agent"
WAKE_TIMEOUT = 10.0

SWEEP_INTERVAL = 5.0
# A due event older than this was not taken by a wake-up: wake the agent again.
STALE_EVENT_AGE = timedelta(seconds=5)
# An agent the sweeper signalled is not signalled again for a while (a storm, a worker
# outage: its events wait either way, and each signal adds to its history).
REWAKE_AFTER = timedelta(seconds=60)
# Backoff of the retries of a failed wake-up.
RETRY_BASE = timedelta(seconds=5)
RETRY_MAX = timedelta(minutes=5)
# The ops watch (an incident wakes the SOA): how often, the visibility window it counts
# failed and timed-out workflows in, and its bound on each visibility call.
OPS_WATCH_INTERVAL = timedelta(seconds=15)
OPS_VISIBILITY_WINDOW = timedelta(hours=24)
OPS_RPC = timedelta(seconds=10)
# Schedules (api/standing_agents/temporal_schedules.py): their rows and Temporal Schedules
# made to agree, at start-up and then this often.
SCHEDULES_INTERVAL = timedelta(minutes=5)
TENANT_NAME = re.compile(TENANT_PATTERN)
# Instances younger than this are being started by their own route.
YOUNG_INSTANCE = timedelta(seconds=10)


def workflow_input(instance: AgentInstance) -> StandingAgentInput:
    return StandingAgentInput(
        tenant=instance.tenant,
        instance_id=instance.instance_id,
        agent_type=AgentType(instance.agent_type),
    )


async def wake(client: Client, settings: Settings, instance: AgentInstance) -> None:
    """Signal `wake`, starting the workflow when it is not running (signal-with-start).

    Raises the Temporal error (RPCError, TimeoutError) when it does not answer.
    """
    await asyncio.wait_for(
        client.start_workflow(
            WORKFLOW_NAME,
            workflow_input(instance),
            id=agent_workflow_id(instance.tenant, instance.instance_id),
            task_queue=settings.task_queue,
            start_signal=WAKE_SIGNAL,
            search_attributes=TypedSearchAttributes(
                starting(
                    AGENT_KIND,
                    instance.tenant,
                    status=instance.status,
                    mode=instance.active_mode or "",
                )
            ),
            memo={"agentType": instance.agent_type, "tenant": instance.tenant},
        ),
        WAKE_TIMEOUT,
    )


async def wake_quietly(
    connector: TemporalConnector,
    settings: Settings,
    instance: AgentInstance,
    retries: WakeRetries | None = None,
) -> bool:
    """Wake after a committed store write. Temporal being down is no error for the route
    (its write is durable): the failure is logged and the instance is put in `retries`,
    which the sweeper wakes with backoff."""
    try:
        await wake(await connector.get(), settings, instance)
        if retries is not None:
            retries.succeeded(instance.instance_id)
        return True
    except Exception as err:
        if is_unavailable(err):
            connector.mark_down()  # the next route gets a fast answer until it is back
        if retries is not None:
            retries.failed(instance.instance_id, datetime.now(UTC))
        log.warning(
            "waking agent %s failed; the sweeper will retry", instance.instance_id, exc_info=True
        )
        return False


@dataclass
class _Retry:
    attempts: int
    due: datetime


class WakeRetries:
    """Instances whose wake-up failed, each retried with exponential backoff (in memory:
    after an API restart, the start-up repair finds them instead)."""

    def __init__(self) -> None:
        self._pending: dict[str, _Retry] = {}

    def failed(self, instance_id: str, now: datetime) -> None:
        attempts = self._pending[instance_id].attempts + 1 if instance_id in self._pending else 1
        delay = min(RETRY_BASE * 2 ** (attempts - 1), RETRY_MAX)
        self._pending[instance_id] = _Retry(attempts, now + delay)

    def succeeded(self, instance_id: str) -> None:
        self._pending.pop(instance_id, None)

    def due(self, now: datetime) -> list[str]:
        return [key for key, retry in self._pending.items() if retry.due <= now]

    def __contains__(self, instance_id: object) -> bool:
        return instance_id in self._pending


def stale_instances(store: Store, now: datetime) -> list[AgentInstance]:
    """Active instances of enabled tenants, between ticks, with a due event of their
    generation left unconsumed.

    A Paused agent keeps its events until it is started (the start wakes it), an agent
    in the middle of a tick takes its next event when the tick ends, and a disabled
    tenant's agents do not tick: waking any of them would only add a workflow task and
    a history event every pass.
    """
    cutoff = now - STALE_EVENT_AGE
    with store.session() as db:
        stale = (
            select(AgentInstance.instance_id)
            .join(AgentEventRow, col(AgentEventRow.instance_id) == col(AgentInstance.instance_id))
            .join(TenantFeature, col(TenantFeature.tenant) == col(AgentInstance.tenant))
            .where(
                col(TenantFeature.feature) == STANDING_AGENTS_FEATURE,
                col(TenantFeature.enabled).is_(True),
                col(AgentInstance.status) == AgentStatus.ACTIVE.value,
                col(AgentInstance.tick_in_progress).is_(False),
                col(AgentEventRow.consumed_at).is_(None),
                col(AgentEventRow.generation) == col(AgentInstance.generation),
                col(AgentEventRow.visible_at) <= cutoff,
                col(AgentEventRow.created_at) <= cutoff,
            )
            .distinct()
        )
        # The rows by id: a JSON column (budget_pause) has no equality for DISTINCT on
        # PostgreSQL.
        rows = db.exec(select(AgentInstance).where(col(AgentInstance.instance_id).in_(stale)))
        return list(rows.all())


def open_instances(store: Store, now: datetime) -> list[AgentInstance]:
    """Non-Closed instances of enabled tenants (past their own route's start)."""
    with store.session() as db:
        return list(
            db.exec(
                select(AgentInstance)
                .join(TenantFeature, col(TenantFeature.tenant) == col(AgentInstance.tenant))
                .where(
                    col(TenantFeature.feature) == STANDING_AGENTS_FEATURE,
                    col(TenantFeature.enabled).is_(True),
                    col(AgentInstance.status) != AgentStatus.CLOSED.value,
                    col(AgentInstance.created_at) <= now - YOUNG_INSTANCE,
                )
            ).all()
        )


def instances_by_id(store: Store, ids: list[str]) -> list[AgentInstance]:
    with store.session() as db:
        return list(
            db.exec(select(AgentInstance).where(col(AgentInstance.instance_id).in_(ids))).all()
        )


async def running_workflow_ids(client: Client) -> set[str]:
    ids: set[str] = set()
    query = f"{KIND.name} = '{AGENT_KIND}' AND ExecutionStatus = 'Running'"
    async for execution in client.list_workflows(query):
        ids.add(execution.id)
    return ids


class Sweeper:
    """The API's repair of lost wake-ups.

    - At start-up, once: every non-Closed agent of an enabled tenant whose workflow is
      not running is woken (signal-with-start starts it). This is the one pass that
      lists workflows and loads every open instance.
    - Every SWEEP_INTERVAL: the instances whose wake-up failed (`retries`, backoff),
      the agents paused on a budget that no longer holds (resumed, then woken),
      and the Active agents with a due event left unconsumed, each signalled at most
      once per REWAKE_AFTER (during a storm or a worker outage, a signal every pass
      would only grow their histories).
    """

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.journal = EventJournal(store)
        self.retries = WakeRetries()
        self._last_woken: dict[str, datetime] = {}

    async def repair_running(self, client: Client) -> int:
        """Start the workflow of every open instance that has none; returns how many."""
        now = datetime.now(UTC)
        running = await running_workflow_ids(client)
        rows = await asyncio.to_thread(open_instances, self.store, now)
        missing = [
            row for row in rows if agent_workflow_id(row.tenant, row.instance_id) not in running
        ]
        return await self._wake_all(client, missing, now)

    async def sweep_once(self, client: Client) -> int:
        """One periodic pass; returns how many agents it woke."""
        now = datetime.now(UTC)
        targets: dict[str, AgentInstance] = {}
        due = self.retries.due(now)
        if due:
            for row in await asyncio.to_thread(instances_by_id, self.store, due):
                targets[row.instance_id] = row
            for gone in set(due) - set(targets):
                self.retries.succeeded(gone)  # deleted meanwhile: nothing to wake
        # An agent paused on a budget that no longer holds (a cap raised by a config write
        # whose own resume was lost, a credit window past its regeneration): resumed.
        for row in await asyncio.to_thread(
            budget_pause.resume_lifted, self.store, self.settings, now
        ):
            await asyncio.to_thread(control.journal_status, self.journal, row)
            targets[row.instance_id] = row
        for row in await asyncio.to_thread(stale_instances, self.store, now):
            last = self._last_woken.get(row.instance_id)
            if last is None or now - last >= REWAKE_AFTER:
                targets.setdefault(row.instance_id, row)
        # Forget old marks so the map holds only recent wake-ups.
        self._last_woken = {
            key: at for key, at in self._last_woken.items() if now - at < REWAKE_AFTER
        }
        return await self._wake_all(client, list(targets.values()), now)

    async def watch_ops(self, client: Client, now: datetime) -> int:
        """An ops incident wakes the SOA (runtime/standing_agents/ops_watch.py): for each
        tenant with standing agents on, read the failed and timed-out workflows of the
        last day from Temporal's visibility, probe the bucket, and wake the SOAs a
        transition queued a tick for. Returns how many it woke."""
        since = (now - OPS_VISIBILITY_WINDOW).strftime("%Y-%m-%dT%H:%M:%SZ")
        woken: list[AgentInstance] = []
        tenants = await asyncio.to_thread(enabled_tenants, self.store, STANDING_AGENTS_FEATURE)
        for tenant in tenants:
            if not TENANT_NAME.fullmatch(tenant):
                continue  # not a tenant the routes accept: never in a visibility query
            try:
                counts = []
                for status in ("Failed", "TimedOut"):
                    query = (
                        f"{TENANT.name} = '{tenant}' AND ExecutionStatus = '{status}'"
                        f" AND CloseTime > '{since}'"
                    )
                    answer = await client.count_workflows(query, rpc_timeout=OPS_RPC)
                    counts.append(answer.count)
                await asyncio.to_thread(
                    ops_watch.record_visibility,
                    self.store,
                    tenant,
                    now,
                    failed=counts[0],
                    timed_out=counts[1],
                )
                woken += await asyncio.to_thread(ops_watch.observe, self.store, tenant, now)
            except Exception:
                # One tenant's failure (Temporal slow, the store busy) leaves the others.
                log.warning("the ops watch of tenant %s failed", tenant, exc_info=True)

        return await self._wake_all(client, woken, now)

    async def _wake_all(self, client: Client, rows: list[AgentInstance], now: datetime) -> int:
        woken = 0
        for row in rows:
            self._last_woken[row.instance_id] = now
            try:
                await wake(client, self.settings, row)
                self.retries.succeeded(row.instance_id)
                woken += 1
            except Exception:
                self.retries.failed(row.instance_id, now)
                log.warning("sweeper could not wake agent %s", row.instance_id, exc_info=True)
        return woken

    async def run(self, get_client: Callable[[], Awaitable[Client]]) -> None:
        """The sweeper loop of the API process (cancelled at shutdown): the start-up
        repair until it succeeds once, then the periodic pass. Not run at all while
        standing agents are off for the deployment (spec §3.2: no dispatcher)."""
        if not self.settings.standing_agents_enabled:
            log.info("standing agents are off for this deployment: no sweeper")
            return
        repaired = False
        last_ops: datetime | None = None
        last_schedules: datetime | None = None
        while True:
            try:
                client: Client = await get_client()
                if not repaired:
                    woken = await self.repair_running(client)
                    repaired = True
                else:
                    woken = await self.sweep_once(client)
                now = datetime.now(UTC)
                if last_ops is None or now - last_ops >= OPS_WATCH_INTERVAL:
                    last_ops = now
                    woken += await self.watch_ops(client, now)
                if last_schedules is None or now - last_schedules >= SCHEDULES_INTERVAL:
                    fixed = await temporal_schedules.reconcile(
                        client, self.settings, self.store, orphans=last_schedules is not None
                    )
                    last_schedules = now
                    if fixed:
                        log.info("sweeper repaired %d schedule(s)", fixed)
                if woken:
                    log.info("sweeper woke %d standing agent(s)", woken)
            except Exception:
                # Temporal or the store is down: the next pass tries again.
                log.debug("agent sweeper pass failed", exc_info=True)
            await asyncio.sleep(SWEEP_INTERVAL)


def get_sweeper(request: Request) -> Sweeper:
    sweeper: Sweeper = request.app.state.agent_sweeper
    return sweeper


class Waker:
    """What a route needs to wake an agent after its write (a failure goes to the retries)."""

    def __init__(
        self, connector: TemporalConnector, settings: Settings, retries: WakeRetries
    ) -> None:
        self.connector = connector
        self.settings = settings
        self.retries = retries

    async def __call__(self, instance: AgentInstance) -> bool:
        return await wake_quietly(self.connector, self.settings, instance, self.retries)


def get_waker(request: Request, connector: ConnectorDep, settings: SettingsDep) -> Waker:
    return Waker(connector, settings, get_sweeper(request).retries)


WakerDep = Annotated[Waker, Depends(get_waker)]
