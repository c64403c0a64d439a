"""Refusals of `POST /api/v1/agent-tools/turns/{turn_id}/resume` and their wire bodies.

TurnWorkflow's `resume` validator decides whether the turn can resume — it knows the
turn's status and the human decision the research flow signalled — and raises one
of these (`WireError.application_error()`); the route answers it through
`api.errors.workflow_error`.
"""

from __future__ import annotations

from typing import Any, Literal

from runtime.failures import WireError


class _ResumeRefusal(WireError):
    """A resume refused because of where the turn is: always 409, with the turn's id."""

    turn_id: str

    @property
    def http_status(self) -> int:
        return 409

    def message(self) -> str:
        raise NotImplementedError

    def response_body(self) -> dict[str, Any]:
        fields = self.model_dump(exclude={"kind"})
        return {"error": self.message(), "code": self.kind_name, **fields}


class TurnNotWaiting(_ResumeRefusal):
    """The turn is not at AUTHORIZATION_REQUIRED (running, resuming, or over): 409."""

    kind: Literal["turn_not_waiting"] = "turn_not_waiting"
    status: str

    def message(self) -> str:
        return f'Turn "{self.turn_id}" is {self.status}, not awaiting authorization'


class AuthorizationPending(_ResumeRefusal):
    """No human decision on the turn's research yet: 409, resume after deciding."""

    kind: Literal["authorization_pending"] = "authorization_pending"
    research_id: str

    def message(self) -> str:
        return f'No human decision is recorded for research "{self.research_id}"'


class ResearchDenied(_ResumeRefusal):
    """The research was denied: the turn ends DENIED by itself, no resume: 409."""

    kind: Literal["research_denied"] = "research_denied"
    research_id: str

    def message(self) -> str:
        return f'Research "{self.research_id}" was denied: the turn ends with DENIED'
