"""The device-flow routes (RFC 8628): a workspace's logins and their status."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter

    from api.approvals.contracts import Answerer
    from runtime.approvals.ledger import ApprovalKind


def routers() -> list[APIRouter]:
    """This feature's routers, in the order the app includes them (imported here, when the
    app is built, so that importing one of the feature's modules loads no other)."""
    from api.device_flow import routes

    return [routes.router]


def approval_answerers() -> dict[ApprovalKind, Answerer]:
    """The approvals' kinds this feature answers in the inbox (api/approvals/contracts.py),
    imported lazily as `routers()` is."""
    from api.device_flow.routes import answer_login_approval
    from runtime.approvals.ledger import ApprovalKind

    return {ApprovalKind.DEVICE_LOGIN: answer_login_approval}
