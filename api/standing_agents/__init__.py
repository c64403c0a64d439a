"""The standing agents' routes (spec 004): agents, decisions, registry, schedules, webhooks
and streams."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter

    from api.approvals.contracts import Answerer
    from runtime.approvals.ledger import ApprovalKind


def routers() -> list[APIRouter]:
    """This feature's routers, in the order the app includes them (imported here, when the
    app is built, so that importing one of the feature's modules loads no other)."""
    from api.standing_agents import (
        config,
        decisions,
        modes,
        redactor_signals,
        registry,
        routes,
        schedules,
        stream,
        tenant_features,
        webhooks,
    )

    return [
        tenant_features.router,
        routes.router,
        stream.router,
        decisions.router,
        registry.router,
        config.router,
        redactor_signals.router,
        webhooks.router,
        webhooks.delivery,
        schedules.router,
        modes.router,
    ]


def approval_answerers() -> dict[ApprovalKind, Answerer]:
    """The approvals' kinds this feature answers in the inbox (api/approvals/contracts.py),
    imported lazily as `routers()` is: its decision queue's, which holds an MCP call's
    authorization and a coder's question as decisions."""
    from api.standing_agents.decisions import answer_decision_approval
    from runtime.approvals.ledger import ApprovalKind

    return {
        ApprovalKind.DECISION: answer_decision_approval,
        ApprovalKind.MCP_CALL: answer_decision_approval,
        ApprovalKind.CODER_QUESTION: answer_decision_approval,
    }
