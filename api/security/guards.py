"""Per-route guards used as FastAPI dependencies."""

from __future__ import annotations

from fastapi import Request

from api.errors import ApiError

TOKEN_REQUIRED = {
    "code": "token_required",
    "error": "This route mutates state and requires a configured bearer token: "
    "restart the daemon with --token, AGENTRT_TOKEN or QWEN_SERVER_TOKEN "
    "(e.g. AGENTRT_TOKEN=secret make run)",
}


def require_configured_token(request: Request) -> None:
    """The strict mutation gate: refuse when the daemon runs without any token.

    With a token configured the bearer middleware has already authenticated the
    caller, so only the unconfigured case is left to refuse here.
    """
    if not request.app.state.settings.token_configured:
        raise ApiError(401, TOKEN_REQUIRED)
