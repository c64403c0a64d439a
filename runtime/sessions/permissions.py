"""Permission-vote mediation: who may answer a pending `permission_request`, and how.

Pure policy code (DESIGN.md): no I/O, no clock, no randomness, nothing done at
import beyond defining types, so `SessionWorkflow` can call it from workflow
code and unit tests can call it directly.

The wire behaviour follows `POST /permission/:requestId` and
`POST /session/:id/permission/:requestId` of the session-daemon spec and the
reference daemon (qwen serve 0.24.4, recordings 053-069):

* `validate_outcome_body` (runtime/sessions/vote_body.py) checks the HTTP body before
  anything else (400 `{"error": INVALID_OUTCOME_ERROR}` for a malformed `outcome`);
  the options a request offers are runtime/sessions/permission_options.py's.
* `mediate(pending, vote)` applies the active policy to one vote and returns a
  `Mediation`: what to answer (`http_status`, `response_body()`), and for a
  consensus vote below quorum the new tally (`PartialVote.updated`) and the event
  to broadcast (`PartialVote.event`). It never mutates its arguments.

The refusals are `WireError`s (`runtime.failures`): SessionWorkflow's vote validator
raises them across Temporal, and their `response_body()` is what the route sends.

Order of the checks (same as the reference mediator):

1. the agent's options contain `CANCEL_SENTINEL` -> `SentinelCollision` (500);
2. a `cancelled` vote resolves as cancelled under every policy, from any
   voter, local or remote, designated or not (the cross-policy escape hatch);
3. a `selected` vote whose optionId is missing or not offered -> `InvalidOption`
   (400), before any policy check;
4. the policy branch; a policy literal without a branch -> `PolicyNotImplemented`
   (501).

Consensus: quorum is `floor(M/2)+1` votes for the same optionId, M being the
voters eligible at issue time (`voters_at_issue` when given, else
`eligible_voters`, at least 1). A client's later vote replaces its earlier one.
Votes need a client id (`X-Qwen-Client-Id`): an anonymous voter, or one outside
`voters_at_issue`, is refused with `designated_mismatch` as in the reference.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from runtime.failures import WireError

Policy = Literal["first-responder", "designated", "consensus", "local-only", "unanimous"]
"""Every policy literal the contract knows. `unanimous` is reserved for a future
policy: it validates, but has no mediation branch yet (501)."""

POLICIES: tuple[str, ...] = ("first-responder", "designated", "consensus", "local-only")
"""The modes this build implements: `/capabilities` `permission_mediation.modes`."""

RESERVED_POLICIES: tuple[str, ...] = ("unanimous",)

CANCEL_SENTINEL = "__cancelled__"
"""The optionId a `{"outcome":"cancelled"}` vote stands for; an agent may not offer it."""

ForbiddenReason = Literal["designated_mismatch", "remote_not_allowed"]

# Wire texts of the reference daemon.
INVALID_OUTCOME_ERROR = (
    '`outcome` must be `{ outcome: "cancelled" }` or `{ outcome: "selected", optionId: string }`'
)
NO_PENDING_ERROR = "No pending permission request"
NO_PENDING_FOR_SESSION_ERROR = "No pending permission request for session"


class PermissionOption(BaseModel):
    """One ACP `PermissionOption` as the agent offers it."""

    optionId: str
    name: str
    kind: str  # allow_always | allow_once | reject_once | reject_always


class PendingPermission(BaseModel):
    """The state of one pending permission request, as the session workflow keeps it."""

    request_id: str
    session_id: str
    prompt_id: str | None
    options: list[PermissionOption]
    policy: Policy
    designated_client_id: str | None = None
    """For `designated`: the only client who may select (the prompt's originator).
    Also stamped as `originatorClientId` on partial-vote and forbidden events."""
    eligible_voters: int = 1
    """M for `consensus`: the clients attached to the session at issue time."""
    voters_at_issue: list[str] | None = None
    """Optional consensus snapshot of eligible client ids; when given, it decides
    eligibility and M = len(voters_at_issue) (overriding `eligible_voters`)."""
    votes: dict[str, str] = Field(default_factory=dict)
    """Consensus tally: client id -> optionId (one live vote per client)."""

    def option_ids(self) -> list[str]:
        return [option.optionId for option in self.options]


class Vote(BaseModel):
    """One vote, with the identity the daemon (not the client body) established."""

    client_id: str | None
    is_local: bool
    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None


class PermissionEvent(BaseModel):
    """An event to append to the session's journal (SSE `type` and `data`)."""

    type: Literal["permission_partial_vote"]
    data: dict[str, Any]
    prompt_id: str | None = None
    originator_client_id: str | None = None


class _Result(BaseModel):
    request_id: str
    session_id: str


class Resolved(_Result):
    """The vote decides the request: 200 {}; the workflow emits `permission_resolved`
    with `acp_outcome()`."""

    kind: Literal["resolved"] = "resolved"
    outcome: Literal["selected", "cancelled"]
    option_id: str | None
    by_client_id: str | None

    def acp_outcome(self) -> dict[str, str]:
        """The ACP `RequestPermissionOutcome` to hand back to the agent."""
        if self.outcome == "selected" and self.option_id is not None:
            return {"outcome": "selected", "optionId": self.option_id}
        return {"outcome": "cancelled"}


class PartialVote(_Result):
    """Consensus vote recorded below quorum: 200 {} and `permission_partial_vote`.

    `updated` is the pending state with this vote in its tally; the caller keeps it.
    """

    kind: Literal["partial_vote"] = "partial_vote"
    event: PermissionEvent
    votes: int
    quorum: int
    votes_needed: int
    option_id: str
    by_client_id: str
    option_tallies: dict[str, int]
    updated: PendingPermission


class Forbidden(_Result, WireError):
    """The policy refuses this voter: 403 `permission_forbidden`."""

    kind: Literal["forbidden"] = "forbidden"
    reason: ForbiddenReason
    client_id: str | None

    @property
    def http_status(self) -> int:
        return 403

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "The permission policy rejected this vote",
            "code": "permission_forbidden",
            "reason": self.reason,
            "requestId": self.request_id,
            "sessionId": self.session_id,
        }


class InvalidOption(_Result, WireError):
    """A selected vote without an offered optionId: 400 `invalid_option_id`."""

    kind: Literal["invalid_option"] = "invalid_option"
    option_id: str | None

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        if self.option_id is None:
            error = (
                f"Permission {self.request_id}: a selected vote needs an optionId "
                "from the set of options the agent offered."
            )
        else:
            error = (
                f'Permission {self.request_id}: optionId "{self.option_id}" '
                "is not in the set of options the agent offered."
            )
        return {
            "error": error,
            "code": "invalid_option_id",
            "requestId": self.request_id,
            "optionId": self.option_id,
        }


class SentinelCollision(_Result, WireError):
    """The agent offered the reserved cancel sentinel: 500 `cancel_sentinel_collision`."""

    kind: Literal["sentinel_collision"] = "sentinel_collision"
    sentinel: str = CANCEL_SENTINEL

    @property
    def http_status(self) -> int:
        return 500

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "The agent offered the reserved cancel sentinel",
            "code": "cancel_sentinel_collision",
            "requestId": self.request_id,
        }


class PolicyNotImplemented(_Result, WireError):
    """A policy literal with no branch in this build: 501."""

    kind: Literal["policy_not_implemented"] = "policy_not_implemented"
    policy: str

    @property
    def http_status(self) -> int:
        return 501

    def response_body(self) -> dict[str, Any]:
        return {
            "error": "Permission policy not implemented",
            "code": "permission_policy_not_implemented",
            "policy": self.policy,
        }


class NotPending(WireError):
    """No pending request with this id (never raised, or already resolved): 404.

    The body names the route's scope: a session-scoped vote route answers with its
    session (`scoped_to`), which the workflow does not know; the route sets it."""

    kind: Literal["permission_not_pending"] = "permission_not_pending"
    request_id: str
    scoped_to: str | None = None

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return not_found_body(self.request_id, self.scoped_to)


Mediation = Annotated[
    Resolved | PartialVote | Forbidden | InvalidOption | SentinelCollision | PolicyNotImplemented,
    Field(discriminator="kind"),
]


# --------------------------------------------------------------------------- mediation


def has_sentinel_collision(options: list[PermissionOption]) -> bool:
    """True when the agent offered the reserved cancel sentinel as an optionId."""
    return any(option.optionId == CANCEL_SENTINEL for option in options)


def consensus_quorum(pending: PendingPermission) -> int:
    """floor(M/2)+1, M = the eligible voters at issue time (at least 1)."""
    if pending.voters_at_issue is not None:
        m = len(set(pending.voters_at_issue))
    else:
        m = pending.eligible_voters
    return max(m, 1) // 2 + 1


def option_tallies(votes: dict[str, str]) -> dict[str, int]:
    """optionId -> number of clients whose live vote is for it (first-vote order)."""
    tallies: dict[str, int] = {}
    for option_id in votes.values():
        tallies[option_id] = tallies.get(option_id, 0) + 1
    return tallies


def mediate(pending: PendingPermission, vote: Vote) -> Mediation:
    """Apply `pending.policy` to one vote. Pure: returns a new state, mutates nothing."""
    rid, sid = pending.request_id, pending.session_id
    if has_sentinel_collision(pending.options):
        return SentinelCollision(request_id=rid, session_id=sid)
    if vote.outcome == "cancelled":
        return _resolve(pending, "cancelled", None, vote.client_id)
    option_id = vote.option_id
    if option_id is None or option_id not in pending.option_ids():
        return InvalidOption(request_id=rid, session_id=sid, option_id=option_id)

    policy = pending.policy
    if policy == "first-responder":
        return _resolve(pending, "selected", option_id, vote.client_id)
    if policy == "designated":
        designated = pending.designated_client_id
        if designated is not None and vote.client_id != designated:
            return _forbid(pending, vote, "designated_mismatch")
        return _resolve(pending, "selected", option_id, vote.client_id)
    if policy == "consensus":
        return _consensus(pending, vote, option_id)
    if policy == "local-only":
        if not vote.is_local:
            return _forbid(pending, vote, "remote_not_allowed")
        return _resolve(pending, "selected", option_id, vote.client_id)
    return PolicyNotImplemented(request_id=rid, session_id=sid, policy=str(policy))


def _consensus(pending: PendingPermission, vote: Vote, option_id: str) -> Mediation:
    client_id = vote.client_id
    if client_id is None:
        return _forbid(pending, vote, "designated_mismatch")
    if pending.voters_at_issue is not None and client_id not in pending.voters_at_issue:
        return _forbid(pending, vote, "designated_mismatch")
    votes = {key: value for key, value in pending.votes.items() if key != client_id}
    votes[client_id] = option_id
    tallies = option_tallies(votes)
    quorum = consensus_quorum(pending)
    if tallies[option_id] >= quorum:
        return _resolve(pending, "selected", option_id, client_id)
    votes_needed = max(quorum - max(tallies.values()), 1)
    event = PermissionEvent(
        type="permission_partial_vote",
        data={
            "requestId": pending.request_id,
            "sessionId": pending.session_id,
            "votesReceived": len(votes),
            "votesNeeded": votes_needed,
            "quorum": quorum,
            "optionTallies": dict(tallies),
        },
        prompt_id=pending.prompt_id,
        originator_client_id=pending.designated_client_id,
    )
    return PartialVote(
        request_id=pending.request_id,
        session_id=pending.session_id,
        event=event,
        votes=len(votes),
        quorum=quorum,
        votes_needed=votes_needed,
        option_id=option_id,
        by_client_id=client_id,
        option_tallies=tallies,
        updated=pending.model_copy(update={"votes": votes}, deep=True),
    )


def _resolve(
    pending: PendingPermission,
    outcome: Literal["selected", "cancelled"],
    option_id: str | None,
    by_client_id: str | None,
) -> Resolved:
    return Resolved(
        request_id=pending.request_id,
        session_id=pending.session_id,
        outcome=outcome,
        option_id=option_id if outcome == "selected" else None,
        by_client_id=by_client_id,
    )


def _forbid(pending: PendingPermission, vote: Vote, reason: ForbiddenReason) -> Forbidden:
    return Forbidden(
        request_id=pending.request_id,
        session_id=pending.session_id,
        reason=reason,
        client_id=vote.client_id,
    )


# --------------------------------------------------------------------------- 404 body


def not_found_body(request_id: str, session_id: str | None = None) -> dict[str, Any]:
    """404 body: no pending request (by id, or by id within the route's session)."""
    if session_id is None:
        return {"error": NO_PENDING_ERROR, "requestId": request_id}
    return {
        "error": NO_PENDING_FOR_SESSION_ERROR,
        "sessionId": session_id,
        "requestId": request_id,
    }
