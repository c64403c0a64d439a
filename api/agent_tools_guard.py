"""The agent-tools surface's own checks (spec: Host exact, local session; mutations:
Origin, CSRF and the rate guard), on top of the global security chain."""

from __future__ import annotations

import asyncio
import math
from typing import Annotated

from fastapi import Depends, Request

from api.errors import ApiError
from api.security.ratelimit import RateLimiter
from runtime.agent_tools.sessions import COOKIE_NAME, BrowserSession, csrf_matches, find_session

# Mutations per minute and session: generous for a person, a wall for a runaway script.
MUTATIONS_PER_MINUTE = 60


def _forbidden(code: str, message: str) -> ApiError:
    return ApiError(403, {"error": message, "code": code})


async def local_session(request: Request) -> BrowserSession:
    """Every agent-tools route needs the local session cookie."""
    cookie = request.cookies.get(COOKIE_NAME)
    session = (
        await asyncio.to_thread(find_session, request.app.state.store, cookie) if cookie else None
    )
    if session is None:
        raise _forbidden(
            "session_required",
            "A local session is required: GET /api/v1/agent-tools/session first",
        )
    return session


def _own_origins(request: Request) -> set[str]:
    host = request.headers.get("host", "")
    return {f"http://{host}".lower(), f"https://{host}".lower()}


async def mutation_guard(
    request: Request, session: Annotated[BrowserSession, Depends(local_session)]
) -> BrowserSession:
    """Mutations also need our own Origin, the session's CSRF token and the rate guard."""
    # The same-origin strip removed a loopback Origin naming us; it kept the value.
    origin = request.scope.get("state", {}).get("same_origin") or request.headers.get("origin")
    if not origin:
        raise _forbidden("origin_required", "Mutations must carry the Origin header")
    if origin.lower() not in _own_origins(request):
        raise _forbidden("origin_mismatch", "Origin does not match this server's origin")
    if not csrf_matches(session, request.headers.get("x-csrf-token")):
        raise _forbidden("csrf_invalid", "Missing or invalid X-CSRF-Token header")
    limiter: RateLimiter = request.app.state.agent_tools_limiter
    wait = limiter.check(session.cookie[:16], "mutation")
    if wait:
        raise ApiError(
            429,
            {
                "error": "Rate limit exceeded for agent-tools mutations",
                "code": "rate_limit_exceeded",
                "tier": "mutation",
                "limit": MUTATIONS_PER_MINUTE,
                "retryAfterMs": math.ceil(wait * 1000),
            },
            {"Retry-After": str(math.ceil(wait))},
        )
    return session


SessionDep = Annotated[BrowserSession, Depends(local_session)]
MutationDep = Annotated[BrowserSession, Depends(mutation_guard)]
