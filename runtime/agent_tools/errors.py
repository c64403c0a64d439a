"""Refusals of the agent-tools routes (`/api/v1/agent-tools/*`) and their wire bodies.

TurnWorkflow's `resume` validator decides whether the turn can resume — it knows the
turn's status and the human decision the research flow signalled — and raises one
of the resume refusals (`WireError.application_error()`); the route answers it through
`api.errors.workflow_error`. The routes raise the others (a turn or a result that does not
exist, a turn id taken, a turn whose workflow never started) the same way.
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


class _TurnRefusal(WireError):
    """A refusal about one turn: its id in the body, as `turn_id` (the protocol's case)."""

    turn_id: str

    def message(self) -> str:
        raise NotImplementedError

    def response_body(self) -> dict[str, Any]:
        return {"error": self.message(), "code": self.kind_name, "turn_id": self.turn_id}


class TurnNotFound(_TurnRefusal):
    kind: Literal["turn_not_found"] = "turn_not_found"

    @property
    def http_status(self) -> int:
        return 404

    def message(self) -> str:
        return f'No turn with id "{self.turn_id}"'


class TurnExists(_TurnRefusal):
    """The turn id is taken by a turn with another prompt: 409."""

    kind: Literal["turn_exists"] = "turn_exists"

    @property
    def http_status(self) -> int:
        return 409

    def message(self) -> str:
        return f'Turn "{self.turn_id}" already exists with another prompt'


class TurnNotStarted(_TurnRefusal):
    """The turn was recorded, but the API went away before its workflow started: 409,
    and posting the same turn again starts it."""

    kind: Literal["turn_not_started"] = "turn_not_started"

    @property
    def http_status(self) -> int:
        return 409

    def message(self) -> str:
        return (
            f'Turn "{self.turn_id}" was recorded but its workflow never started; '
            "POST /turns again with the same turn_id and prompt to start it"
        )


class ResultNotFound(WireError):
    kind: Literal["result_not_found"] = "result_not_found"
    result_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No result with id "{self.result_id}"',
            "code": self.kind_name,
            "result_id": self.result_id,
        }
