"""The API's side of a holder's Windows lease: one verb through it (the REST route and
the MCP tools alike), and settling it from a route (a standing agent stopped).

Settling is best effort, after the route's own write: when Temporal does not answer,
the lease ends by its idle expiry (AGENTRT_WINDOWS_LEASE_IDLE_MS) instead; the route
still succeeds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from temporalio.client import Client

from api.temporal import TemporalConnector
from runtime.settings import Settings
from runtime.windows import lease_client
from runtime.windows.verbs import SESSION_ACTIVITY_TIMEOUT, WindowsVerb, activity_timeout

log = logging.getLogger(__name__)

SETTLE_TIMEOUT = 5.0


async def settle_windows_lease(
    connector: TemporalConnector, tenant: str, holder: str, reason: str
) -> bool:
    """Signal `settle` to the holder's lease; False when none runs or Temporal is silent."""
    try:
        client = await connector.get()
        return await asyncio.wait_for(
            lease_client.settle(client, tenant, holder, reason), SETTLE_TIMEOUT
        )
    except Exception:
        log.warning("settling the Windows lease of %s/%s failed", tenant, holder, exc_info=True)
        return False


def result_wait_s(verb: WindowsVerb, args: dict[str, Any]) -> float:
    """How long a caller waits for an accepted verb: above the activity's own timeout
    (a first verb opens a session first, a release closes one)."""
    return (activity_timeout(verb, args) + SESSION_ACTIVITY_TIMEOUT * 2).total_seconds() + 10


async def run_verb(
    client: Client,
    settings: Settings,
    tenant: str,
    holder: str,
    verb: WindowsVerb,
    args: dict[str, Any],
    update_id: str | None = None,
) -> Any:
    """One verb of `holder`'s lease (its first leases a machine): its result. The same
    `update_id` again is the same call (Temporal applies it once per run).

    Raises:
        LeaseCallFailed, LeaseUnavailable, RPCError: as lease_client.call_verb.
    """
    return await lease_client.call_verb(
        client,
        task_queue=settings.task_queue,
        tenant=tenant,
        holder=holder,
        verb=verb,
        args=args,
        lease_ms=settings.windows_lease_ms,
        idle_ms=settings.windows_lease_idle_ms,
        wait_ms=settings.worker_wait_ms,
        result_wait_s=result_wait_s(verb, args),
        update_id=update_id,
    )
