"""The agent-tools page's browser checks, the last link of the security chain for the
agent-tools surface (spec: Host exact, a local browser session; mutations: Origin, CSRF
and the rate guard).

A *browser session* is the agent-tools page's cookie (runtime/agent_tools/browser.py),
not a daemon session (`/session/...`, spec 002): the two never share a name in code.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, Request

from api.errors import ApiError
from api.security.ratelimit import RateLimiter
from runtime.agent_tools.browser import (
    COOKIE_NAME,
    BrowserCheckFailed,
    BrowserSession,
    MutationRateLimited,
    csrf_matches,
    find_browser_session,
)

# Mutations per minute and browser session: generous for a person, a wall for a runaway script.
MUTATIONS_PER_MINUTE = 60


async def browser_session(request: Request) -> BrowserSession:
    """Every agent-tools route needs the local session cookie."""
    cookie = request.cookies.get(COOKIE_NAME)
    browser = (
        await asyncio.to_thread(find_browser_session, request.app.state.store, cookie)
        if cookie
        else None
    )
    if browser is None:
        raise ApiError.of(BrowserCheckFailed(check="session_required"))
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
        raise ApiError.of(BrowserCheckFailed(check="origin_required"))
    if origin.lower() not in _own_origins(request):
        raise ApiError.of(BrowserCheckFailed(check="origin_mismatch"))
    if not csrf_matches(browser, request.headers.get("x-csrf-token")):
        raise ApiError.of(BrowserCheckFailed(check="csrf_invalid"))
    limiter: RateLimiter = request.app.state.agent_tools_limiter
    wait = limiter.check(browser.cookie[:16], "mutation")
    if wait:
        raise ApiError.of(MutationRateLimited.after(wait, MUTATIONS_PER_MINUTE))
    return browser


BrowserDep = Annotated[BrowserSession, Depends(browser_session)]
BrowserMutationDep = Annotated[BrowserSession, Depends(mutation_guard)]
