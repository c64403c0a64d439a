"""The agent-tools page's browser checks, the last link of the security chain for the
agent-tools surface (spec: Host exact, a local browser session; mutations: Origin, CSRF
and the rate guard).

A *browser session* is the agent-tools page's cookie (runtime/agent_tools/browser.py),
not a daemon session (`/session/...`, spec 002): the two never share a name in code.
"""

from __future__ import annotations

import asyncio
import math
from typing import Annotated

from fastapi import Depends, Request

from api.errors import ApiError
from api.security.ratelimit import RateLimiter
from runtime.agent_tools.browser import (
    COOKIE_NAME,
    BrowserSession,
    csrf_matches,
    find_browser_session,
)

# Mutations per minute and browser session: generous for a person, a wall for a runaway script.
MUTATIONS_PER_MINUTE = 60


def _forbidden(code: str, message: str) -> ApiError:
    return ApiError(403, {"error": message, "code": code})


async def browser_session(request: Request) -> BrowserSession:
    """Every agent-tools route needs the local session cookie."""
    cookie = request.cookies.get(COOKIE_NAME)
    browser = (
        await asyncio.to_thread(find_browser_session, request.app.state.store, cookie)
        if cookie
        else None
    )
    if browser is None:
        raise _forbidden(
            "session_required",
            "A local session is required: GET /api/v1/agent-tools/session first",
        )
    return browser


def _own_origins(request: Request) -> set[str]:
    host = request.headers.get("host", "")
    return {f"http://{host}".lower(), f"https://{host}".lower()}


async def mutation_guard(
    request: Request, browser: Annotated[BrowserSession, Depends(browser_session)]
) -> BrowserSession:
    """Mutations also need our own Origin, the session's CSRF token and the rate guard."""
    # The same-origin strip removed a loopback Origin naming us; it kept the value.
    origin = request.scope.get("state", {}).get("same_origin") or request.headers.get("origin")
    if not origin:
        raise _forbidden("origin_required", "Mutations must carry the Origin header")
    if origin.lower() not in _own_origins(request):
        raise _forbidden("origin_mismatch", "Origin does not match this server's origin")
    if not csrf_matches(browser, request.headers.get("x-csrf-token")):
        raise _forbidden("csrf_invalid", "Missing or invalid X-CSRF-Token header")
    limiter: RateLimiter = request.app.state.agent_tools_limiter
    wait = limiter.check(browser.cookie[:16], "mutation")
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
    return browser


BrowserDep = Annotated[BrowserSession, Depends(browser_session)]
BrowserMutationDep = Annotated[BrowserSession, Depends(mutation_guard)]
