"""What the Windows lease tests share: calling a verb through a holder's lease."""

from __future__ import annotations

import contextlib
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from runtime.settings import Settings
from runtime.windows import lease_client
from runtime.windows.lease_contracts import lease_workflow_id
from runtime.windows.verbs import WindowsVerb, validate_and_clamp

POOL_TOKEN = "pool-token"


async def call(
    client: Client,
    settings: Settings,
    holder: str,
    verb: str,
    args: dict[str, Any] | None = None,
    *,
    tenant: str = "acme",
    wait_ms: int | None = None,
) -> Any:
    parsed = WindowsVerb(verb)
    return await lease_client.call_verb(
        client,
        task_queue=settings.task_queue,
        tenant=tenant,
        holder=holder,
        verb=parsed,
        args=validate_and_clamp(parsed, args or {}),
        lease_ms=settings.windows_lease_ms,
        idle_ms=settings.windows_lease_idle_ms,
        # On the time-skipping server the workflow's clock runs ahead of the test's: an
        # update's acceptance bound is taken far enough out not to matter there.
        wait_ms=wait_ms or settings.worker_wait_ms,
        result_wait_s=60,
    )


def lease_handle(client: Client, holder: str, tenant: str = "acme") -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(lease_workflow_id(tenant, holder))


async def end_leases(temporal: Client, task_queue: str) -> None:
    """Leases a test left held would outlive its worker (their task queue is the test's):
    a later test on the same dev server listing the tenant's leases would wait on their
    queries (30 s, then 503) and see them in its list."""
    query = (
        f"AgentrtKind = 'windows-lease' AND TaskQueue = '{task_queue}' "
        "AND ExecutionStatus = 'Running'"
    )
    async for execution in temporal.list_workflows(query):
        with contextlib.suppress(RPCError):  # ended meanwhile
            await temporal.get_workflow_handle(execution.id).terminate("test over")
