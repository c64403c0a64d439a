"""The Windows pool lane's contracts (spec standing-agents §2.3, "Voie Windows"; issue 12).

What the lease workflow, the pool activities and the routes share about the pool: the
pool session, and the activities by name (`WindowsPoolActivity`) with their inputs and
outputs. The verbs, their arguments and time budgets are in `runtime.windows.verbs`; the
error vocabulary in `runtime.windows.errors`.

Pure: no I/O, so workflows import it through `imports_passed_through`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, Field
from temporalio.common import RetryPolicy

from runtime.activity_contract import ActivityContract
from runtime.windows.verbs import WindowsVerb

# --- The pool session and the activities ---------------------------------------------------

DesktopKind = Literal["interactive", "session_0"]


class PoolSession(BaseModel):
    """A leased machine: the pool's session (POST /v1/sessions' answer)."""

    session_id: str
    host: str
    expires_at: datetime
    desktop: DesktopKind


class WindowsPoolActivity(StrEnum):
    """The pool activities by name (activities/windows/pool.py implements them). Each
    raises a `WindowsError` (`decode_failure` reads it) when the pool refuses or is silent.
    OPEN_SESSION and CALL_VERB raise it non-retryable (a lost answer to an open may have
    leased a machine; a verb is not idempotent). RENEW and CLOSE_SESSION are idempotent:
    their POOL_UNAVAILABLE / POOL_ERROR / RATE_LIMITED are retryable, so the workflow's
    retry policy for them applies (POOL_RETRY_POLICY: none)."""

    OPEN_SESSION = "windows_pool.open_session"
    RENEW = "windows_pool.renew"
    CLOSE_SESSION = "windows_pool.close_session"
    CALL_VERB = "windows_pool.call_verb"


# A verb's activity runs once (a click retried clicks twice); the workflow may give RENEW
# and CLOSE_SESSION a policy of its own.
POOL_RETRY_POLICY = RetryPolicy(maximum_attempts=1)


class OpenSessionInput(BaseModel):
    """OPEN_SESSION's argument: lease a machine for `holder` of `tenant`, asking the pool
    for `lease_ms`."""

    tenant: str
    holder: str
    lease_ms: int


class RenewInput(BaseModel):
    """RENEW's argument: renew the session's lease, asking the pool for `lease_ms`."""

    session_id: str
    lease_ms: int


class RenewResult(BaseModel):
    """RENEW's result: when the renewed lease ends."""

    expires_at: datetime


class CloseSessionInput(BaseModel):
    """CLOSE_SESSION's argument: the session to give back to the pool."""

    session_id: str


class CloseSessionResult(BaseModel):
    """`closed` is False when the pool no longer knew the session (404: evicted or expired);
    either way nothing is held afterwards."""

    closed: bool


class CallVerbInput(BaseModel):
    """One verb on a held session. `args` went through `validate_and_clamp`. `tenant` and
    `holder` name the caller (a screenshot is stored under them)."""

    tenant: str
    holder: str
    session: PoolSession
    verb: WindowsVerb
    args: dict[str, Any] = Field(default_factory=dict)


class CallVerbResult(BaseModel):
    """The verb's result as the pool gave it, except windows_screenshot's image: stored,
    and replaced by a `ScreenshotResult` (the image never crosses Temporal)."""

    result: dict[str, Any]


class ScreenshotResult(BaseModel):
    """windows_screenshot's result: a reference to the stored image
    (`activities.windows.pool.read_screenshot(ref)` reads it back)."""

    screenshotRef: str
    mimeType: str
    width: int | None = None
    height: int | None = None
    hwnd: int | None = None
    bytes: int


ReleaseOutcome = Literal["released", "not_held", "evicted"]


class ReleaseResult(BaseModel):
    """windows_release's result: `not_held` when nothing was held (nothing called),
    `evicted` when the pool no longer knew the session (nothing held either)."""

    released: bool
    outcome: ReleaseOutcome


class WindowsPoolActivityContracts:
    """Each WindowsPoolActivity with the types of its argument and result."""

    OPEN_SESSION: Final = ActivityContract(
        WindowsPoolActivity.OPEN_SESSION, OpenSessionInput, PoolSession
    )
    RENEW: Final = ActivityContract(WindowsPoolActivity.RENEW, RenewInput, RenewResult)
    CLOSE_SESSION: Final = ActivityContract(
        WindowsPoolActivity.CLOSE_SESSION, CloseSessionInput, CloseSessionResult
    )
    CALL_VERB: Final = ActivityContract(
        WindowsPoolActivity.CALL_VERB, CallVerbInput, CallVerbResult
    )
