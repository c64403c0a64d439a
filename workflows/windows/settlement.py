"""A holder's settlement releases its Windows lease (workflows/windows/lease.py), if a
client took one for it: the signal `settle` to `windows-lease/{tenant}/{holder}`."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from runtime.windows.lease_contracts import SETTLE_SIGNAL, SettleRequest, lease_workflow_id


async def settle_lease(tenant: str, holder: str, reason: str) -> None:
    """Release the lease `holder` holds in `tenant`; nothing when none runs."""
    lease = workflow.get_external_workflow_handle(lease_workflow_id(tenant, holder))
    try:
        await lease.signal(SETTLE_SIGNAL, SettleRequest(reason=reason))
    except Exception:
        # No lease runs any more (released, expired, evicted, never taken): nothing held.
        workflow.logger.info("no Windows lease of %s to settle", holder)
