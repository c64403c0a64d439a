"""Bodies of the Windows pool routes (/api/v1/tenants/{tenant}/windows/...)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.openapi import ERROR_REF, SCHEMAS
from runtime.windows_pool.lease import LeaseView


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
        "secret), sessionEvicted on a 404 of the pool."
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

# `responses=` of the verb route.
VERB_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {
        "description": description,
        "content": {"application/json": {"schema": _VERB_ERROR_SCHEMA}},
    }
    for status, description in {
        400: "VALIDATION_ERROR, BAD_REQUEST (an unknown verb, a refused argument).",
        401: "UNAUTHENTICATED: the pool refused agentrt's credential.",
        403: "FEATURE_DISABLED (the tenant's windows-pool feature is off), FORBIDDEN.",
        404: "NOT_FOUND (sessionEvicted: true), ELEMENT_NOT_FOUND, WINDOW_NOT_FOUND, "
        "SECRET_NOT_FOUND.",
        409: "CONFLICT (a build is running: its taskHandle is in poolDetail), "
        "WINDOW_NOT_FOREGROUND, INPUT_BLOCKED, SECRET_TARGET_NOT_MASKED.",
        429: "RATE_LIMITED.",
        502: "POOL_ERROR (the pool answered 5xx; holders when saturated).",
        503: "POOL_UNAVAILABLE, DESKTOP_UNAVAILABLE; or no worker answered in time.",
        504: "UI_TIMEOUT, WAIT_TIMEOUT.",
    }.items()
}
