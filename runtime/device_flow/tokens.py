"""RFC 8628 §3.5: what a token endpoint's answer means. Pure, so the table is tested alone."""

from __future__ import annotations

from typing import Any, Literal

Meaning = Literal["authorized", "pending", "slow_down", "failed", "retry"]

# §3.5 error codes that end the flow, as the spec's errorKind.
TERMINAL_ERRORS = {
    "access_denied": "access_denied",
    "expired_token": "expired_token",
    "invalid_grant": "invalid_grant",
}


def token_response_meaning(status: int, body: Any) -> tuple[Meaning, str | None]:
    """(meaning, errorKind) of one token response.

    200 with an `access_token` is an approval. `authorization_pending` keeps polling,
    `slow_down` (the RFC's 400, or the 429 some IdPs send) adds 5 s to the interval, the
    RFC's terminal errors end the flow with their name. A 5xx is retried; anything else
    is `upstream_error`.
    """
    error = body.get("error") if isinstance(body, dict) else None
    if status == 200 and isinstance(body, dict) and isinstance(body.get("access_token"), str):
        return "authorized", None
    if status == 429 or error == "slow_down":
        return "slow_down", None
    if error == "authorization_pending":
        return "pending", None
    if isinstance(error, str) and error in TERMINAL_ERRORS:
        return "failed", TERMINAL_ERRORS[error]
    if status >= 500:
        return "retry", None
    return "failed", "upstream_error"
