"""A session's routes and wire models (spec 002): prompts, permissions, events, a session's
status (supported commands, tasks, recap), and the daemon's status."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter

    from api.approvals.contracts import Answerer
    from runtime.approvals.ledger import ApprovalKind


def routers() -> list[APIRouter]:
    """This feature's routers, in the order the app includes them (imported here, when the
    app is built, so that importing one of the feature's modules loads no other)."""
    from api.sessions import daemon_status, events, permissions, prompts, routes, status

    return [
        daemon_status.router,
        routes.router,
        prompts.router,
        permissions.router,
        events.router,
        status.router,
    ]


def approval_answerers() -> dict[ApprovalKind, Answerer]:
    """The approvals' kinds this feature answers in the inbox (api/approvals/contracts.py),
    imported lazily as `routers()` is."""
    from api.sessions.permissions import answer_permission_approval
    from runtime.approvals.ledger import ApprovalKind

    return {ApprovalKind.PERMISSION: answer_permission_approval}
