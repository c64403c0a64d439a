"""Refusals of a daemon session and their wire bodies (spec session-daemon-http-protocol).

SessionWorkflow raises them (`WireError.application_error()`); the routes answer them
through `api.errors.workflow_error`, or build them directly when they find the same
condition themselves (a session missing from the registry).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from runtime.failures import WireError

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
