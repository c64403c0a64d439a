"""Driving a holder's lease from outside its workflow: the API's REST verbs and the
session agent's windows_* tools (an activity) both call a verb with `call_verb`.

A verb starts the lease workflow when it is not running (start, then the update `call`):
the workflow waits for that update before it leases anything. A run that just ended
(nothing held any more) refuses the update as completed; the call then starts a new run
and sends it again. `windows_release` never starts anything: with no lease running it
answers `not_held` at once. The update carries `accept_before_ms`, so one the caller
gave up on (no worker in time) is never applied later.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from temporalio.client import (
    Client,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.common import TypedSearchAttributes
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from runtime.failures import UpdateExpired, decode_failure
from runtime.search_attributes import running
from runtime.windows.errors import WindowsError, WindowsErrorCode
from runtime.windows.lease_contracts import (
    CALL_UPDATE,
    LEASE_KIND,
    LEASE_QUERY,
    SETTLE_SIGNAL,
    WORKFLOW_NAME,
    LeaseCall,
    LeaseCallResult,
    LeaseInput,
    LeaseView,
    SettleRequest,
    lease_search_attributes,
    lease_workflow_id,
    release_not_held,
)
from runtime.windows.verbs import WindowsVerb

# A run that ended between our start and our update: start again, a few times.
_ATTEMPTS = 3


class LeaseUnavailable(Exception):
    """No worker took the verb in time (the API answers 503; nothing was applied)."""


class LeaseCallFailed(Exception):
    """The verb failed with a typed Windows error."""

    def __init__(self, error: WindowsError) -> None:
        super().__init__(error.message)
        self.error = error


async def call_verb(
    client: Client,
    *,
    task_queue: str,
    tenant: str,
    holder: str,
    verb: WindowsVerb,
    args: dict[str, Any],
    lease_ms: int,
    idle_ms: int,
    wait_ms: int,
    result_wait_s: float,
    update_id: str | None = None,
) -> Any:
    """Run one verb through the holder's lease; its result, or LeaseCallFailed /
    LeaseUnavailable. `wait_ms` bounds the wait for a worker to accept the update,
    `result_wait_s` the wait for its result once accepted. `update_id` makes a retried
    call the same update (Temporal applies an update id once per run)."""
    workflow_id = lease_workflow_id(tenant, holder)
    request = LeaseInput(tenant=tenant, holder=holder, lease_ms=lease_ms, idle_ms=idle_ms)
    update_id = update_id or str(uuid.uuid4())
    for attempt in range(_ATTEMPTS):
        if verb != WindowsVerb.RELEASE:
            try:
                await client.start_workflow(
                    WORKFLOW_NAME,
                    request,
                    id=workflow_id,
                    task_queue=task_queue,
                    search_attributes=TypedSearchAttributes(lease_search_attributes(request)),
                    memo={"tenant": tenant, "holder": holder},
                )
            except WorkflowAlreadyStartedError:
                pass
        call = LeaseCall(
            verb=verb.value,
            args=args,
            accept_before_ms=int(time.time() * 1000) + wait_ms,
        )
        handle = client.get_workflow_handle(workflow_id)
        try:
            accepted = await asyncio.wait_for(
                handle.start_update(
                    CALL_UPDATE,
                    call,
                    id=update_id,
                    wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                    result_type=LeaseCallResult,
                ),
                wait_ms / 1000 + 12,
            )
            result: LeaseCallResult = await asyncio.wait_for(accepted.result(), result_wait_s)
            return result.result
        except WorkflowUpdateFailedError as err:
            raise _typed(err) from err
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            # No run, or the run ended before taking the update.
            if verb == WindowsVerb.RELEASE:
                return release_not_held()
            if attempt == _ATTEMPTS - 1:
                raise
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
            raise LeaseUnavailable() from err
    raise LeaseUnavailable()


def _typed(err: WorkflowUpdateFailedError) -> Exception:
    failure = decode_failure(err.cause)
    if isinstance(failure, WindowsError):
        return LeaseCallFailed(failure)
    if isinstance(failure, UpdateExpired):
        return LeaseUnavailable()
    message = str(getattr(err.cause, "message", "") or err)
    return LeaseCallFailed(WindowsError.agentrt(WindowsErrorCode.POOL_ERROR, message))


async def settle(client: Client, tenant: str, holder: str, reason: str) -> bool:
    """Signal the holder's settlement; False when it holds no lease (no workflow running)."""
    handle = client.get_workflow_handle(lease_workflow_id(tenant, holder))
    try:
        await handle.signal(SETTLE_SIGNAL, SettleRequest(reason=reason))
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


async def list_leases(client: Client, tenant: str, limit: int = 500) -> list[LeaseView]:
    """The tenant's running leases, each as its workflow says now."""
    query = running(LEASE_KIND, tenant=tenant)
    ids = [execution.id async for execution in client.list_workflows(query, limit=limit)]

    async def view(workflow_id: str) -> LeaseView | None:
        try:
            value = await client.get_workflow_handle(workflow_id).query(
                LEASE_QUERY, result_type=LeaseView
            )
        except RPCError:
            return None  # ended since the listing
        return value if isinstance(value, LeaseView) else None

    views = await asyncio.gather(*(view(i) for i in ids))
    return sorted((v for v in views if v is not None), key=lambda v: v.holder)
