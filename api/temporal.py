"""The API's Temporal client: one per process, connected lazily, never blocking start-up.

How a route bounds a call to Temporal. A single RPC whose answer the route needs now (a
query, a describe, a schedule's calls) takes the SDK's `rpc_timeout`, its deadline
(`query_workflow` below). A call the SDK makes of several RPCs keeps an `asyncio.wait_for`
around it, because `rpc_timeout` bounds each RPC, not the call:
- an update's acceptance (`start_update(wait_for_stage=ACCEPTED)`) and its result
  (`WorkflowUpdateHandle.result()`) loop on the server's long poll, which answers "not yet"
  just before each deadline, so a fresh deadline starts every round;
- a workflow's result follows its history the same way;
- a start or a signal retries an unavailable server inside the SDK (`RetryConfig`: up to
  10 s, each attempt with its own deadline), so a route that must answer within a few
  seconds bounds it so too (the others leave it to the SDK's retries).
The bound of an update's acceptance is the `accept_before_ms` it carries plus
`ACCEPT_GRACE`, which is what makes "not accepted by then" mean "never applied".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from api.errors import ApiError, temporal_unavailable, worker_unavailable
from runtime import temporal
from runtime.search_attributes import running

# Temporal's default workflow task timeout: a worker that validated an update commits
# (or loses) it within this of the task's start, so past `accept_before` + this, an
# update that was not accepted never will be. Plus a margin for clock skew.
WORKFLOW_TASK_TIMEOUT = 10.0
ACCEPT_GRACE = WORKFLOW_TASK_TIMEOUT + 2.0

T = TypeVar("T")
log = logging.getLogger(__name__)

# A worker long-polls for up to ~70 s; a poller seen more recently than this is live.
POLLER_LIVE_WINDOW = timedelta(seconds=90)

# How long the health probe of a Temporal server last seen down may take.
PROBE_TIMEOUT = timedelta(seconds=2)


def is_unavailable(err: BaseException) -> bool:
    """True for an RPC that failed because Temporal is not there (down, restarting)."""
    return isinstance(err, RPCError) and err.status == RPCStatusCode.UNAVAILABLE


def _unreachable(address: str) -> ApiError:
    return temporal_unavailable(f"Temporal is not reachable at {address}")


class TemporalConnector:
    """Connects on first use and remembers the client; a 503 while Temporal is down.

    The client reconnects by itself once Temporal is back (a restart of the embedded
    server, say). Until then each RPC would retry for about ten seconds before it
    fails, so once one failed with UNAVAILABLE (`mark_down`), `get` first asks the
    server's health endpoint, which answers at once: a fast 503
    `temporal_unavailable` while it is down, the client again as soon as it is up.
    """

    def __init__(self, address: str, namespace: str, client: Client | None = None) -> None:
        self.address = address
        self.namespace = namespace
        self._client = client
        self._lock = asyncio.Lock()
        self._down = False

    @property
    def connected(self) -> bool:
        return self._client is not None

    def mark_down(self) -> None:
        """An RPC found Temporal unreachable: probe it before handing out the client."""
        self._down = True

    async def get(self, timeout: float = 5.0) -> Client:
        client = self._client
        if client is None:
            client = await self._connect(timeout)
        if self._down:
            try:
                serving = await client.service_client.check_health(timeout=PROBE_TIMEOUT)
            except (RPCError, RuntimeError, TimeoutError) as err:
                raise _unreachable(self.address) from err
            if not serving:
                raise _unreachable(self.address)
            self._down = False
        return client

    async def _connect(self, timeout: float) -> Client:
        async with self._lock:
            if self._client is None:
                try:
                    self._client = await asyncio.wait_for(
                        temporal.connect(self.address, self.namespace), timeout
                    )
                except (RuntimeError, TimeoutError) as err:
                    raise _unreachable(self.address) from err
            return self._client


async def describe_pollers(client: Client, task_queue: str) -> dict[str, Any]:
    """Who polls `task_queue`, from Temporal's task-queue description."""
    now = datetime.now(UTC)
    kinds = {
        "workflow": TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        "activity": TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    }
    pollers: list[dict[str, Any]] = []
    live = {name: False for name in kinds}
    for name, kind in kinds.items():
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=kind,
            ),
            timeout=timedelta(seconds=5),
        )
        for poller in response.pollers:
            seen = poller.last_access_time.ToDatetime(tzinfo=UTC)
            is_live = now - seen <= POLLER_LIVE_WINDOW
            live[name] = live[name] or is_live
            pollers.append(
                {
                    "type": name,
                    "identity": poller.identity,
                    "lastAccessTime": seen.isoformat().replace("+00:00", "Z"),
                    "live": is_live,
                }
            )
    return {"workerPolling": any(live.values()), "live": live, "pollers": pollers}


async def count_workflows(client: Client, query: str) -> int:
    try:
        result = await asyncio.wait_for(client.count_workflows(query), 5)
    except (RPCError, TimeoutError):
        return 0
    return int(result.count)


async def count_pending_permissions(client: Client, workspace: str) -> int:
    """The daemon's sessions waiting on a permission (`/health?deep`, `/daemon/status`).

    A session waiting on one says so in its search attributes, and a daemon's sessions
    carry its workspace as tenant: other daemons' sessions in the namespace do not count.
    """
    query = running("session", tenant=workspace, status="awaiting_permission")
    return await count_workflows(client, query)


async def query_workflow(ask: Callable[[timedelta], Awaitable[T]], wait: float) -> T:
    """A workflow's answer to the query `ask` sends (with the `rpc_timeout` it is given),
    within `wait` seconds; else a 503.

    A query fails, rather than times out, when the worker took the query but could not
    run it: its workflow task failed (Temporal's two-second deadlock guard firing on an
    overloaded host, a worker shutting down mid-task). Temporal retries that task, and
    the next ask is answered, so a failed query is asked again until `wait` runs out;
    then it is `worker_unavailable`, the answer for a worker that did not answer, not a
    500. The state queries the routes send never raise by themselves.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    pause = 0.05
    while True:
        remaining = max(deadline - loop.time(), 0.001)
        try:
            return await ask(timedelta(seconds=remaining))
        except RPCError as err:
            if err.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
                raise worker_unavailable() from err
            raise
        except WorkflowQueryFailedError as err:
            if loop.time() + pause >= deadline:
                raise worker_unavailable() from err
            log.warning("a workflow query failed on the worker, asking again: %s", err)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)
