"""Refusals of `POST /api/v1/agent-tools/turns/{turn_id}/resume` and their wire bodies.

TurnWorkflow's `resume` validator decides whether the turn can resume — it knows the
turn's status and the human decision the research flow signalled — and raises one
of these (`WireError.application_error()`); the route answers it through
`api.errors.workflow_error`.
"""

from __future__ import annotations

from typing import Any, Literal

from runtime.failures import WireError


class TurnNotWaiting(WireError):
    """The turn is not at AUTHORIZATION_REQUIRED (running, resuming, or over): 409."""

    kind: Literal["turn_not_waiting"] = "turn_not_waiting"
    turn_id: str
    status: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Turn "{self.turn_id}" is {self.status}, not awaiting authorization',
            "code": "turn_not_waiting",
            "turn_id": self.turn_id,
            "status": self.status,
        }


class AuthorizationPending(WireError):
    """No human decision on the turn's research yet: 409, resume after deciding."""

    kind: Literal["authorization_pending"] = "authorization_pending"
    turn_id: str
    research_id: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No human decision is recorded for research "{self.research_id}"',
            "code": "authorization_pending",
            "turn_id": self.turn_id,
            "research_id": self.research_id,
        }


class ResearchDenied(WireError):
    """The research was denied: the turn ends DENIED by itself, no resume: 409."""

    kind: Literal["research_denied"] = "research_denied"
    turn_id: str
    research_id: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Research "{self.research_id}" was denied: the turn ends with DENIED',
            "code": "research_denied",
            "turn_id": self.turn_id,
            "research_id": self.research_id,
        }
