"""Settling a holder's Windows lease from a route (a standing agent stopped).

Best effort, after the route's own write: when Temporal does not answer, the lease ends
by its idle expiry (AGENTRT_WINDOWS_LEASE_IDLE_MS) instead; the route still succeeds.
"""

from __future__ import annotations

import asyncio
import logging

from api.temporal import TemporalConnector
from runtime.windows_pool import lease_client

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
