"""Bearer authentication: constant-time, one uniform 401, before the body is read."""

from __future__ import annotations

import hashlib
import hmac

from starlette.types import ASGIApp, Receive, Scope, Send

from api.security.asgi import header, is_http, send_json

UNAUTHORIZED = {"error": "Unauthorized"}


def bearer_matches(authorization: str | None, token: str) -> bool:
    """`Authorization: Bearer <token>`; the scheme is case-blind, the token is not."""
    if not authorization or len(authorization) < 7 or authorization[:7].lower() != "bearer ":
        return False
    presented = authorization[7:].strip()
    if not presented:
        return False
    # Compare digests so the comparison time depends on neither content nor length.
    return hmac.compare_digest(
        hashlib.sha256(presented.encode()).digest(), hashlib.sha256(token.encode()).digest()
    )


# Static page assets carry no data; like the reference daemon's /demo page they load
# without the bearer on loopback binds, and the page then sends the token the user enters.
STATIC_PAGE_PATHS = frozenset(
    {
        "/",
        "/ui/agent-tools",
        "/ui/agent-tools.js",
        "/ui/agent-tools.svg",
        "/ui/agents",
        "/ui/agents.js",
    }
)


class BearerAuth:
    """Every route needs the bearer when a token is configured, except on loopback binds
    `/health` (for in-pod probes) and the static page assets, unless `--require-auth`.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, health_exempt: bool) -> None:
        self.app = app
        self.token = token or None
        self.health_exempt = health_exempt

    def _exempt(self, scope: Scope) -> bool:
        if not self.health_exempt:
            return False
        path = scope["path"]
        return path == "/health" or (
            scope["method"] in ("GET", "HEAD") and path in STATIC_PAGE_PATHS
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or not is_http(scope) or self._exempt(scope):
            await self.app(scope, receive, send)
            return
        if not bearer_matches(header(scope, b"authorization"), self.token):
            await send_json(send, 401, UNAUTHORIZED)
            return
        await self.app(scope, receive, send)
