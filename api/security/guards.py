"""Per-route guards used as FastAPI dependencies."""

from __future__ import annotations

from fastapi import Request

from api.errors import ApiError
from runtime.failures import TokenRequired


def require_configured_token(request: Request) -> None:
    """The strict mutation gate: refuse when the daemon runs without any token.

    With a token configured the bearer middleware has already authenticated the
    caller, so only the unconfigured case is left to refuse here.
    """
    if not request.app.state.settings.token_configured:
        raise ApiError.of(TokenRequired())
