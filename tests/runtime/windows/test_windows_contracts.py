"""The Windows lane's pure contracts: validation before any lease, the clamps, the budgets
(guest < pool < core), and the error vocabulary with the secret projection."""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.api.failure.v1 import Failure
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError

from runtime.failures import decode_failure
from runtime.windows.errors import (
    SECRET_PROJECTION_KEYS,
    WindowsError,
    WindowsErrorCode,
    map_pool_error,
)
from runtime.windows.lease_contracts import holder_settled, known_holder, unknown_holder
from runtime.windows.verbs import (
    ARGS_MODELS,
    MAX_WAIT_FOR_TIMEOUT_MS,
    MAX_WAIT_FOR_WINDOW_MS,
    WindowsVerb,
    carries_secret,
    clamp_waits,
    http_timeout,
    parse_verb,
    pool_budget_ms,
    pool_request,
    validate_and_clamp,
)


def refusal(verb: WindowsVerb, args: dict[str, Any]) -> WindowsError:
    with pytest.raises(ApplicationError) as info:
        validate_and_clamp(verb, args)
    err = decode_failure(info.value)
    assert isinstance(err, WindowsError)
    assert info.value.non_retryable
    return err


def test_every_verb_has_an_argument_model_and_a_pool_path() -> None:
    assert set(ARGS_MODELS) == set(WindowsVerb)
    assert pool_request(WindowsVerb.RUN_SPEC, "s1", {}) == ("POST", "/v1/sessions/s1/run-spec")
    assert pool_request(WindowsVerb.TASK_STATUS, "s1", {"taskHandle": "t9"}) == (
        "GET",
        "/v1/sessions/s1/tasks/t9",
    )
    assert pool_request(WindowsVerb.RELEASE, "s1", {}) == ("DELETE", "/v1/sessions/s1")
    assert pool_request(WindowsVerb.WAIT_FOR, "s1", {}) == (
        "POST",
        "/v1/sessions/s1/desktop/wait_for",
    )
    assert pool_request(WindowsVerb.WINDOWS, "s1", {}) == (
        "POST",
        "/v1/sessions/s1/desktop/windows",
    )


@pytest.mark.parametrize(
    "args",
    [
        {"ref": "e1"},  # neither text nor secretRef
        {"text": "a", "secretRef": "pw", "ref": "e1"},  # both
        {"secretRef": "vault/pw"},  # not a bare name
        {"secretRef": "secret://pw"},
        {"secretRef": ""},
        {"text": "a", "color": "red"},  # unknown argument
    ],
)
def test_windows_type_source_rules_are_validation_errors(args: dict[str, Any]) -> None:
    err = refusal(WindowsVerb.TYPE, args)
    assert err.code is WindowsErrorCode.VALIDATION_ERROR
    assert err.http_status == 400
    assert err.data.httpStatus is None and err.data.retryable is False


def test_valid_windows_type_passes_as_given() -> None:
    assert validate_and_clamp(WindowsVerb.TYPE, {"secretRef": "app-password", "ref": "e3"}) == {
        "secretRef": "app-password",
        "ref": "e3",
    }
    assert carries_secret(WindowsVerb.TYPE, {"secretRef": "x"})
    assert not carries_secret(WindowsVerb.TYPE, {"text": "x"})


def test_other_shapes_are_refused_before_any_lease() -> None:
    assert refusal(WindowsVerb.CLICK, {}).code is WindowsErrorCode.VALIDATION_ERROR
    assert refusal(WindowsVerb.CLICK, {"x": 3}).code is WindowsErrorCode.VALIDATION_ERROR
    assert (
        refusal(WindowsVerb.WAIT_FOR, {"state": "gone", "timeoutMs": 5}).code
        is WindowsErrorCode.VALIDATION_ERROR
    )
    assert refusal(WindowsVerb.FOCUS, {}).code is WindowsErrorCode.VALIDATION_ERROR
    assert refusal(WindowsVerb.COMPUTER, {"action": "dance"}).code is (
        WindowsErrorCode.VALIDATION_ERROR
    )
    for computer in ({"action": "type"}, {"action": "key", "text": ""}, {"action": "move", "x": 1}):
        assert refusal(WindowsVerb.COMPUTER, computer).code is WindowsErrorCode.VALIDATION_ERROR
    assert validate_and_clamp(WindowsVerb.COMPUTER, {"action": "click"}) == {"action": "click"}
    with pytest.raises(ApplicationError) as info:
        parse_verb("windows_lease")
    err = decode_failure(info.value)
    assert isinstance(err, WindowsError) and err.code is WindowsErrorCode.VALIDATION_ERROR


def test_waits_are_clamped_not_refused_and_always_explicit() -> None:
    title = {"title": "T", "state": "exists"}
    wait = validate_and_clamp(WindowsVerb.WAIT_FOR, title | {"timeoutMs": 3_600_000})
    assert wait["timeoutMs"] == MAX_WAIT_FOR_TIMEOUT_MS == 600_000
    launch = validate_and_clamp(WindowsVerb.LAUNCH, {"program": "a.exe", "waitForWindowMs": 90_000})
    assert launch["waitForWindowMs"] == MAX_WAIT_FOR_WINDOW_MS == 55_000
    assert "waitForWindowMs" in validate_and_clamp(WindowsVerb.LAUNCH, {"program": "a.exe"})
    small = validate_and_clamp(
        WindowsVerb.WAIT_FOR, {"ref": "e1", "state": "gone", "timeoutMs": 100}
    )
    assert small == {"ref": "e1", "state": "gone", "timeoutMs": 100}


@pytest.mark.parametrize(
    "args",
    [
        {"title": "T", "timeoutMs": 100},  # no state
        {"title": "T", "state": "exists"},  # no timeoutMs
        {"title": "T", "state": "visible", "timeoutMs": 100},  # not a state
        {"state": "exists", "timeoutMs": 100},  # no subject
        {"ref": "e1", "title": "T", "state": "exists", "timeoutMs": 100},  # two subjects
        {"title": "T", "state": "exists", "timeoutMs": -1},
    ],
)
def test_windows_wait_for_needs_one_subject_a_state_and_a_timeout(args: dict[str, Any]) -> None:
    assert refusal(WindowsVerb.WAIT_FOR, args).code is WindowsErrorCode.VALIDATION_ERROR


TARGETS_REFUSED = [
    {},  # none
    {"name": "Save"},  # name without controlType
    {"controlType": "Button"},  # controlType without name
    {"x": 3},  # x without y
    {"y": 3},
    {"ref": "e1", "automationId": "save"},  # two forms
    {"automationId": "save", "x": 1, "y": 2},
    {"ref": "e1", "name": "Save", "controlType": "Button"},
    {"ref": "button-1"},  # not a snapshot ref
]
TARGETS_ACCEPTED = [
    {"ref": "e4"},
    {"automationId": "save"},
    {"name": "Save", "controlType": "Button"},
    {"x": 10, "y": 20},
]


@pytest.mark.parametrize("target", TARGETS_REFUSED)
def test_click_and_type_refuse_anything_but_one_whole_target(target: dict[str, Any]) -> None:
    assert refusal(WindowsVerb.CLICK, target).code is WindowsErrorCode.VALIDATION_ERROR
    err = refusal(WindowsVerb.TYPE, target | {"text": "hello"})
    assert err.code is WindowsErrorCode.VALIDATION_ERROR and "windows_type" in err.message


@pytest.mark.parametrize("target", TARGETS_ACCEPTED)
def test_click_and_type_take_each_target_form(target: dict[str, Any]) -> None:
    assert validate_and_clamp(WindowsVerb.CLICK, target) == target
    assert validate_and_clamp(WindowsVerb.TYPE, target | {"text": "hi"}) == target | {"text": "hi"}


def test_the_lease_handler_clamps_without_validating_again() -> None:
    """A call accepted under older rules (no state, no target) replays as it ran then."""
    assert clamp_waits(WindowsVerb.WAIT_FOR, {"title": "T", "timeoutMs": 3_600_000}) == {
        "title": "T",
        "timeoutMs": MAX_WAIT_FOR_TIMEOUT_MS,
    }
    assert clamp_waits(WindowsVerb.TYPE, {"text": "a"}) == {"text": "a"}
    assert clamp_waits(WindowsVerb.LAUNCH, {"program": "a.exe"})["waitForWindowMs"] == 10_000


def test_budgets_are_ordered_guest_pool_core() -> None:
    launch = validate_and_clamp(WindowsVerb.LAUNCH, {"program": "a.exe", "waitForWindowMs": 55_000})
    assert pool_budget_ms(WindowsVerb.LAUNCH, launch) == 65_000
    assert http_timeout(WindowsVerb.LAUNCH, launch).total_seconds() * 1000 > 65_000
    wait = validate_and_clamp(
        WindowsVerb.WAIT_FOR, {"title": "T", "state": "exists", "timeoutMs": 600_000}
    )
    assert pool_budget_ms(WindowsVerb.WAIT_FOR, wait) == 610_000
    assert http_timeout(WindowsVerb.WAIT_FOR, wait).total_seconds() * 1000 > 610_000
    assert pool_budget_ms(WindowsVerb.CLICK, {"ref": "e1"}) == 10_000


GENERIC = [
    (None, WindowsErrorCode.POOL_UNAVAILABLE, True),
    (500, WindowsErrorCode.POOL_ERROR, True),
    (503, WindowsErrorCode.POOL_ERROR, True),
    (401, WindowsErrorCode.UNAUTHENTICATED, False),
    (403, WindowsErrorCode.FORBIDDEN, False),
    (404, WindowsErrorCode.NOT_FOUND, True),
    (409, WindowsErrorCode.CONFLICT, False),
    (429, WindowsErrorCode.RATE_LIMITED, True),
    (400, WindowsErrorCode.BAD_REQUEST, False),
    (422, WindowsErrorCode.BAD_REQUEST, False),
]


@pytest.mark.parametrize(("status", "code", "retryable"), GENERIC)
def test_generic_codes_by_status(
    status: int | None, code: WindowsErrorCode, retryable: bool
) -> None:
    body = {"error": "whatever", "taskHandle": "t1"}
    err = map_pool_error(status, body, carried_secret=False)
    assert err.code is code
    assert err.data.httpStatus == status
    assert err.data.retryable is retryable
    assert err.data.poolDetail == body
    assert err.data.sessionEvicted is (True if code is WindowsErrorCode.NOT_FOUND else None)


def test_desktop_codes_pass_through_whatever_the_status() -> None:
    # A WINDOW_NOT_FOUND 404 is no eviction; a desktop 409 is not CONFLICT.
    err = map_pool_error(404, {"code": "WINDOW_NOT_FOUND"}, carried_secret=False)
    assert err.code is WindowsErrorCode.WINDOW_NOT_FOUND and err.data.sessionEvicted is None
    err = map_pool_error(409, {"code": "WINDOW_NOT_FOREGROUND"}, carried_secret=False)
    assert err.code is WindowsErrorCode.WINDOW_NOT_FOREGROUND
    err = map_pool_error(
        503, {"code": "DESKTOP_UNAVAILABLE", "reason": "session_0"}, carried_secret=False
    )
    assert err.code is WindowsErrorCode.DESKTOP_UNAVAILABLE
    assert not err.data.retryable and "session_0" in err.message
    # An unknown code in the body: the status decides.
    err = map_pool_error(409, {"code": "SOMETHING_ELSE"}, carried_secret=False)
    assert err.code is WindowsErrorCode.CONFLICT


def test_a_secret_call_projects_the_pool_body() -> None:
    body = {
        "code": "SECRET_TARGET_NOT_MASKED",
        "reason": "target_not_password",
        "state": "nothing_typed",
        "secretRef": "app-password",
        "message": "guest: the field holds 'bob'",
        "guestLog": {"nested": "GUEST-FREE-TEXT"},
    }
    err = map_pool_error(422, body, carried_secret=True, host="win-7")
    assert err.code is WindowsErrorCode.SECRET_TARGET_NOT_MASKED
    assert err.data.poolDetail == {
        "error": "SECRET_TARGET_NOT_MASKED",
        "reason": "target_not_password",
        "state": "nothing_typed",
        "secretRef": "app-password",
        "host": "win-7",
    }
    assert tuple(err.data.poolDetail) == SECRET_PROJECTION_KEYS
    wire = json.dumps(err.response_body())
    assert "bob" not in wire and "GUEST-FREE-TEXT" not in wire
    # A text body (not JSON) never passes either.
    err = map_pool_error(500, "stack trace with hunter2", carried_secret=True, host="h")
    assert "hunter2" not in json.dumps(err.response_body())


def test_error_body_shape() -> None:
    err = map_pool_error(404, {"error": "session_not_found"}, carried_secret=False)
    assert err.response_body() == {
        "error": {
            "code": "NOT_FOUND",
            "message": err.message,
            "data": {
                "httpStatus": 404,
                "retryable": True,
                "poolDetail": {"error": "session_not_found"},
                "sessionEvicted": True,
            },
        }
    }
    disabled = WindowsError.agentrt(WindowsErrorCode.FEATURE_DISABLED)
    assert disabled.http_status == 403
    assert disabled.body()["data"] == {"httpStatus": None, "retryable": False, "poolDetail": None}


def test_every_code_has_a_status_and_message() -> None:
    for code in WindowsErrorCode:
        err = WindowsError.agentrt(code)
        assert 400 <= err.http_status < 600 and err.message


async def test_the_error_crosses_temporal_typed() -> None:
    original = map_pool_error(
        409, {"error": "task_running", "taskHandle": "t7"}, carried_secret=False
    )
    failure = Failure()
    await pydantic_data_converter.encode_failure(original.application_error(), failure)
    decoded = await pydantic_data_converter.decode_failure(failure)
    err = decode_failure(decoded)
    assert err == original


def test_statuses_follow_the_codes_nature() -> None:
    """The pool refusing agentrt's own credential is the deployment's fault (502); a wait
    that did not come is an upstream timeout (504, never 408: the client was not slow); a
    secret aimed at a control that is not masked is a refused argument (422)."""
    statuses = {code: WindowsError.agentrt(code).http_status for code in WindowsErrorCode}
    assert statuses[WindowsErrorCode.UNAUTHENTICATED] == 502
    assert statuses[WindowsErrorCode.FORBIDDEN] == 502
    assert statuses[WindowsErrorCode.WAIT_TIMEOUT] == statuses[WindowsErrorCode.UI_TIMEOUT] == 504
    assert statuses[WindowsErrorCode.SECRET_TARGET_NOT_MASKED] == 422


def test_agentrt_holders_and_their_refusals() -> None:
    assert known_holder("session-abc") == ("session", "abc")
    assert known_holder("turn-t-1") == ("turn", "t-1")
    assert known_holder("agent-soa-acme") == ("agent", "soa-acme")
    for own in ("coder-1", "session-", "sessions-1", "my-session-1"):
        assert known_holder(own) is None
    settled = holder_settled("turn-t1", "turn_finished")
    assert settled.code is WindowsErrorCode.VALIDATION_ERROR and settled.http_status == 400
    assert settled.body()["data"] == {
        "httpStatus": None,
        "retryable": False,
        "poolDetail": None,
        "reason": "holder_settled",
    }
    unknown = unknown_holder("session-s1", "acme", "a session's lease is tenant 'default''s")
    assert unknown.data.reason == "unknown_holder" and "acme" in unknown.message
