"""A device-flow login as an approval: a user must sign in at the identity provider.

The flow's `auth_device_flow_*` events say everything that happens to it; the emit
activity records each one here before it fans the event out to the sessions, so the login
is in the approvals' inbox whether or not a session is open. Idempotent: a retried emit
opens nothing twice and settles nothing twice.

  started → pending (a newer flow of the same provider supersedes an older one pending)
  authorized → approved; failed `expired_token` → expired; failed `access_denied` →
  denied; any other failure, or a cancel → cancelled
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection

from runtime.approvals import ledger
from runtime.approvals.ledger import DEPLOYMENT, ApprovalKind, ApprovalRequest, ApprovalState

_FAILURES: Final = {
    "expired_token": ApprovalState.EXPIRED,
    "access_denied": ApprovalState.DENIED,
}


def login_approval(device_flow_id: str) -> str:
    return ledger.approval_id(ApprovalKind.DEVICE_LOGIN, device_flow_id)


def login_subject(workspace_cwd: str, provider_id: str) -> str:
    return f"device-flow/{workspace_cwd}/{provider_id}"


def record(
    connection: Connection, workspace_cwd: str, event_type: str, data: dict[str, Any]
) -> None:
    """What the flow's event `event_type` does to its login's approval."""
    flow_id = data.get("deviceFlowId")
    if not isinstance(flow_id, str):
        return
    now = datetime.now(UTC)
    approval = login_approval(flow_id)
    if event_type == "auth_device_flow_started":
        provider = str(data.get("providerId") or "")
        subject = login_subject(workspace_cwd, provider)
        ledger.supersede(
            connection,
            subject,
            now=now,
            reason="a newer login of the same provider started",
            kinds=[ApprovalKind.DEVICE_LOGIN],
            keep=approval,
        )
        expires = data.get("expiresAt")
        ledger.open_approval(
            connection,
            ApprovalRequest(
                kind=ApprovalKind.DEVICE_LOGIN,
                ref=flow_id,
                tenant=DEPLOYMENT,
                subject=subject,
                asked_by=subject,
                title=f"Sign in to {provider}",
                link=f"/workspace/auth/device-flow/{flow_id}",
                detail={"providerId": provider, "workspace": workspace_cwd},
                expires_at=(
                    datetime.fromtimestamp(expires / 1000, UTC)
                    if isinstance(expires, int)
                    else None
                ),
            ),
            now,
        )
    elif event_type == "auth_device_flow_authorized":
        ledger.settle(
            connection,
            approval,
            ApprovalState.APPROVED,
            now=now,
            reason="signed in at the identity provider",
            answered_by=f"idp:{data.get('providerId')}",
        )
    elif event_type == "auth_device_flow_failed":
        kind = str(data.get("errorKind") or "")
        ledger.settle(
            connection,
            approval,
            _FAILURES.get(kind, ApprovalState.CANCELLED),
            now=now,
            reason=kind or "failed",
        )
    elif event_type == "auth_device_flow_cancelled":
        ledger.settle(connection, approval, ApprovalState.CANCELLED, now=now, reason="cancelled")
