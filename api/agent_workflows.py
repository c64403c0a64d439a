"""The API's side of `StandingAgentWorkflow`: wake an agent (starting it if it is not
running), and the sweeper that repairs a lost wake-up.

Routes write the store first and wake the workflow second. A wake-up is one
signal-with-start of `wake` (no payload): it signals a running workflow, or starts it
and signals it, so an instance whose workflow is gone is brought back by the same
call. When Temporal does not answer, the event waits in `agent_event_queue`; the
sweeper (at start-up and every few seconds) wakes instances with due events left
unconsumed for a while and starts the workflow of any non-Closed instance whose
workflow is not running. Nothing is lost between a store write and a signal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlmodel import col, select
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from api.temporal import TemporalConnector, is_unavailable
from runtime.settings import Settings
from runtime.standing_agents.contracts import AgentStatus, agent_workflow_id
from runtime.standing_agents.models import AgentEventRow, AgentInstance
from runtime.store.engine import Store
from workflows.search_attributes import KIND, MODE, STATUS, TENANT

log = logging.getLogger(__name__)

# By name: the workflow and its signal are the worker's (workflows/standing_agent.py).
WORKFLOW_NAME = "StandingAgentWorkflow"
WAKE_SIGNAL = "wake"
AGENT_KIND = "agent"
WAKE_TIMEOUT = 10.0

SWEEP_INTERVAL = 5.0
# A due event older than this was not taken by a wake-up: wake the agent again.
STALE_EVENT_AGE = timedelta(seconds=5)
# The running-workflow check lists workflows (one visibility query): every Nth sweep.
RUNNING_CHECK_EVERY = 6
# Instances younger than this are being started by their own route.
YOUNG_INSTANCE = timedelta(seconds=10)


def workflow_input(instance: AgentInstance) -> dict[str, Any]:
    """`StandingAgentInput(tenant, instance_id, agent_type, state=None)` on the wire."""
    return {
        "tenant": instance.tenant,
        "instance_id": instance.instance_id,
        "agent_type": instance.agent_type,
        "state": None,
    }


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
                [
                    SearchAttributePair(KIND, AGENT_KIND),
                    SearchAttributePair(TENANT, instance.tenant),
                    SearchAttributePair(STATUS, instance.status),
                    SearchAttributePair(MODE, instance.active_mode or ""),
                ]
            ),
            memo={"agentType": instance.agent_type, "tenant": instance.tenant},
        ),
        WAKE_TIMEOUT,
    )


async def wake_quietly(
    connector: TemporalConnector, settings: Settings, instance: AgentInstance
) -> bool:
    """Wake after a committed store write. Temporal being down is no error for the route
    (its write is durable): the failure is logged and the sweeper wakes the agent later."""
    try:
        await wake(await connector.get(), settings, instance)
        return True
    except Exception as err:
        if is_unavailable(err):
            connector.mark_down()  # the next route gets a fast answer until it is back
        log.warning(
            "waking agent %s failed; the sweeper will retry", instance.instance_id, exc_info=True
        )
        return False


def stale_instances(store: Store, now: datetime) -> list[AgentInstance]:
    """Non-Closed instances with a due event of their generation left unconsumed."""
    cutoff = now - STALE_EVENT_AGE
    with store.session() as db:
        rows = db.exec(
            select(AgentInstance)
            .join(AgentEventRow, col(AgentEventRow.instance_id) == col(AgentInstance.instance_id))
            .where(
                col(AgentInstance.status) != AgentStatus.CLOSED.value,
                col(AgentEventRow.consumed_at).is_(None),
                col(AgentEventRow.generation) == col(AgentInstance.generation),
                col(AgentEventRow.visible_at) <= cutoff,
                col(AgentEventRow.created_at) <= cutoff,
            )
            .distinct()
        ).all()
        return list(rows)


def open_instances(store: Store, now: datetime) -> list[AgentInstance]:
    with store.session() as db:
        return list(
            db.exec(
                select(AgentInstance).where(
                    col(AgentInstance.status) != AgentStatus.CLOSED.value,
                    col(AgentInstance.created_at) <= now - YOUNG_INSTANCE,
                )
            ).all()
        )


async def running_workflow_ids(client: Client) -> set[str]:
    ids: set[str] = set()
    query = f"{KIND.name} = '{AGENT_KIND}' AND ExecutionStatus = 'Running'"
    async for execution in client.list_workflows(query):
        ids.add(execution.id)
    return ids


async def sweep_once(
    client: Client, settings: Settings, store: Store, *, check_running: bool
) -> int:
    """One pass; returns how many agents it woke."""
    now = datetime.now(UTC)
    targets = {row.instance_id: row for row in await asyncio.to_thread(stale_instances, store, now)}
    if check_running:
        running = await running_workflow_ids(client)
        for row in await asyncio.to_thread(open_instances, store, now):
            if agent_workflow_id(row.tenant, row.instance_id) not in running:
                targets.setdefault(row.instance_id, row)
    woken = 0
    for row in targets.values():
        try:
            await wake(client, settings, row)
            woken += 1
        except Exception:
            log.warning("sweeper could not wake agent %s", row.instance_id, exc_info=True)
    return woken


async def run_sweeper(
    get_client: Callable[[], Awaitable[Client]], settings: Settings, store: Store
) -> None:
    """The sweeper loop of the API process (cancelled at shutdown)."""
    passes = 0
    while True:
        try:
            client: Client = await get_client()
            woken = await sweep_once(
                client, settings, store, check_running=passes % RUNNING_CHECK_EVERY == 0
            )
            if woken:
                log.info("sweeper woke %d standing agent(s)", woken)
            passes += 1
        except Exception:
            # Temporal or the store is down: the next pass tries again.
            log.debug("agent sweeper pass failed", exc_info=True)
        await asyncio.sleep(SWEEP_INTERVAL)
