"""The agent-tools routes (spec 000): the catalog, turns, their events, research decisions."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter

    from api.approvals.contracts import Answerer
    from runtime.approvals.ledger import ApprovalKind


def routers() -> list[APIRouter]:
    """This feature's routers, in the order the app includes them (imported here, when the
    app is built, so that importing one of the feature's modules loads no other)."""
    from api.agent_tools import research, routes

    return [routes.router, research.router]


def approval_answerers() -> dict[ApprovalKind, Answerer]:
    """The approvals' kinds this feature answers in the inbox (api/approvals/contracts.py),
    imported lazily as `routers()` is."""
    from api.agent_tools.research import answer_research_approval
    from runtime.approvals.ledger import ApprovalKind

    return {ApprovalKind.RESEARCH: answer_research_approval}
