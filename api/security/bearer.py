"""Bearer authentication: constant-time, one uniform 401, before the body is read.

Failed checks are counted per network address (`peer_key`: the peer IP, an IPv6 peer by
its /64, every loopback address as one) in a token bucket of `auth_failures_per_minute`
(10 by default), and across all addresses in one of ten times that: past either, every
request that needs the bearer (from that address, or from anywhere) is answered 429
`rate_limit_exceeded` with `Retry-After`, the right token included and before it is
compared, so an answer never tells a guess from the token; the buckets refill
continuously (one more failure every 6 s at 10 a minute). The global bucket is what
rotating addresses (IPv6 /64s, or more of them than the limiter keeps buckets for)
cannot evade. The client id header is not a key here: a caller mints those at will. So
on a loopback bind every local client shares one key, and a local user who keeps
sending wrong guesses keeps the local clients waiting for as long as they keep at it: an
availability trade-off, taken over a token that could otherwise be guessed at line speed.

Only a request that presents a bearer and gets it wrong is a failure: one with no
`Authorization` header (what a cross-site `<img>` or form sends: a browser attaches the
header cross-site only after a CORS preflight, which the CORS wall refuses) is answered
401 but counts nothing, so a web page cannot lock the operator out.

Who the request is goes into `scope["state"]["identity"]` (runtime.tenants.tokens.Identity):
the administrator for the deployment token; a bearer that is not the deployment token
but a live tenant token (looked up by its SHA-256 in the store, on every request: a
revoke is a 401 at the next one) is that token's tenant, name and role, and is then held
to api/security/roles.py (403 `forbidden_tenant` / `forbidden_role`). A revoked or
unknown tenant token is a wrong bearer like any other: the same 401, counted. With no
token configured nothing is checked and tenant tokens mean nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re

from sqlalchemy.exc import SQLAlchemyError
from starlette.types import ASGIApp, Receive, Scope, Send

from api.security.asgi import header, is_http, send_json
from api.security.ratelimit import RateLimiter, peer_key, send_rate_limited
from api.security.roles import STATE_KEY, refusal
from runtime.store import Store
from runtime.tenants.tokens import ADMIN, Identity, verify

log = logging.getLogger(__name__)

UNAUTHORIZED = {"error": "Unauthorized"}
# A tenant token could not be looked up (the store is down): not the caller's fault.
STORE_UNAVAILABLE = {"error": "The token store is not reachable", "code": "store_unavailable"}
AUTH_TIER = "auth"
# All addresses together, in one bucket of GLOBAL_FACTOR times the per-address bound.
AUTH_GLOBAL_TIER = "auth-global"
GLOBAL_FACTOR = 10
_GLOBAL_KEY = "all"  # never a peer_key (those are "ip:..." or "loopback")


def auth_failure_limiter(per_minute: int) -> RateLimiter:
    """The failed-check limiter: `per_minute` per address, ten times that in all."""
    return RateLimiter({AUTH_TIER: per_minute, AUTH_GLOBAL_TIER: per_minute * GLOBAL_FACTOR})


def presents_bearer(authorization: str | None) -> bool:
    """Whether the request offers a bearer at all (a guess), right or wrong."""
    return bool(authorization) and (authorization or "")[:7].lower() == "bearer "


def presented_bearer(authorization: str | None) -> str | None:
    """The token of `Authorization: Bearer <token>` (the scheme case-blind), or None."""
    if not authorization or len(authorization) < 7 or authorization[:7].lower() != "bearer ":
        return None
    return authorization[7:].strip() or None


def bearer_matches(authorization: str | None, token: str) -> bool:
    """`Authorization: Bearer <token>`; the scheme is case-blind, the token is not."""
    presented = presented_bearer(authorization)
    if presented is None:
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


# The delivery URL of a standing agent's signed webhook (api/standing_agents/webhooks.py).
WEBHOOK_DELIVERY = re.compile(r"^/api/v1/webhooks/wh_[0-9a-f]{24}$")


class BearerAuth:
    """Every route needs the bearer when a token is configured, except on loopback binds
    `/health` (for in-pod probes) and the static page assets, unless `--require-auth`.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        health_exempt: bool,
        failures: RateLimiter | None = None,
    ) -> None:
        self.app = app
        self.token = token or None
        self.health_exempt = health_exempt
        self.failures = failures  # a limiter with the AUTH_TIER tier

    def _exempt(self, scope: Scope) -> bool:
        if scope["method"] == "POST" and WEBHOOK_DELIVERY.match(scope["path"]):
            # A webhook delivery: its sender holds no API token; the route verifies its
            # Standard Webhooks signature instead (runtime/standing_agents/webhooks.py).
            return True
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
        key = peer_key(scope)
        if self.failures is not None:
            for client, tier, error in self._buckets(key):
                wait = self.failures.blocked(client, tier)
                if wait:
                    await send_rate_limited(
                        send,
                        error=error,
                        tier=tier,
                        limit=self.failures.limits[tier],
                        wait=wait,
                    )
                    return
        authorization = header(scope, b"authorization")
        try:
            identity = (
                ADMIN
                if bearer_matches(authorization, self.token)
                else await self._tenant_identity(scope, authorization)
            )
        except SQLAlchemyError:
            log.warning("tenant token lookup failed: the store did not answer", exc_info=True)
            await send_json(send, 503, STORE_UNAVAILABLE, [("Retry-After", "5")])
            return
        if identity is None:
            # No bearer presented (a cross-site page's request) is no guess: not counted.
            if self.failures is not None and presents_bearer(authorization):
                for client, tier, _ in self._buckets(key):
                    self.failures.check(client, tier)
            await send_json(send, 401, UNAUTHORIZED)
            return
        refused = refusal(identity, scope["path"])
        if refused is not None:
            await send_json(send, refused.http_status, refused.response_body())
            return
        scope.setdefault("state", {})[STATE_KEY] = identity
        await self.app(scope, receive, send)

    @staticmethod
    async def _tenant_identity(scope: Scope, authorization: str | None) -> Identity | None:
        """The live tenant token the bearer is, looked up in the app's store (one query
        per request, so a revoke holds at once); None for anything else."""
        presented = presented_bearer(authorization)
        app = scope.get("app")
        store = getattr(getattr(app, "state", None), "store", None)
        if presented is None or not isinstance(store, Store):
            return None
        return await asyncio.to_thread(verify, store, presented)

    def _buckets(self, key: str) -> list[tuple[str, str, str]]:
        """(client, tier, refusal) of the buckets a failure from `key` draws on: its
        address's, then the global one (last, so the LRU never evicts it)."""
        assert self.failures is not None
        buckets = [(key, AUTH_TIER, "Too many failed bearer checks from this address")]
        if AUTH_GLOBAL_TIER in self.failures.limits:
            buckets.append(
                (_GLOBAL_KEY, AUTH_GLOBAL_TIER, "Too many failed bearer checks from all addresses")
            )
        return buckets
