"""Answering an approval through the inbox: who may answer which kind, and the refusals.

The inbox's answer (api/approvals/routes.py) is the kind's own operation (a session's
vote, a research's decision, a decision's respond, a device flow's cancel), run with the
verified identity; what it adds is one vocabulary over the kinds:

- the same answer again, however concurrently, resolves once and reads the same record;
- a different answer to an ended approval is 409 `approval_already_resolved`;
- a role that may not answer a kind is 403 (`ANSWERING_ROLES`, the one policy);
- a device login is approved only at its identity provider: `approve` there is 409
  `approval_answered_elsewhere`, `deny` cancels the login.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from runtime.approvals.ledger import ApprovalKind, ApprovalState, recorded_answer
from runtime.approvals.models import Approval
from runtime.failures import WireError

# The tenant tokens' roles that may answer each kind (the administrator answers every
# kind; a tokenless daemon's loopback caller is its administrator). The deployment's own
# requests (votes, research, device logins) belong to no tenant: only the administrator
# answers them. A coder asks questions and never answers one (its own included).
ANSWERING_ROLES: Final[dict[ApprovalKind, frozenset[str]]] = {
    ApprovalKind.PERMISSION: frozenset(),
    ApprovalKind.RESEARCH: frozenset(),
    ApprovalKind.DEVICE_LOGIN: frozenset(),
    ApprovalKind.DECISION: frozenset({"operator"}),
    ApprovalKind.MCP_CALL: frozenset({"operator"}),
    ApprovalKind.CODER_QUESTION: frozenset({"operator"}),
}
# What answers a device login in the inbox: it is denied (cancelled) here, approved at
# its identity provider.
DENY_LOGIN: Final = "deny"


def may_answer(role: str | None, kind: ApprovalKind) -> bool:
    """Whether a tenant token of `role` may answer `kind` (None: the administrator)."""
    return role is None or role in ANSWERING_ROLES[kind]


def same_answer(row: Approval, answer: str) -> bool:
    """Whether ended `row` ended by `answer` (so answering it again changes nothing)."""
    if row.kind == ApprovalKind.DEVICE_LOGIN.value and answer == DENY_LOGIN:
        return row.state == ApprovalState.CANCELLED.value
    return row.answer == recorded_answer(answer) and row.state in (
        ApprovalState.APPROVED.value,
        ApprovalState.DENIED.value,
        ApprovalState.ANSWERED.value,
    )


class ApprovalNotFound(WireError):
    """No such approval (in this tenant, on a tenant's route): 404."""

    kind: Literal["approval_not_found"] = "approval_not_found"
    approval_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No approval with id "{self.approval_id}"',
            "code": self.kind_name,
            "approvalId": self.approval_id,
        }


class ApprovalAlreadyResolved(WireError):
    """An answer to an approval that ended otherwise (another answer, its timeout, what it
    was for ending): 409, with how it ended."""

    kind: Literal["approval_already_resolved"] = "approval_already_resolved"
    approval_id: str
    state: str
    answer: str | None = None

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"This approval already ended ({self.state})",
            "code": self.kind_name,
            "approvalId": self.approval_id,
            "state": self.state,
            "answer": self.answer,
        }


class ApprovalAnsweredElsewhere(WireError):
    """`approve` on a device login: its user approves it at the identity provider: 409."""

    kind: Literal["approval_answered_elsewhere"] = "approval_answered_elsewhere"
    approval_id: str
    link: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "A device login is approved at its identity provider (its verification "
            f"URI, at {self.link}); here it can only be denied (answer `{DENY_LOGIN}`)",
            "code": self.kind_name,
            "approvalId": self.approval_id,
            "link": self.link,
        }


class InvalidAnswer(WireError):
    """An answer the kind does not take (a research is approved or denied, a device login
    only denied here): 400, with the answers it takes."""

    kind: Literal["invalid_answer"] = "invalid_answer"
    approval_id: str
    expected: list[str]

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "This approval takes one of: " + ", ".join(self.expected),
            "code": self.kind_name,
            "approvalId": self.approval_id,
            "expected": self.expected,
        }
