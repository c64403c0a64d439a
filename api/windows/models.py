"""Bodies of the Windows pool routes (/api/v1/tenants/{tenant}/windows/...)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.openapi import ERROR_REF, SCHEMAS
from runtime.windows.errors import WindowsErrorCode, http_status_of
from runtime.windows.lease_contracts import LeaseView


class WindowsVerbArgs(BaseModel):
    """The verb's arguments, under the names the pool takes (README, "Windows machine
    pool"): e.g. windows_launch `{"program", "args"?, "waitForWindowMs"?}`."""

    model_config = ConfigDict(extra="allow")


class WindowsVerbResult(BaseModel):
    result: Any = Field(description="The verb's result, as the pool answered it.")


class WindowsErrorBody(BaseModel):
    code: str = Field(description="One code of spec standing-agents §2.3 (FEATURE_DISABLED, ...).")
    message: str
    data: dict[str, Any] = Field(
        description="httpStatus, retryable, poolDetail (projected on a call that carried a "
        "secret), sessionEvicted on a 404 of the pool, reason on a refusal of agentrt's own "
        "(holder_settled, unknown_holder)."
    )


class WindowsVerbError(BaseModel):
    error: WindowsErrorBody


class WindowsLeases(BaseModel):
    leases: list[LeaseView]


def _verb_error_schema() -> dict[str, Any]:
    """A verb's own errors are `{"error": {code, message, data}}`; the house's (a path or
    body the app refuses before the route runs, the security chain) are `Error`."""
    schema = WindowsVerbError.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, definition in schema.pop("$defs", {}).items():
        SCHEMAS.setdefault(name, definition)
    SCHEMAS.setdefault("WindowsVerbError", schema)
    return {"anyOf": [{"$ref": "#/components/schemas/WindowsVerbError"}, ERROR_REF]}


_VERB_ERROR_SCHEMA = _verb_error_schema()

# What each code means to a direct client, in the route's documented responses.
_CODE_NOTES: dict[WindowsErrorCode, str] = {
    WindowsErrorCode.FEATURE_DISABLED: "the tenant's windows-pool feature is off",
    WindowsErrorCode.VALIDATION_ERROR: (
        "an unknown verb, a refused argument, or a session-/turn-/agent- holder that is not "
        "this tenant's (reason unknown_holder) or has settled (reason holder_settled); "
        "nothing leased"
    ),
    WindowsErrorCode.DESKTOP_UNAVAILABLE: "the host has no interactive desktop",
    WindowsErrorCode.ELEMENT_NOT_FOUND: "take a new snapshot",
    WindowsErrorCode.WINDOW_NOT_FOUND: "list the windows again",
    WindowsErrorCode.WAIT_TIMEOUT: "the awaited state did not come; elapsedMs",
    WindowsErrorCode.UI_TIMEOUT: "the guest did not answer within the pool's budget",
    WindowsErrorCode.SECRET_NOT_FOUND: "the secret is not provisioned",
    WindowsErrorCode.SECRET_TARGET_NOT_MASKED: "a secret goes into a password control only",
    WindowsErrorCode.WINDOW_NOT_FOREGROUND: "focus the target and retry",
    WindowsErrorCode.INPUT_BLOCKED: "a higher-integrity window or a locked desktop",
    WindowsErrorCode.POOL_UNAVAILABLE: "the pool did not answer",
    WindowsErrorCode.POOL_ERROR: "the pool answered 5xx; holders when saturated",
    WindowsErrorCode.UNAUTHENTICATED: "the pool refused agentrt's credential",
    WindowsErrorCode.FORBIDDEN: "the pool forbade agentrt's credential",
    WindowsErrorCode.NOT_FOUND: "sessionEvicted: true; the next verb leases anew",
    WindowsErrorCode.CONFLICT: "a build is running: its taskHandle is in poolDetail",
    WindowsErrorCode.RATE_LIMITED: "the pool is rate limiting",
    WindowsErrorCode.BAD_REQUEST: "the pool refused the call",
}
# Statuses the route answers outside the Windows vocabulary (the house's Error).
_HOUSE_NOTES: dict[int, str] = {503: "no worker answered in time (worker_unavailable)"}


def _descriptions() -> dict[int, str]:
    """Per status, the codes that answer it: built from errors.http_status_of, so the
    document says what the route sends."""
    by_status: dict[int, list[str]] = {}
    for code in WindowsErrorCode:
        by_status.setdefault(http_status_of(code), []).append(f"{code.value} ({_CODE_NOTES[code]})")
    for status, note in _HOUSE_NOTES.items():
        by_status.setdefault(status, []).append(note)
    return {status: "; ".join(parts) + "." for status, parts in sorted(by_status.items())}


# `responses=` of the verb route.
VERB_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {
        "description": description,
        "content": {"application/json": {"schema": _VERB_ERROR_SCHEMA}},
    }
    for status, description in _descriptions().items()
}
