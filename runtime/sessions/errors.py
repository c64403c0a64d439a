"""Refusals of a daemon session and their wire bodies (spec session-daemon-http-protocol).

SessionWorkflow raises some (`WireError.application_error()`); the routes answer them
through `api.errors.workflow_error`, or build them directly when they find the same
condition themselves (a session missing from the registry). The others are the routes'
own (`ApiError.of`): the daemon's session cap, a foreign workspace, a prompt too large,
a restore in progress, a model switch refused. A body that is not the right shape is
the kernel's `InvalidRequest` (runtime/failures.py), with the route's code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from runtime.failures import WireError

if TYPE_CHECKING:
    pass

RETRY_AFTER_SECONDS = "5"


class SessionNotFound(WireError):
    """No such session, or it is closed (a prompt sent while it closes): 404."""

    kind: Literal["session_not_found"] = "session_not_found"
    session_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'No session with id "{self.session_id}"',
            "code": "session_not_found",
            "sessionId": self.session_id,
        }


class PromptQueueFull(WireError):
    """The session's FIFO holds its limit of prompts (the active one included): 503, so
    that a client retries after `Retry-After`, as for any capacity limit of the daemon."""

    kind: Literal["prompt_queue_full"] = "prompt_queue_full"
    session_id: str
    limit: int

    @property
    def http_status(self) -> int:
        return 503

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"Prompt queue is full ({self.limit} prompts, the active one included)",
            "code": "prompt_queue_full",
            "limit": self.limit,
            "pendingCount": self.limit,
            "sessionId": self.session_id,
        }

    def response_headers(self) -> Mapping[str, str]:
        return {"Retry-After": RETRY_AFTER_SECONDS}


class SessionLimitExceeded(WireError):
    """A new or revived session while the daemon holds `--max-sessions` live ones: 503,
    retry after `Retry-After`."""

    kind: Literal["session_limit_exceeded"] = "session_limit_exceeded"
    limit: int

    @property
    def http_status(self) -> int:
        return 503

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"Session limit reached ({self.limit})",
            "code": self.kind_name,
            "limit": self.limit,
        }

    def response_headers(self) -> Mapping[str, str]:
        return {"Retry-After": RETRY_AFTER_SECONDS}


class WorkspaceMismatch(WireError):
    """A `cwd` naming another workspace than the one the daemon is bound to: 400."""

    kind: Literal["workspace_mismatch"] = "workspace_mismatch"
    bound: str
    requested: str

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Workspace mismatch: daemon is bound to "{self.bound}" but request asked '
            f'for "{self.requested}". Omit `cwd` or use a daemon bound to it.',
            "code": self.kind_name,
            "boundWorkspace": self.bound,
            "requestedWorkspace": self.requested,
        }


class PromptTooLarge(WireError):
    """A prompt whose text is over `--max-prompt-bytes` (UTF-8): 413."""

    kind: Literal["prompt_too_large"] = "prompt_too_large"
    size: int
    limit: int

    @property
    def http_status(self) -> int:
        return 413

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f"Prompt text is {self.size} bytes; this daemon accepts at most "
            f"{self.limit} (--max-prompt-bytes)",
            "code": self.kind_name,
            "limit": self.limit,
            "size": self.size,
        }


class RestoreInProgress(WireError):
    """`session/load` while a `session/resume` of the same session runs, or the other way
    round (the same action joins the one in flight): 409, retry after `Retry-After`."""

    kind: Literal["restore_in_progress"] = "restore_in_progress"
    session_id: str
    active_action: str
    requested_action: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Session "{self.session_id}" is already being restored via session/'
            f"{self.active_action}; retry session/{self.requested_action} after it completes",
            "code": self.kind_name,
            "sessionId": self.session_id,
            "activeAction": self.active_action,
            "requestedAction": self.requested_action,
        }

    def response_headers(self) -> Mapping[str, str]:
        return {"Retry-After": RETRY_AFTER_SECONDS}


class ModelSwitchFailed(WireError):
    """The session's workflow refused to switch to `model_id` (its `reason`, when it gave
    one): 400."""

    kind: Literal["model_switch_failed"] = "model_switch_failed"
    model_id: str
    reason: str | None = None

    @property
    def http_status(self) -> int:
        return 400

    def response_body(self) -> dict[str, Any]:
        return {
            "error": self.reason or "model switch failed",
            "code": self.kind_name,
            "modelId": self.model_id,
        }
