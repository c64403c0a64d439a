"""Typed failures across Temporal: each refusal model survives the trip through the
project's converter as an `ApplicationError`, and the API answers it with its own body."""

from __future__ import annotations

import pytest
from temporalio.api.failure.v1 import Failure
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError

from api.errors import ApiError
from runtime.agent_tools.browser import BrowserCheckFailed, MutationRateLimited
from runtime.agent_tools.calls import IdempotencyConflict
from runtime.agent_tools.errors import (
    AuthorizationPending,
    ResearchDenied,
    ResultNotFound,
    TurnExists,
    TurnNotFound,
    TurnNotStarted,
    TurnNotWaiting,
)
from runtime.backpressure import SubscriberLimitExceeded
from runtime.failures import (
    InvalidRequest,
    RelayedRefusal,
    TokenRequired,
    UpdateExpired,
    WireError,
    WorkerUnavailable,
    decode_failure,
    wire_error_kinds,
)
from runtime.investigation.research import (
    InvalidResearchDecision,
    ResearchNoLongerPrepared,
    UnknownResearch,
)
from runtime.sessions.approval_modes import InvalidApprovalMode
from runtime.sessions.errors import (
    ModelSwitchFailed,
    PromptQueueFull,
    PromptTooLarge,
    RestoreInProgress,
    SessionLimitExceeded,
    SessionNotFound,
    WorkspaceMismatch,
)
from runtime.sessions.permissions import (
    Forbidden,
    InvalidOption,
    NotPending,
    PolicyNotImplemented,
    SentinelCollision,
)
from runtime.standing_agents.configs import ConfigKeyNotFound, InvalidConfigValue
from runtime.standing_agents.control import SoaAlreadyExists, TickInProgress
from runtime.standing_agents.decision_queue import DecisionAlreadyResolved, DecisionNotFound
from runtime.standing_agents.errors import AgentNotFound, InvalidEventKind, StandingAgentsDisabled
from runtime.standing_agents.modes import UnknownMode
from runtime.standing_agents.registry_store import AgentIdReserved, AgentNotRegistered
from runtime.workspace.errors import WorkspaceInitConflict

REFUSALS: list[WireError] = [
    Forbidden(request_id="r", session_id="s", reason="designated_mismatch", client_id="c"),
    InvalidOption(request_id="r", session_id="s", option_id="nope"),
    SentinelCollision(request_id="r", session_id="s"),
    PolicyNotImplemented(request_id="r", session_id="s", policy="unanimous"),
    NotPending(request_id="r"),
    PromptQueueFull(session_id="s", limit=5),
    SessionNotFound(session_id="s"),
    InvalidApprovalMode(),
    TurnNotWaiting(turn_id="t", status="completed"),
    AuthorizationPending(turn_id="t", research_id="r"),
    ResearchDenied(turn_id="t", research_id="r"),
    UpdateExpired(),
    WorkerUnavailable(),
    TurnNotFound(turn_id="t"),
    TurnExists(turn_id="t"),
    TurnNotStarted(turn_id="t"),
    ResultNotFound(result_id="r"),
    IdempotencyConflict(idempotency_key="k"),
    InvalidRequest(message="m", code="c", details={"field": "f", "allowedFields": ["f"]}),
    SessionLimitExceeded(limit=3),
    WorkspaceMismatch(bound="/a", requested="/b"),
    PromptTooLarge(size=9, limit=8),
    RestoreInProgress(session_id="s", active_action="load", requested_action="resume"),
    ModelSwitchFailed(model_id="m", reason="r"),
    RelayedRefusal(status=404, code="unknown_preset", message="m"),
    WorkspaceInitConflict(path="/w/AGENTS.md", existing_size=3),
    SubscriberLimitExceeded(limit=2),
    TokenRequired(),
    BrowserCheckFailed(check="csrf_invalid"),
    MutationRateLimited(limit=60, retry_after_ms=1500, retry_after=2),
    AgentNotFound(instance_id="a"),
    StandingAgentsDisabled(tenant="t"),
    InvalidEventKind(event_kind="ExternalSignalReceived", allowed=["k"], to_soa=True),
    SoaAlreadyExists(instance_id="soa-1"),
    TickInProgress(),
    UnknownMode(mode="m", allowed=["a"]),
    DecisionNotFound(decision_id="d"),
    DecisionAlreadyResolved(decision_id="d", resolution="approve"),
    AgentIdReserved(agent_id="soa-x"),
    AgentNotRegistered(agent_id="a"),
    ConfigKeyNotFound(key="k"),
    InvalidConfigValue(key="k", message="m"),
    UnknownResearch(research_id="r"),
    ResearchNoLongerPrepared(research_id="r", state="denied"),
    InvalidResearchDecision(message="m"),
]


def _across_temporal(err: ApplicationError) -> BaseException:
    """What a client sees of an error a worker raised: encoded, then decoded."""
    converter = pydantic_data_converter
    failure = Failure()
    converter.failure_converter.to_failure(err, converter.payload_converter, failure)
    return converter.failure_converter.from_failure(failure, converter.payload_converter)


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda r: r.kind_name)
def test_a_refusal_crosses_temporal_whole(refusal: WireError) -> None:
    back = _across_temporal(refusal.application_error())
    assert isinstance(back, ApplicationError)
    assert back.type == refusal.kind_name
    assert back.non_retryable is not refusal.retryable  # as the kind declares
    # The client decodes details without type hints: plain JSON, the model's fields.
    assert back.details[0] == refusal.model_dump(mode="json")
    decoded = decode_failure(back)
    assert decoded == refusal
    assert type(decoded) is type(refusal)
    answer = ApiError.of(decoded)
    assert (answer.status, answer.body) == (refusal.http_status, refusal.response_body())


def test_untyped_errors_decode_to_nothing() -> None:
    assert decode_failure(_across_temporal(ApplicationError("boom", type="other"))) is None
    assert decode_failure(ValueError("prompt_queue_full")) is None


def test_every_kind_is_registered_once() -> None:
    kinds = wire_error_kinds()
    for refusal in REFUSALS:
        assert kinds[refusal.kind_name] is type(refusal)


def test_queue_full_asks_to_retry() -> None:
    answer = ApiError.of(PromptQueueFull(session_id="s", limit=5))
    assert answer.status == 503
    assert answer.headers == {"Retry-After": "5"}
    assert answer.body == {
        "error": "Prompt queue is full (5 prompts, the active one included)",
        "code": "prompt_queue_full",
        "limit": 5,
        "pendingCount": 5,
        "sessionId": "s",
    }


def test_an_expired_update_is_a_worker_that_did_not_answer() -> None:
    """The validator's refusal of an update its sender stopped waiting for is typed like
    any other (no kind matched by its string), and answered as a worker that did not
    answer in time; one raised without details (a worker of the version before) too."""
    for raised in (
        UpdateExpired().application_error(),
        ApplicationError("stopped waiting", type="update_expired", non_retryable=True),
    ):
        decoded = decode_failure(_across_temporal(raised))
        assert isinstance(decoded, UpdateExpired)
        answer = ApiError.of(decoded)
        assert (answer.status, answer.headers) == (503, {"Retry-After": "5"})
        assert answer.body == {"error": "No worker answered in time", "code": "worker_unavailable"}


def test_a_model_routing_refusal_is_retried_by_an_activity_but_the_chain_resolution_stops() -> None:
    """A preset deleted under a bind reads consistent on the next attempt: an activity that
    meets a model-routing refusal retries (as when it was a ValueError); `resolve_chain`
    asks for the final form."""
    from runtime.llm.config_errors import UnknownPreset

    refusal = UnknownPreset(preset_id="p")
    assert not refusal.application_error().non_retryable
    assert refusal.application_error(retryable=False).non_retryable
    assert UpdateExpired().application_error().non_retryable
