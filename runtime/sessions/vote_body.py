"""A vote's HTTP body (`{"outcome": {...}}`), checked before the vote reaches the mediation
policy (runtime/sessions/permissions.py): a malformed one is the reference's 400."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from runtime.failures import WireError
from runtime.sessions.permissions import INVALID_OUTCOME_ERROR

OutcomeProblem = Literal[
    "body_not_object",
    "outcome_missing",
    "outcome_not_object",
    "outcome_unknown",
    "option_id_missing",
    "option_id_not_string",
    "option_id_too_long",
]

_PROBLEM_DETAIL: dict[str, str] = {
    "body_not_object": "the request body is not a JSON object",
    "outcome_missing": "the body has no `outcome` field",
    "outcome_not_object": "`outcome` is not an object (it nests: {outcome: {outcome: ...}})",
    "outcome_unknown": '`outcome.outcome` is neither "selected" nor "cancelled"',
    "option_id_missing": "a selected outcome has no `optionId`",
    "option_id_not_string": "`optionId` is not a string",
    "option_id_too_long": "`optionId` is longer than the daemon accepts for an id",
}


class VoteOutcome(BaseModel):
    """A well-formed vote body (`RequestPermissionResponse.outcome`)."""

    kind: Literal["vote_outcome"] = "vote_outcome"
    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None


class OutcomeError(WireError):
    """A malformed vote body. The wire answer is the reference's 400, which carries
    no `code`; `code`, `problem` and `detail` say precisely what is wrong, for logs
    and tests."""

    kind: Literal["outcome_error"] = "outcome_error"
    code: Literal["invalid_outcome"] = "invalid_outcome"
    problem: OutcomeProblem
    detail: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {"error": INVALID_OUTCOME_ERROR}


def _body_error(problem: OutcomeProblem) -> OutcomeError:
    return OutcomeError(problem=problem, detail=_PROBLEM_DETAIL[problem])


def validate_outcome_body(body: Any, *, max_option_id_chars: int) -> VoteOutcome | OutcomeError:
    """Check a parsed JSON body `{"outcome": {"outcome": "selected"|"cancelled", ...}}`.

    `cancelled` needs nothing else (a stray optionId is ignored); `selected` needs
    a string `optionId` of at most `max_option_id_chars` (the API's bound on ids).
    An empty optionId is well-formed: it is not offered, which `mediate` answers
    (`invalid_option_id`). Other top-level keys are ignored.
    """
    if not isinstance(body, dict):
        return _body_error("body_not_object")
    if "outcome" not in body:
        return _body_error("outcome_missing")
    outcome = body["outcome"]
    if not isinstance(outcome, dict):
        return _body_error("outcome_not_object")
    kind = outcome.get("outcome")
    if kind == "cancelled":
        return VoteOutcome(outcome="cancelled")
    if kind != "selected":
        return _body_error("outcome_unknown")
    if "optionId" not in outcome:
        return _body_error("option_id_missing")
    option_id = outcome["optionId"]
    if not isinstance(option_id, str):
        return _body_error("option_id_not_string")
    if len(option_id) > max_option_id_chars:
        return _body_error("option_id_too_long")
    return VoteOutcome(outcome="selected", option_id=option_id)
