"""The Windows lane's error vocabulary (spec standing-agents §2.3, "Voie Windows").

Every error of a Windows verb carries one `WindowsErrorCode`: the desktop codes are the
pool's, passed through; the generic ones are agentrt's reading of the pool's HTTP answer
(`map_pool_error`). The error's data always holds `httpStatus` (the pool's status; null
when the pool gave no answer or was not asked), `retryable`, and the pool's own body as
`poolDetail` — projected on a call that carried a secret, so that the guest's free text
never reaches the caller.

Pure: no I/O, so workflows import it through `imports_passed_through`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

from runtime.failures import WireError


class WindowsErrorCode(StrEnum):
    FEATURE_DISABLED = "FEATURE_DISABLED"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    # The desktop codes: the pool's, passed through.
    DESKTOP_UNAVAILABLE = "DESKTOP_UNAVAILABLE"
    ELEMENT_NOT_FOUND = "ELEMENT_NOT_FOUND"
    WINDOW_NOT_FOUND = "WINDOW_NOT_FOUND"
    WAIT_TIMEOUT = "WAIT_TIMEOUT"
    UI_TIMEOUT = "UI_TIMEOUT"
    SECRET_NOT_FOUND = "SECRET_NOT_FOUND"
    SECRET_TARGET_NOT_MASKED = "SECRET_TARGET_NOT_MASKED"
    WINDOW_NOT_FOREGROUND = "WINDOW_NOT_FOREGROUND"
    INPUT_BLOCKED = "INPUT_BLOCKED"
    # The pool's generic vocabulary (shared with the browser and emulator lanes).
    POOL_UNAVAILABLE = "POOL_UNAVAILABLE"
    POOL_ERROR = "POOL_ERROR"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    CONFLICT = "CONFLICT"
    RATE_LIMITED = "RATE_LIMITED"
    BAD_REQUEST = "BAD_REQUEST"


DESKTOP_CODES: frozenset[WindowsErrorCode] = frozenset(
    {
        WindowsErrorCode.DESKTOP_UNAVAILABLE,
        WindowsErrorCode.ELEMENT_NOT_FOUND,
        WindowsErrorCode.WINDOW_NOT_FOUND,
        WindowsErrorCode.WAIT_TIMEOUT,
        WindowsErrorCode.UI_TIMEOUT,
        WindowsErrorCode.SECRET_NOT_FOUND,
        WindowsErrorCode.SECRET_TARGET_NOT_MASKED,
        WindowsErrorCode.WINDOW_NOT_FOREGROUND,
        WindowsErrorCode.INPUT_BLOCKED,
    }
)

_DESKTOP_CODE_NAMES = frozenset(code.value for code in DESKTOP_CODES)

# The status agentrt answers a direct client with (REST), by the code's nature: the
# caller's mistake is 4xx, the pool's trouble 5xx. The pool refusing agentrt's own
# credential (UNAUTHENTICATED / FORBIDDEN) is the deployment's fault, not the caller's:
# 502, so that a client never takes it for a problem with its own token. WAIT_TIMEOUT is
# 504 like UI_TIMEOUT: the awaited state did not come in time upstream (408 would say the
# client was slow, and invites clients to resend automatically). SECRET_TARGET_NOT_MASKED
# is 422: the call is well formed, its target is refused. The verb route's documented
# responses are built from this table (api/windows/models.py).
_HTTP_STATUS: dict[WindowsErrorCode, int] = {
    WindowsErrorCode.FEATURE_DISABLED: 403,
    WindowsErrorCode.VALIDATION_ERROR: 400,
    WindowsErrorCode.DESKTOP_UNAVAILABLE: 503,
    WindowsErrorCode.ELEMENT_NOT_FOUND: 404,
    WindowsErrorCode.WINDOW_NOT_FOUND: 404,
    WindowsErrorCode.WAIT_TIMEOUT: 504,
    WindowsErrorCode.UI_TIMEOUT: 504,
    WindowsErrorCode.SECRET_NOT_FOUND: 404,
    WindowsErrorCode.SECRET_TARGET_NOT_MASKED: 422,
    WindowsErrorCode.WINDOW_NOT_FOREGROUND: 409,
    WindowsErrorCode.INPUT_BLOCKED: 409,
    WindowsErrorCode.POOL_UNAVAILABLE: 503,
    WindowsErrorCode.POOL_ERROR: 502,
    WindowsErrorCode.UNAUTHENTICATED: 502,
    WindowsErrorCode.FORBIDDEN: 502,
    WindowsErrorCode.NOT_FOUND: 404,
    WindowsErrorCode.CONFLICT: 409,
    WindowsErrorCode.RATE_LIMITED: 429,
    WindowsErrorCode.BAD_REQUEST: 400,
}

# Whether the same call, sent again as is, may succeed. DESKTOP_UNAVAILABLE is not:
# session_0 never changes and capture_probe_failed waits for an operator. NOT_FOUND is:
# the next call leases a new machine (its state is lost).
_RETRYABLE: frozenset[WindowsErrorCode] = frozenset(
    {
        WindowsErrorCode.WAIT_TIMEOUT,
        WindowsErrorCode.UI_TIMEOUT,
        WindowsErrorCode.POOL_UNAVAILABLE,
        WindowsErrorCode.POOL_ERROR,
        WindowsErrorCode.NOT_FOUND,
        WindowsErrorCode.RATE_LIMITED,
    }
)

_TRANSIENT: frozenset[WindowsErrorCode] = frozenset(
    {
        WindowsErrorCode.POOL_UNAVAILABLE,
        WindowsErrorCode.POOL_ERROR,
        WindowsErrorCode.RATE_LIMITED,
    }
)


def http_status_of(code: WindowsErrorCode) -> int:
    """The REST status of a code (one table: the answers and the OpenAPI document)."""
    return _HTTP_STATUS[code]


_MESSAGES: dict[WindowsErrorCode, str] = {
    WindowsErrorCode.FEATURE_DISABLED: "the windows-pool feature is disabled for this tenant",
    WindowsErrorCode.VALIDATION_ERROR: "invalid arguments; no machine was leased",
    WindowsErrorCode.DESKTOP_UNAVAILABLE: "the leased host has no interactive desktop",
    WindowsErrorCode.ELEMENT_NOT_FOUND: "no such element; take a new windows_snapshot",
    WindowsErrorCode.WINDOW_NOT_FOUND: "no such window; list them again with windows_windows",
    WindowsErrorCode.WAIT_TIMEOUT: "the awaited state was not reached in time",
    WindowsErrorCode.UI_TIMEOUT: (
        "the guest did not answer within the pool's budget (a modal dialog may block the "
        "desktop: windows_screenshot shows it); retry"
    ),
    WindowsErrorCode.SECRET_NOT_FOUND: "the secret is not provisioned on the pool",
    WindowsErrorCode.SECRET_TARGET_NOT_MASKED: (
        "a secret is typed only into a masked password control; nothing was typed"
    ),
    WindowsErrorCode.WINDOW_NOT_FOREGROUND: "focus the target window (windows_focus) and retry",
    WindowsErrorCode.INPUT_BLOCKED: (
        "input refused by a higher-integrity window or a locked desktop"
    ),
    WindowsErrorCode.POOL_UNAVAILABLE: "the Windows pool did not answer; retry",
    WindowsErrorCode.POOL_ERROR: "the Windows pool failed; retry",
    WindowsErrorCode.UNAUTHENTICATED: "the Windows pool refused agentrt's credential",
    WindowsErrorCode.FORBIDDEN: "the Windows pool forbade agentrt's credential",
    WindowsErrorCode.NOT_FOUND: (
        "the pool no longer knows the session: the lease is abandoned, the machine's state "
        "is lost, the next call leases a new one"
    ),
    WindowsErrorCode.CONFLICT: "conflict (a task already runs: its taskHandle is in poolDetail)",
    WindowsErrorCode.RATE_LIMITED: "the Windows pool is rate limiting; retry later",
    WindowsErrorCode.BAD_REQUEST: "the Windows pool refused the call",
}

# On a call that carried a secret, poolDetail keeps these keys of the pool's body only.
SECRET_PROJECTION_KEYS = ("error", "reason", "state", "secretRef", "host")


class WindowsErrorData(BaseModel):
    httpStatus: int | None
    retryable: bool
    poolDetail: Any = None
    sessionEvicted: bool | None = None
    # A refusal of agentrt's own, in a word (`holder_settled`, `unknown_holder`); the
    # pool's reasons stay in its poolDetail.
    reason: str | None = None


class WindowsError(WireError):
    """The one error of a Windows verb, under kind `windows_error`."""

    kind: Literal["windows_error"] = "windows_error"
    code: WindowsErrorCode
    message: str
    data: WindowsErrorData

    @classmethod
    def agentrt(
        cls, code: WindowsErrorCode, message: str | None = None, *, reason: str | None = None
    ) -> WindowsError:
        """An error agentrt finds itself, the pool never asked (FEATURE_DISABLED,
        VALIDATION_ERROR)."""
        return cls(
            code=code,
            message=message or _MESSAGES[code],
            data=WindowsErrorData(httpStatus=None, retryable=code in _RETRYABLE, reason=reason),
        )

    @property
    def http_status(self) -> int:
        return _HTTP_STATUS[self.code]

    @property
    def session_evicted(self) -> bool:
        return bool(self.data.sessionEvicted)

    def body(self) -> dict[str, Any]:
        """`{code, message, data}`: the `error` of a REST answer, a tool's error."""
        return {
            "code": self.code.value,
            "message": self.message,
            "data": self.data.model_dump(exclude_none=True)
            | {"httpStatus": self.data.httpStatus, "poolDetail": self.data.poolDetail},
        }

    def response_body(self) -> dict[str, Any]:
        return {"error": self.body()}

    @property
    def transient(self) -> bool:
        """The pool's passing trouble: an idempotent call (renew, close) may be retried
        by Temporal. Never a verb's (a click retried clicks twice)."""
        return self.code in _TRANSIENT

    def application_error(
        self, message: str | None = None, *, retryable: bool | None = None
    ) -> ApplicationError:
        """The exception to raise; non-retryable for Temporal unless `retryable` (an
        idempotent pool call) and the failure is transient."""
        return super().application_error(
            message or f"{self.code.value}: {self.message}",
            retryable=bool(retryable) and self.transient,
        )


def project_secret_detail(body: Any, host: str | None) -> dict[str, Any]:
    """The pool's body on a call that carried a secret: {error, reason, state, secretRef,
    host} only. `error` is the pool's code (never its message); free text is dropped."""
    source: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
    projected: dict[str, Any] = {}
    for key in SECRET_PROJECTION_KEYS:
        value = source.get(key)
        if key == "error" and value is None:
            value = source.get("code")
        if key == "host" and value is None:
            value = host
        # Only scalars: a nested object could carry the guest's text.
        projected[key] = value if isinstance(value, str | int | float | bool) else None
    return projected


def _code_of(status: int, body: Any) -> WindowsErrorCode:
    if isinstance(body, Mapping):
        named = body.get("code")
        if isinstance(named, str) and named in _DESKTOP_CODE_NAMES:
            return WindowsErrorCode(named)
    if status >= 500:
        return WindowsErrorCode.POOL_ERROR
    if status == 401:
        return WindowsErrorCode.UNAUTHENTICATED
    if status == 403:
        return WindowsErrorCode.FORBIDDEN
    if status == 404:
        return WindowsErrorCode.NOT_FOUND
    if status == 409:
        return WindowsErrorCode.CONFLICT
    if status == 429:
        return WindowsErrorCode.RATE_LIMITED
    return WindowsErrorCode.BAD_REQUEST


def map_pool_error(
    status: int | None, body: Any, *, carried_secret: bool, host: str | None = None
) -> WindowsError:
    """The error of a pool answer that is not a success (`status` None: no HTTP answer).

    A desktop code in the body passes through whatever the status (a WINDOW_NOT_FOUND
    404 is not an eviction); otherwise the status maps to the generic vocabulary.
    `carried_secret`: the call typed a secretRef, so poolDetail is projected and the
    message is agentrt's own, never the guest's text.
    """
    if status is None:
        code = WindowsErrorCode.POOL_UNAVAILABLE
    else:
        code = _code_of(status, body)
    detail: Any = project_secret_detail(body, host) if carried_secret else body
    message = _MESSAGES[code]
    # The reason is a short token of the pool's (session_0, capture_probe_failed, ...),
    # kept by the secret projection too.
    reason = detail.get("reason") if isinstance(detail, Mapping) else None
    if isinstance(reason, str) and reason:
        message = f"{message} ({reason})"
    return WindowsError(
        code=code,
        message=message,
        data=WindowsErrorData(
            httpStatus=status,
            retryable=code in _RETRYABLE,
            poolDetail=detail,
            sessionEvicted=True if code is WindowsErrorCode.NOT_FOUND else None,
        ),
    )
